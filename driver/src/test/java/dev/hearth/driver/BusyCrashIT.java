package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.ListSnapshotsRequest;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.csi.v1.VolumeContentSource;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 of {@code hearth serve} while several volumes go through their lives at once, as a busy
 * node's kubelet, provisioner, snapshotter and resizer drive them. Each worker takes volume after
 * volume: it creates one, stages, publishes and writes it, takes it down, stages it again,
 * publishes it read-only, reads its data back and deletes it (ext4 and raw block); every third
 * worker instead keeps its ext4 published while it snapshots it, restores the snapshot and clones
 * it, then expands it, and reads the data back through it and each copy; and one worker's
 * volumes are inline (ephemeral) volumes, made by their publish and gone with their unpublish. Meanwhile the driver is
 * killed (with the tools it runs) at random moments and started again on the same state; one
 * restart in three is itself killed at a random moment, before or after it is ready. Every
 * call is retried as the sidecars retry it; only the answers of a driver that is down or starting
 * (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ABORTED) are retried, any other refusal fails the
 * test. Each ext4 passes {@code e2fsck -fn} before it is deleted. At the end every volume and
 * snapshot has been deleted through the API, and the node holds nothing of them: no pool file,
 * loop device, mount or open record. (The pool's capacity is the free space of the filesystem it
 * shares with the driver's logs: no measure of a leak.)
 *
 * <p>Where {@link FileCrashIT} kills one call at a time, this kills calls of every kind that overlap.
 * The seed is printed; {@code -Dhearth.crash.seed=} repeats the kill times,
 * {@code -Dhearth.busy.kills=} sets their number (6 unless given). The workers' interleaving is the
 * machine's.
 */
@RequiresRoot
@RequiresTools({"mkfs.ext4", "e2fsck", "resize2fs", "blkid"})
class BusyCrashIT {

    private static final long SIZE = 32 * MIB;
    private static final long GROWN = 48 * MIB;
    private static final int WORKERS = 6;
    private static final int DATA_BYTES = 256 * 1024;
    /** What a driver that is down, or starting, or killed under a call answers: the sidecars retry these. */
    private static final Set<Status.Code> DOWN = EnumSet.of(Status.Code.UNAVAILABLE, Status.Code.DEADLINE_EXCEEDED,
            Status.Code.CANCELLED, Status.Code.ABORTED);

    @TempDir
    Path dir;

    private KillableHearth hearth;

    @AfterEach
    void cleanUp() throws Exception {
        if (hearth != null) {
            hearth.close();
        }
        TestDriver.sweep(dir);
    }

    @Test
    void volumesInEveryStepWhenTheDriverIsKilledAllConvergeWithNothingLeft() throws Exception {
        long seed = Long.getLong("hearth.crash.seed", new SecureRandom().nextLong());
        int kills = Integer.getInteger("hearth.busy.kills", 6);
        System.out.println("BusyCrashIT: seed " + seed + " (repeat the kill times with -Dhearth.crash.seed=" + seed
                + "), " + kills + " kills, " + WORKERS + " workers");
        Path state = dir.resolve("state");
        Path pool = state.resolve("pools/default");
        Path kubelet = dir.resolve("kubelet");
        hearth = new KillableHearth(dir.resolve("logs"), dir.resolve("csi.sock"), KillableHearth.JVM,
                dir.resolve("hearth.jsa"),
                List.of("--node-id", "busy", "--state-dir", state.toString(), "--metrics-address", ""));
        hearth.start();
        hearth.stop(); // writes the class archive: every restart after this one is faster
        hearth.start();
        List<String> basePool = files(pool);

        Random random = new Random(seed);
        AtomicBoolean stopping = new AtomicBoolean();
        Map<String, Integer> retried = new TreeMap<>();
        List<Future<Integer>> workers = new ArrayList<>();
        // Closing the executor waits for the workers: they must have been told to stop first.
        try (ExecutorService threads = Executors.newFixedThreadPool(WORKERS)) {
            try {
                for (int w = 0; w < WORKERS; w++) {
                    Worker worker = new Worker(w, w % 3 == 1 ? block() : mount("ext4"), kubelet, pool, retried);
                    workers.add(threads.submit(() -> {
                        int lives = 0;
                        while (!stopping.get()) {
                            worker.life(lives++);
                        }
                        return lives;
                    }));
                }
                for (int k = 1; k <= kills; k++) {
                    Thread.sleep(300 + random.nextInt(1700));
                    List<String> tools = hearth.tools();
                    hearth.kill();
                    Thread.sleep(random.nextInt(200));
                    // One restart in three is itself killed, ready or not (ready takes about a second).
                    String startKilled = "";
                    if (random.nextInt(3) == 0) {
                        int delay = random.nextInt(1200);
                        hearth.startAndKillAfter(Duration.ofMillis(delay));
                        startKilled = "; its restart killed at " + delay + " ms";
                    }
                    hearth.start();
                    System.out.println("  kill " + k + "/" + kills
                            + (tools.isEmpty() ? "" : " (running " + tools + ")") + startKilled
                            + "; restarted in " + hearth.lastStart().toMillis() + " ms");
                }
                Thread.sleep(1000); // the workers go on for a while on the last driver
                stopping.set(true);
                int lives = 0;
                for (Future<Integer> worker : workers) {
                    lives += worker.get(5, TimeUnit.MINUTES);
                }
                System.out.println("BusyCrashIT: " + lives + " volume lives; calls retried: " + retried);
                assertThat(lives).as("volume lives completed").isGreaterThanOrEqualTo(WORKERS);
            } finally {
                stopping.set(true);
            }
        }

        assertThat(hearth.controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
                .as("volumes listed after all were deleted").isEmpty();
        assertThat(hearth.controller().listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesList())
                .as("snapshots listed after all were deleted").isEmpty();
        assertThat(files(pool)).as("the pool's files").isEqualTo(basePool);
        assertThat(TestDriver.mountsUnder(kubelet.toRealPath())).as("mounts").isEmpty();
        assertThat(TestDriver.loopDevicesUnder(pool.toRealPath())).as("loop devices").isEmpty();
        assertThat(files(state.resolve("formatting"))).as("open records").isEmpty();
        assertThat(files(state.resolve("ephemeral"))).as("ephemeral volumes' records").isEmpty();
    }

    /** One of the kubelet's and the provisioner's streams of work: a volume's life, then the next one's. */
    private final class Worker {

        private final int number;
        private final VolumeCapability capability;
        private final Path kubelet;
        private final Path pool;
        private final Map<String, Integer> retried;

        Worker(int number, VolumeCapability capability, Path kubelet, Path pool, Map<String, Integer> retried) {
            this.number = number;
            this.capability = capability;
            this.kubelet = kubelet;
            this.pool = pool;
            this.retried = retried;
        }

        /**
         * One volume's life; every third worker's also copies it (snapshot, restore, clone) and
         * expands it, and one worker's volumes are ephemeral (inline in a pod).
         */
        void life(int round) throws Exception {
            String name = "pvc-busy-" + number + "-" + round;
            if (number % 3 == 2) {
                copiesLife(name, TestData.random(DATA_BYTES, 1000L * number + round));
                return;
            }
            if (number == 3) {
                ephemeralLife(name, TestData.random(DATA_BYTES, 1000L * number + round));
                return;
            }
            String id = create(name, null);
            Path staging = staging(id);
            Path target = target(id);
            byte[] data = TestData.random(DATA_BYTES, 1000L * number + round);

            stage(id, staging);
            publish(id, staging, target, false);
            write(target, data);
            unpublish(id, target);
            unstage(id, staging);

            stage(id, staging); // a volume with data: staged again, never formatted over
            publish(id, staging, target, true); // read-only: a raw block volume gets a read-only view
            assertThat(read(target)).as("the data of %s after it was staged again", name).isEqualTo(data);
            takeDown(id);
        }

        /**
         * A volume written while published, then, while it stays published (frozen for each copy):
         * a snapshot of it, a volume restored from that and a clone of it; then it is taken down,
         * expanded, and staged again, which grows its ext4. It and its copies must hold the data;
         * all four go again at the end.
         */
        private void copiesLife(String name, byte[] data) throws Exception {
            String source = create(name, null);
            Path target = target(source);
            stage(source, staging(source));
            publish(source, staging(source), target, false);
            write(target, data);
            String snapshot = call("CreateSnapshot", () -> hearth.controller().createSnapshot(CreateSnapshotRequest
                    .newBuilder().setName(name + "-snap").setSourceVolumeId(source).build())).getSnapshot()
                    .getSnapshotId();
            String restored = create(name + "-restored", VolumeContentSource.newBuilder().setSnapshot(
                    VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshot)).build());
            String clone = create(name + "-clone", VolumeContentSource.newBuilder().setVolume(
                    VolumeContentSource.VolumeSource.newBuilder().setVolumeId(source)).build());
            // Grown while unstaged: ext4 online growth needs CAP_SYS_RESOURCE, which this sandbox's root
            // lacks. The next stage grows it offline (resize2fs under its record) before it mounts it.
            unpublish(source, target);
            unstage(source, staging(source));
            call("NodeExpandVolume", () -> hearth.node().nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
                    .setVolumeId(source).setVolumePath(staging(source).toString())
                    .setStagingTargetPath(staging(source).toString()).setVolumeCapability(capability)
                    .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(GROWN)).build()));
            stage(source, staging(source));
            publish(source, staging(source), target, true);
            assertThat(Files.getFileStore(target).getTotalSpace()).as("%s grown", name).isGreaterThan(SIZE);
            assertThat(read(target)).as("the data of %s after its growth", name).isEqualTo(data);
            for (String copy : List.of(restored, clone)) {
                stage(copy, staging(copy));
                publish(copy, staging(copy), target(copy), true);
                assertThat(read(target(copy))).as("the data of %s's copy %s", name, copy).isEqualTo(data);
                takeDown(copy);
            }
            takeDown(source);
            call("DeleteSnapshot", () -> hearth.controller().deleteSnapshot(
                    DeleteSnapshotRequest.newBuilder().setSnapshotId(snapshot).build()));
        }

        /** An inline volume: made by its publish, written, read back, gone with its unpublish. */
        private void ephemeralLife(String name, byte[] data) throws Exception {
            // The kubelet's handle for an inline volume: "csi-" and a SHA-256 (here of the name).
            String handle = "csi-" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(name.getBytes(StandardCharsets.UTF_8)));
            Path target = target(handle);
            call("NodePublishVolume", () -> hearth.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                    .setVolumeId(handle).setTargetPath(target.toString()).setVolumeCapability(capability)
                    .putAllVolumeContext(Map.of("csi.storage.k8s.io/ephemeral", "true",
                            "csi.storage.k8s.io/pod.name", name, "csi.storage.k8s.io/pod.namespace", "default",
                            "hearth.dev/size", "32Mi"))
                    .build()));
            write(target, data);
            assertThat(read(target)).as("the data of ephemeral %s", name).isEqualTo(data);
            unpublish(handle, target);
            Files.delete(target.getParent());
        }

        private String create(String name, VolumeContentSource source) throws Exception {
            CreateVolumeRequest.Builder request = CreateVolumeRequest.newBuilder().setName(name)
                    .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(SIZE))
                    .addVolumeCapabilities(capability);
            if (source != null) {
                request.setVolumeContentSource(source);
            }
            return call("CreateVolume", () -> hearth.controller().createVolume(request.build())).getVolume()
                    .getVolumeId();
        }

        /** Unpublishes and unstages the volume, checks its ext4, deletes it, and removes the kubelet's directories. */
        private void takeDown(String id) throws Exception {
            unpublish(id, target(id));
            unstage(id, staging(id));
            if (capability.hasMount()) {
                fsck(pool.resolve(id + ".img"));
            }
            call("DeleteVolume", () -> hearth.controller().deleteVolume(
                    DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
            Files.delete(staging(id));
            Files.delete(target(id).getParent());
        }

        private Path staging(String id) throws IOException {
            return Files.createDirectories(kubelet.resolve("staging").resolve(id));
        }

        private Path target(String id) throws IOException {
            return Files.createDirectories(kubelet.resolve("pods").resolve(id)).resolve("volume");
        }

        private void stage(String id, Path staging) throws Exception {
            call("NodeStageVolume", () -> hearth.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder()
                    .setVolumeId(id).setStagingTargetPath(staging.toString()).setVolumeCapability(capability)
                    .build()));
        }

        private void publish(String id, Path staging, Path target, boolean readOnly) throws Exception {
            call("NodePublishVolume", () -> hearth.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                    .setVolumeId(id).setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                    .setVolumeCapability(capability).setReadonly(readOnly).build()));
        }

        private void unpublish(String id, Path target) throws Exception {
            call("NodeUnpublishVolume", () -> hearth.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest
                    .newBuilder().setVolumeId(id).setTargetPath(target.toString()).build()));
        }

        private void unstage(String id, Path staging) throws Exception {
            call("NodeUnstageVolume", () -> hearth.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
                    .setVolumeId(id).setStagingTargetPath(staging.toString()).build()));
        }

        /** The unstaged volume's ext4, checked without changing it: made once, whole, whatever the kills cut. */
        private void fsck(Path image) throws IOException, InterruptedException {
            Process check = new ProcessBuilder("e2fsck", "-fn", image.toString()).redirectErrorStream(true).start();
            String output = new String(check.getInputStream().readAllBytes());
            assertThat(check.waitFor()).as("e2fsck -fn %s:%n%s", image, output).isZero();
        }

        /** Into a file on the filesystem, or at 4 MiB into the raw device; synced either way. */
        private void write(Path target, byte[] data) throws IOException {
            if (capability.hasMount()) {
                TestData.writeSynced(target.resolve("data"), data);
                return;
            }
            try (FileChannel device = FileChannel.open(target, StandardOpenOption.WRITE)) {
                ByteBuffer buffer = ByteBuffer.wrap(data);
                while (buffer.hasRemaining()) {
                    device.write(buffer, 4 * MIB + buffer.position());
                }
                device.force(true);
            }
        }

        private byte[] read(Path target) throws IOException {
            if (capability.hasMount()) {
                return Files.readAllBytes(target.resolve("data"));
            }
            try (FileChannel device = FileChannel.open(target, StandardOpenOption.READ)) {
                ByteBuffer buffer = ByteBuffer.allocate(DATA_BYTES);
                while (buffer.hasRemaining() && device.read(buffer, 4 * MIB + buffer.position()) > 0) {
                    // until the buffer is full
                }
                return buffer.array();
            }
        }

        /**
         * The call again until it succeeds, while the driver is down, starting, or was killed under
         * it; any other refusal fails the test. Gives up after two minutes.
         */
        private <T> T call(String what, KillableHearth.Attempt<T> attempt) throws Exception {
            long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
            while (true) {
                try {
                    return attempt.make();
                } catch (StatusRuntimeException e) {
                    Status.Code code = e.getStatus().getCode();
                    if (!DOWN.contains(code) || System.nanoTime() > deadline) {
                        throw new AssertionError(what + " of worker " + number + " refused: " + e.getStatus(), e);
                    }
                    synchronized (retried) {
                        retried.merge(what + " " + code, 1, Integer::sum);
                    }
                    Thread.sleep(50);
                }
            }
        }
    }

    private static List<String> files(Path directory) throws IOException {
        if (!Files.isDirectory(directory)) {
            return List.of();
        }
        try (Stream<Path> files = Files.walk(directory)) {
            return files.filter(Files::isRegularFile).map(f -> directory.relativize(f).toString())
                    .filter(f -> !f.equals(".hearth.lock")).sorted().toList();
        }
    }
}
