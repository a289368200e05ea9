package dev.hearth.driver;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetPluginInfoResponse;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability.AccessMode;
import dev.hearth.csi.v1.VolumeContentSource;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.storage.Quantity;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * Walks a filesystem volume and a raw block volume through their whole life against a running
 * driver, as the kubelet and the external-provisioner would, printing each step and its time.
 */
final class Demo {

    private static final long FS_SIZE = 256L << 20;
    private static final long BLOCK_SIZE = 64L << 20;
    /** xfs wants at least 300 MB. */
    private static final long XFS_SIZE = 320L << 20;

    private final IdentityGrpc.IdentityBlockingStub identity;
    private final ControllerGrpc.ControllerBlockingStub controller;
    private final NodeGrpc.NodeBlockingStub node;
    private final Path workDir;
    private final long neededBytes;
    private final PrintStream out;
    private int step;

    /** {@code neededBytes}: what the volumes below take at once, which the pool must have room for. */
    Demo(ManagedChannel channel, Path workDir, long neededBytes, PrintStream out) {
        this.identity = IdentityGrpc.newBlockingStub(channel);
        this.controller = ControllerGrpc.newBlockingStub(channel);
        this.node = NodeGrpc.newBlockingStub(channel);
        this.workDir = workDir;
        this.neededBytes = neededBytes;
        this.out = out;
    }

    /** A step that failed, by number and title, with why: what the demo tells its user in one line. */
    static final class StepFailure extends Exception {
        StepFailure(int step, String title, Throwable cause) {
            super("step " + step + ", " + title + ": " + reason(cause), cause);
        }

        private static String reason(Throwable cause) {
            if (cause instanceof StatusRuntimeException status) {
                return status.getStatus().getCode() + ": " + status.getStatus().getDescription();
            }
            return cause.getMessage() == null ? cause.toString() : cause.getMessage();
        }
    }

    void run() throws Exception {
        GetPluginInfoResponse info = step("GetPluginInfo", () -> identity.getPluginInfo(
                GetPluginInfoRequest.getDefaultInstance()));
        out.printf("      driver %s %s%n", info.getName(), info.getVendorVersion());
        long available = step("GetCapacity", () -> controller.getCapacity(GetCapacityRequest.getDefaultInstance())
                .getAvailableCapacity());
        out.printf("      %s available in the pool%n", Quantity.format(available));
        if (available < neededBytes) {
            throw new StepFailure(step, "GetCapacity", new IllegalStateException("the pool has only "
                    + Quantity.format(available) + " available (its capacity, or the free space of the filesystem of "
                    + workDir + " less the pool's reserve); the demo's volumes need " + Quantity.format(neededBytes)));
        }
        filesystemVolume();
        blockVolume();
        dataServicesVolume();
    }

    private void filesystemVolume() throws Exception {
        out.println("\n  A filesystem volume (ext4):");
        VolumeCapability capability = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
                .setAccessMode(AccessMode.newBuilder().setMode(AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
        String id = create("demo-filesystem", FS_SIZE, capability);
        Path staging = Files.createDirectories(workDir.resolve("staging-fs"));
        Path target = workDir.resolve("pod-fs");
        step("NodeStageVolume: attach as a loop device, mkfs.ext4 (blank device), mount", () -> node.nodeStageVolume(
                NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                        .setVolumeCapability(capability).build()));
        step("NodePublishVolume: bind-mount into the pod's directory", () -> node.nodePublishVolume(
                NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                        .setTargetPath(target.toString()).setVolumeCapability(capability).build()));
        String text = "hello from hearth, " + java.time.Instant.now() + "\n";
        String read = step("write hello.txt in the pod's directory, sync, read it back", () -> {
            Path file = target.resolve("hello.txt");
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                channel.write(ByteBuffer.wrap(text.getBytes()));
                channel.force(true);
            }
            return Files.readString(file);
        });
        if (!read.equals(text)) {
            throw new IllegalStateException("read back '" + read + "' instead of '" + text + "'");
        }
        out.printf("      read back: %s", read);
        teardown(id, staging, target);
    }

    /**
     * An xfs volume this time: its clone must get a fresh filesystem UUID to mount beside it, and
     * xfs grows online with the privileges any node plugin has (ext4's online resize also needs
     * CAP_SYS_RESOURCE).
     */
    private void dataServicesVolume() throws Exception {
        out.println("\n  Snapshot, restore, clone and online expansion (an xfs volume):");
        VolumeCapability capability = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("xfs"))
                .setAccessMode(AccessMode.newBuilder().setMode(AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
        String id = create("demo-xfs", XFS_SIZE, capability);
        Path staging = Files.createDirectories(workDir.resolve("staging-xfs"));
        Path target = workDir.resolve("pod-xfs");
        stageAndPublish(id, capability, staging, target, "NodeStage+NodePublish: mkfs.xfs, mount, bind");
        step("write hello.txt", () -> {
            Files.writeString(target.resolve("hello.txt"), "in the snapshot\n");
            return null;
        });
        dataServices(id, capability, target);
        teardown(id, staging, target);
    }

    /** Snapshot, restore into a larger volume, clone, and grow the original while it is mounted. */
    private void dataServices(String id, VolumeCapability capability, Path target) throws Exception {
        out.println("\n  Snapshot, restore, clone and online expansion of that volume:");
        String snapshot = step("CreateSnapshot demo-snapshot (filesystem frozen while it is taken)", () ->
                controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName("demo-snapshot")
                        .setSourceVolumeId(id).build()).getSnapshot().getSnapshotId());
        out.printf("      snapshot id %s%n", snapshot);
        step("write after-snapshot.txt in the original", () -> {
            Files.writeString(target.resolve("after-snapshot.txt"), "not in the snapshot\n");
            return null;
        });
        String restored = create("demo-restored", 2 * XFS_SIZE, capability, VolumeContentSource.newBuilder()
                .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshot)).build());
        Path restoredStaging = Files.createDirectories(workDir.resolve("staging-restored"));
        Path restoredTarget = workDir.resolve("pod-restored");
        stageAndPublish(restored, capability, restoredStaging, restoredTarget,
                "NodeStage+NodePublish the restored volume (its xfs grown to fill it)");
        boolean hasHello = Files.exists(restoredTarget.resolve("hello.txt"));
        boolean hasAfter = Files.exists(restoredTarget.resolve("after-snapshot.txt"));
        out.printf(Locale.ROOT, "      restored volume: hello.txt %s, after-snapshot.txt %s, filesystem %s%n",
                hasHello ? "present" : "MISSING", hasAfter ? "PRESENT" : "absent",
                Quantity.format(Files.getFileStore(restoredTarget).getTotalSpace()));
        if (!hasHello || hasAfter) {
            throw new IllegalStateException("the restored volume does not hold the snapshot's content");
        }
        String clone = create("demo-clone", XFS_SIZE, capability, VolumeContentSource.newBuilder()
                .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(id)).build());
        Path cloneStaging = Files.createDirectories(workDir.resolve("staging-clone"));
        Path cloneTarget = workDir.resolve("pod-clone");
        stageAndPublish(clone, capability, cloneStaging, cloneTarget,
                "NodeStage+NodePublish the clone, mounted beside its source (fresh xfs UUID)");
        out.printf("      clone holds after-snapshot.txt: %s%n",
                Files.exists(cloneTarget.resolve("after-snapshot.txt")) ? "yes" : "NO");
        long before = Files.getFileStore(target).getTotalSpace();
        long grown = step("NodeExpandVolume the mounted original to 640 MiB (file, loop device, xfs_growfs)", () ->
                node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id)
                        .setVolumePath(target.toString())
                        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(2 * XFS_SIZE)).build())
                        .getCapacityBytes());
        out.printf("      volume %s; the mounted filesystem grew from %s to %s without unmounting%n",
                Quantity.format(grown), Quantity.format(before),
                Quantity.format(Files.getFileStore(target).getTotalSpace()));
        teardown(clone, cloneStaging, cloneTarget);
        teardown(restored, restoredStaging, restoredTarget);
        step("DeleteSnapshot", () -> controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder()
                .setSnapshotId(snapshot).build()));
    }

    private void stageAndPublish(String id, VolumeCapability capability, Path staging, Path target, String title)
            throws Exception {
        step(title, () -> {
            node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                    .setStagingTargetPath(staging.toString()).setVolumeCapability(capability).build());
            return node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                    .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                    .setVolumeCapability(capability).build());
        });
    }

    private void blockVolume() throws Exception {
        out.println("\n  A raw block volume:");
        VolumeCapability capability = VolumeCapability.newBuilder()
                .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                .setAccessMode(AccessMode.newBuilder().setMode(AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
        String id = create("demo-block", BLOCK_SIZE, capability);
        Path staging = Files.createDirectories(workDir.resolve("staging-block"));
        Path target = workDir.resolve("pod-block").resolve("device");
        step("NodeStageVolume: attach as a loop device", () -> node.nodeStageVolume(
                NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                        .setVolumeCapability(capability).build()));
        step("NodePublishVolume: bind the device node onto the pod's device file", () -> node.nodePublishVolume(
                NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                        .setTargetPath(target.toString()).setVolumeCapability(capability).build()));
        byte[] pattern = new byte[1 << 20];
        for (int i = 0; i < pattern.length; i++) {
            pattern[i] = (byte) (i * 31 + 7);
        }
        long offset = 8L << 20;
        step("write 1 MiB at offset 8 MiB through the device, sync, read it back", () -> {
            try (FileChannel device = FileChannel.open(target, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                device.write(ByteBuffer.wrap(pattern), offset);
                device.force(true);
                ByteBuffer back = ByteBuffer.allocate(pattern.length);
                while (back.hasRemaining() && device.read(back, offset + back.position()) > 0) {
                    // read until the buffer is full
                }
                if (!Arrays.equals(back.array(), pattern)) {
                    throw new IllegalStateException("the bytes read back differ from those written");
                }
            }
            return null;
        });
        out.println("      1048576 bytes read back identical");
        teardown(id, staging, target);
    }

    private String create(String name, long size, VolumeCapability capability) throws Exception {
        return create(name, size, capability, null);
    }

    private String create(String name, long size, VolumeCapability capability, VolumeContentSource source)
            throws Exception {
        CreateVolumeRequest.Builder request = CreateVolumeRequest.newBuilder().setName(name)
                .addVolumeCapabilities(capability).setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(size));
        String from = "";
        if (source != null) {
            request.setVolumeContentSource(source);
            from = source.hasSnapshot() ? " from the snapshot" : " as a clone of the first volume";
        }
        String id = step("CreateVolume " + name + " (" + Quantity.format(size) + ")" + from, () ->
                controller.createVolume(request.build()).getVolume().getVolumeId());
        out.printf("      volume id %s%n", id);
        return id;
    }

    private void teardown(String id, Path staging, Path target) throws Exception {
        step("NodeUnpublishVolume", () -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId(id).setTargetPath(target.toString()).build()));
        step("NodeUnstageVolume: unmount, detach the loop device", () -> node.nodeUnstageVolume(
                NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString()).build()));
        step("DeleteVolume", () -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
    }

    private <T> T step(String title, Callable<T> action) throws StepFailure {
        long start = System.nanoTime();
        T result;
        try {
            result = action.call();
        } catch (Exception e) {
            throw new StepFailure(step + 1, title, e);
        }
        double millis = (System.nanoTime() - start) / 1e6;
        out.printf(Locale.ROOT, "  %2d. %-78s %8.1f ms%n", ++step, title, millis);
        return result;
    }
}
