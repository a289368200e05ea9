package dev.hearth.driver.bench;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.driver.Driver;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.ManagedChannel;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;

/**
 * How long CreateSnapshot takes for a 1 GiB ext4 volume holding 512 MiB of data, mounted (so the
 * snapshot is taken under FIFREEZE), by reflink (a pool on xfs) and by sparse copy (a pool on
 * ext4), measured through the real gRPC API as the csi-snapshotter would call it. Run by
 * test/bench/snapshot, which prepares the two pool directories.
 */
public final class SnapshotBenchmark {

    private static final long VOLUME = 1L << 30;
    private static final long DATA = 512L << 20;
    private static final int ROUNDS = 5;

    public static void main(String[] args) throws Exception {
        Path work = Path.of(args[0]);
        Path reflinkDir = Path.of(args[1]);
        Path copyDir = Path.of(args[2]);
        Endpoint endpoint = Endpoint.parse("unix://" + work.resolve("csi.sock"));
        Driver driver = Driver.start(new Driver.Settings(endpoint, "bench-node", "csi.hearth.dev", work.resolve("state"),
                List.of(new FilePoolConfig("reflink", reflinkDir, 8L << 30, Provisioning.THICK, true, VOLUME),
                        new FilePoolConfig("copy", copyDir, 8L << 30, Provisioning.THICK, true, VOLUME)),
                "copy", 100, Optional.empty(), FilesystemType.EXT4));
        ManagedChannel channel = Channels.channelTo(endpoint);
        try {
            for (String pool : List.of("reflink", "copy")) {
                measure(channel, work, pool);
            }
        } finally {
            channel.shutdownNow();
            driver.shutdown(Duration.ofSeconds(5));
        }
    }

    private static void measure(ManagedChannel channel, Path work, String pool) throws Exception {
        var controller = ControllerGrpc.newBlockingStub(channel);
        var node = NodeGrpc.newBlockingStub(channel);
        VolumeCapability capability = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
        String id = controller.createVolume(CreateVolumeRequest.newBuilder().setName("bench-" + pool)
                .addVolumeCapabilities(capability).putParameters("hearth.dev/pool", pool)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(VOLUME)).build()).getVolume().getVolumeId();
        Path staging = Files.createDirectories(work.resolve("staging-" + pool));
        Path target = work.resolve("target-" + pool);
        node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(capability).build());
        node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(capability).build());
        try {
            writeData(target.resolve("data.bin"));
            List<Double> millis = new ArrayList<>();
            for (int round = 0; round < ROUNDS; round++) {
                long start = System.nanoTime();
                String snapshot = controller.createSnapshot(CreateSnapshotRequest.newBuilder()
                        .setName("bench-" + pool + "-" + round).setSourceVolumeId(id).build())
                        .getSnapshot().getSnapshotId();
                millis.add((System.nanoTime() - start) / 1e6);
                controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snapshot).build());
            }
            Collections.sort(millis);
            double median = millis.get(ROUNDS / 2);
            System.out.printf(Locale.ROOT, "%-8s 1 GiB volume, 512 MiB data, mounted ext4 (frozen): CreateSnapshot "
                    + "median %.1f ms, min %.1f ms, max %.1f ms over %d rounds (%.0f MiB/s of data)%n", pool, median,
                    millis.getFirst(), millis.getLast(), ROUNDS, 512 / (median / 1000));
        } finally {
            node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                    .setTargetPath(target.toString()).build());
            node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                    .setStagingTargetPath(staging.toString()).build());
            controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
        }
    }

    /** 512 MiB of incompressible bytes, synced, so the snapshot has real data to carry. */
    private static void writeData(Path file) throws Exception {
        byte[] chunk = new byte[8 << 20];
        Random random = new Random(42);
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            for (long written = 0; written < DATA; written += chunk.length) {
                random.nextBytes(chunk);
                out.write(ByteBuffer.wrap(chunk));
            }
            out.force(true);
        }
    }
}
