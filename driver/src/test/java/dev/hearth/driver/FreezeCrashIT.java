package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.util.concurrent.ListenableFuture;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateSnapshotResponse;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.linux.Freeze;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 of {@code hearth serve} while a snapshot holds a pod's filesystem frozen: the pod's writes
 * hang until a driver comes back, and the one that comes back thaws it first thing, after which
 * every call on the volume succeeds.
 */
@RequiresRoot
@RequiresTools({"mkfs.ext4", "fsfreeze", "mountpoint"})
class FreezeCrashIT {

    /** Enough data that copying it (no reflinks on the test's filesystem) keeps the freeze open a while. */
    private static final int DATA_MIB = 768;

    @TempDir
    Path dir;

    private final List<HearthProcess> processes = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private ManagedChannel channel;

    @AfterEach
    void cleanUp() throws Exception {
        if (channel != null) {
            channel.shutdownNow();
        }
        for (HearthProcess process : processes) {
            process.close();
        }
        Path real = dir.toRealPath();
        List<MountEntry> mounts = MountInfo.read().stream().filter(m -> m.mountPoint().startsWith(real)).toList();
        for (MountEntry mount : mounts.reversed()) {
            try {
                Freeze.thaw(mount.mountPoint());
            } catch (IOException | IllegalArgumentException e) {
                // not frozen, or not freezable
            }
            Mounts.unmount(mount.mountPoint());
        }
        for (LoopAttachment loop : Loop.list()) {
            if (loop.backingFile().startsWith(real)) {
                Loop.detach(loop.device());
            }
        }
        threads.shutdownNow();
    }

    @Test
    void aDriverKilledInsideASnapshotsFreezeIsFollowedByOneThatThawsAndEveryCallSucceeds() throws Exception {
        Files.createDirectories(dir.resolve("pool"));
        HearthProcess first = serve();
        VolumeCapability ext4 = mount("ext4");
        String id = controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-frozen")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1024 * MIB))
                .addVolumeCapabilities(ext4).build()).getVolume().getVolumeId();
        Path staging = Files.createDirectories(dir.resolve("kubelet/staging/pvc-frozen"));
        Path target = Files.createDirectories(dir.resolve("kubelet/pods/db-0")).resolve("vol");
        node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(ext4).build());
        node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(ext4).build());
        writeData(target.resolve("table.dat"));

        ListenableFuture<CreateSnapshotResponse> snapshot = ControllerGrpc.newFutureStub(channel)
                .createSnapshot(CreateSnapshotRequest.newBuilder().setName("snap-1").setSourceVolumeId(id).build());
        awaitFreezeRecord(first, snapshot);
        first.process().destroyForcibly(); // SIGKILL: no finally block runs, no thaw
        assertThat(first.process().waitFor(10, TimeUnit.SECONDS)).isTrue();

        CompletableFuture<Path> podWrite = CompletableFuture.supplyAsync(() -> appendSynced(target.resolve("log")),
                threads);
        try {
            podWrite.get(1, TimeUnit.SECONDS);
            throw new AssertionError("the pod could write after the kill: the kill missed the frozen window "
                    + "(the copy finished first); make DATA_MIB larger");
        } catch (TimeoutException expected) {
            // frozen, with no driver left to thaw it
        }

        HearthProcess second = serve();

        assertThat(podWrite.get(20, TimeUnit.SECONDS)).as("the pod's write went through once hearth was back")
                .exists();
        assertThat(second.stderr()).contains("thawed " + staging);
        CreateSnapshotResponse retried = controller().createSnapshot(CreateSnapshotRequest.newBuilder()
                .setName("snap-1").setSourceVolumeId(id).build());
        assertThat(retried.getSnapshot().getReadyToUse()).isTrue();
        assertThat(appendSynced(target.resolve("log"))).as("not frozen after the retried snapshot").exists();
        node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                .setTargetPath(target.toString()).build());
        node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).build());
        controller().deleteSnapshot(DeleteSnapshotRequest.newBuilder()
                .setSnapshotId(retried.getSnapshot().getSnapshotId()).build());
        controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());

        Path real = dir.toRealPath();
        assertThat(Loop.list()).noneMatch(loop -> loop.backingFile().startsWith(real));
        assertThat(MountInfo.read()).noneMatch(m -> m.mountPoint().startsWith(real));
        assertThat(dir.resolve("pool/.frozen")).doesNotExist();
        assertThat(watchdogsFor(real)).as("the dead driver's watchdog is stopped").isEmpty();
    }

    private HearthProcess serve() throws IOException, InterruptedException {
        HearthProcess process = HearthProcess.start(dir.resolve("logs"), "serve",
                "--endpoint", "unix://" + dir.resolve("csi.sock"), "--node-id", "node-crash",
                "--state-dir", dir.resolve("state").toString(),
                "--pool", "name=default,dir=" + dir.resolve("pool") + ",capacity=3Gi", "--metrics-address", "");
        processes.add(process);
        if (channel != null) {
            channel.shutdownNow();
        }
        channel = Channels.channelTo(Endpoint.parse("unix://" + dir.resolve("csi.sock")));
        process.awaitReady(channel, Duration.ofSeconds(60));
        return process;
    }

    /** Waits until the snapshot has recorded its freeze, and a little more so the freeze is in place. */
    private void awaitFreezeRecord(HearthProcess driver, ListenableFuture<?> snapshot) throws Exception {
        Path records = dir.resolve("pool/.frozen");
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!hasRecord(records)) {
            assertThat(snapshot.isDone()).as("the snapshot finished before its freeze was seen").isFalse();
            assertThat(System.nanoTime()).as("a freeze within 60 s; stderr:%n%s", driver.stderr()).isLessThan(deadline);
            Thread.sleep(1);
        }
        Thread.sleep(50);
    }

    private static boolean hasRecord(Path records) throws IOException {
        if (!Files.isDirectory(records)) {
            return false;
        }
        try (Stream<Path> files = Files.list(records)) {
            return files.anyMatch(f -> f.getFileName().toString().endsWith(".frozen"));
        }
    }

    private static List<ProcessHandle> watchdogsFor(Path dir) {
        return ProcessHandle.allProcesses()
                .filter(p -> p.info().arguments().map(args -> Arrays.asList(args).contains("hearth-thaw-watchdog")
                        && Arrays.stream(args).anyMatch(a -> a.startsWith(dir.toString()))).orElse(false))
                .toList();
    }

    private static void writeData(Path file) throws IOException {
        byte[] chunk = new byte[(int) MIB];
        Arrays.fill(chunk, (byte) 0x5a);
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            for (int i = 0; i < DATA_MIB; i++) {
                chunk[0] = (byte) i; // no two MiB alike
                out.write(ByteBuffer.wrap(chunk));
            }
            out.force(true);
        }
    }

    private static Path appendSynced(Path file) {
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND)) {
            out.write(ByteBuffer.wrap("a line from the pod\n".getBytes()));
            out.force(true);
            return file;
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    private ControllerGrpc.ControllerBlockingStub controller() {
        return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }

    private NodeGrpc.NodeBlockingStub node() {
        return NodeGrpc.newBlockingStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }
}
