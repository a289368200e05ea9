package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.POOL_CAPACITY;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.fromVolume;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.Volume;
import dev.hearth.driver.Kubelet.Published;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.ScratchFilesystem;
import dev.hearth.storage.file.FilePoolConfig;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** CreateVolume from another volume: what the clone holds, also of a volume in use, and what is refused. */
class CloneTest extends DriverFixture {

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void cloneHoldsTheSourcesContentAndThenGoesItsOwnWay() throws IOException {
        String source = driver.create("pvc-source", 64 * MIB, mount("ext4")).getVolumeId();
        Published original = kubelet.stageAndPublish(source, mount("ext4"), "pod-source");
        String sha = TestData.writeSynced(original.target().resolve("data.bin"), TestData.random(3 * (int) MIB, 7));

        String clone = driver.create("pvc-clone", 64 * MIB, mount("ext4"), fromVolume(source)).getVolumeId();
        TestData.writeSynced(original.target().resolve("after-clone.txt"), "only in the source");
        Published copy = kubelet.stageAndPublish(clone, mount("ext4"), "pod-clone");
        TestData.writeSynced(copy.target().resolve("clone-only.txt"), "only in the clone");

        assertThat(TestData.sha256(copy.target().resolve("data.bin"))).isEqualTo(sha);
        assertThat(copy.target().resolve("after-clone.txt")).doesNotExist();
        assertThat(original.target().resolve("clone-only.txt")).doesNotExist();
    }

    /**
     * The source is frozen while it is copied: the clone is one point in time, with a clean ext4
     * (journal flushed, no recovery needed) and every file as a completed write left it. A copy of a
     * live ext4 without the freeze always carries the needs_recovery flag of a mounted filesystem.
     */
    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.ext4", "e2fsck", "dumpe2fs"})
    void cloneOfAVolumeBeingWrittenIsAConsistentPointInTime() throws Exception {
        String source = driver.create("pvc-busy", 128 * MIB, mount("ext4")).getVolumeId();
        Published original = kubelet.stageAndPublish(source, mount("ext4"), "pod-busy");
        String sha = TestData.writeSynced(original.target().resolve("synced.bin"), TestData.random(3 * (int) MIB, 1));
        Writer writer = new Writer(original.target());
        Thread thread = Thread.ofPlatform().name("writer").start(writer);
        String clone;
        try {
            writer.awaitWrites(50);
            clone = driver.create("pvc-clone", 128 * MIB, mount("ext4"), fromVolume(source)).getVolumeId();
            writer.awaitWrites(writer.writes() + 50);
        } finally {
            writer.stop();
            thread.join();
        }
        writer.rethrow();

        String superblock = ScratchFilesystem.run(List.of("dumpe2fs", "-h", driver.image(clone).toString()));
        assertThat(superblock).containsPattern("Filesystem state:\\s+clean")
                .doesNotContain("needs_recovery");
        ScratchFilesystem.run(List.of("e2fsck", "-f", "-n", driver.image(clone).toString()));
        Published copy = kubelet.stageAndPublish(clone, mount("ext4"), "pod-clone");
        assertThat(TestData.sha256(copy.target().resolve("synced.bin"))).isEqualTo(sha);
        Writer.assertEveryFileWhole(copy.target());
    }

    /** Rewrites w-0 .. w-199 in turn, each with one write(2) of its own pattern, until stopped. */
    private static final class Writer implements Runnable {
        static final int FILES = 200;
        static final int SIZE = 64 * 1024;

        private final Path root;
        private final AtomicBoolean stop = new AtomicBoolean();
        private final AtomicInteger writes = new AtomicInteger();
        private volatile Exception failure;

        Writer(Path root) {
            this.root = root;
        }

        @Override
        public void run() {
            try {
                for (int n = 0; !stop.get(); n++) {
                    int file = n % FILES;
                    try (FileChannel out = FileChannel.open(root.resolve("w-" + file), StandardOpenOption.CREATE,
                            StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                        out.write(ByteBuffer.wrap(TestData.random(SIZE, file)));
                    }
                    writes.incrementAndGet();
                }
            } catch (IOException | RuntimeException e) {
                failure = e;
            }
        }

        int writes() {
            return writes.get();
        }

        void awaitWrites(int count) throws InterruptedException {
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (writes.get() < count && failure == null && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(writes.get()).as("writes by the writer (failure: %s)", failure).isGreaterThanOrEqualTo(count);
        }

        void stop() {
            stop.set(true);
        }

        void rethrow() throws Exception {
            if (failure != null) {
                throw failure;
            }
        }

        /** Each file the clone has is as a write(2) left it: empty (truncated, not yet written) or whole. */
        static void assertEveryFileWhole(Path root) throws IOException {
            int seen = 0;
            for (int file = 0; file < FILES; file++) {
                Path path = root.resolve("w-" + file);
                if (!Files.exists(path)) {
                    continue;
                }
                seen++;
                byte[] content = Files.readAllBytes(path);
                if (content.length != 0) {
                    assertThat(content).as("%s in the clone", path.getFileName())
                            .isEqualTo(TestData.random(SIZE, file));
                }
            }
            assertThat(seen).as("files of the writer in the clone").isPositive();
        }
    }

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.xfs", "xfs_admin"})
    void cloneOfAMountedXfsMountsBesideIt() throws IOException {
        String source = driver.create("pvc-xfs", 320 * MIB, mount("xfs")).getVolumeId();
        Published original = kubelet.stageAndPublish(source, mount("xfs"), "pod-xfs");
        String sha = TestData.writeSynced(original.target().resolve("data.bin"), TestData.random((int) MIB, 3));

        String clone = driver.create("pvc-xfs-clone", 320 * MIB, mount("xfs"), fromVolume(source)).getVolumeId();
        Published copy = kubelet.stageAndPublish(clone, mount("xfs"), "pod-xfs-clone");

        assertThat(MountInfo.at(original.staging())).get().extracting(MountEntry::fsType).isEqualTo("xfs");
        assertThat(MountInfo.at(copy.staging())).get().extracting(MountEntry::fsType).isEqualTo("xfs");
        assertThat(TestData.sha256(copy.target().resolve("data.bin"))).isEqualTo(sha);
        // The log replay that made the copy mountable left no mount point behind.
        try (var replays = Files.list(driver.poolDir().resolve(".xfs-replays"))) {
            assertThat(replays).isEmpty();
        }
    }

    /**
     * A stage killed in the middle of mkfs.xfs leaves an xfs that says its mkfs has not finished
     * (sb_inprogress), which no kernel mounts; a copy of it could never get a UUID of its own. The
     * clone is refused with the reason and the way out, not with an INTERNAL error from the mount.
     */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.xfs")
    void cloneOfAnXfsWhoseMkfsDidNotFinishIsAPreconditionAndCreatesNothing() throws Exception {
        String source = xfsVolumeWithByte(126, 1); // sb_inprogress, as mkfs.xfs leaves it until its last write
        List<Path> files = driver.poolFiles();

        assertFails(() -> driver.create("pvc-xfs-clone", 320 * MIB, mount("xfs"), fromVolume(source)),
                Code.FAILED_PRECONDITION, "source volume " + source, "mkfs did not finish", "staging it again");

        assertThat(driver.poolFiles()).isEqualTo(files);
        assertNoReplayLeft();
    }

    /** A copy of a damaged xfs (here a superblock whose checksum fails) does not mount to replay its log. */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.xfs")
    void cloneOfADamagedXfsIsAPreconditionAndCreatesNothing() throws Exception {
        String source = xfsVolumeWithByte(108, 'x'); // sb_fname: the label, covered by the superblock's CRC
        List<Path> files = driver.poolFiles();

        assertFails(() -> driver.create("pvc-xfs-clone", 320 * MIB, mount("xfs"), fromVolume(source)),
                Code.FAILED_PRECONDITION, "source volume " + source, "does not mount", "xfs_repair");

        // the replays' directory, made for the attempt, stays (empty) as after any clone of an xfs
        assertThat(driver.poolFiles()).filteredOn(f -> !f.getFileName().toString().equals(".xfs-replays"))
                .isEqualTo(files);
        assertNoReplayLeft();
        assertThat(TestDriver.loopDevicesUnder(driver.poolDir().toRealPath())).isEmpty();
    }

    /** A volume whose image holds an xfs made by mkfs.xfs, with the byte at {@code offset} set to {@code value}. */
    private String xfsVolumeWithByte(long offset, int value) throws Exception {
        String volume = driver.create("pvc-xfs", 320 * MIB, mount("xfs")).getVolumeId();
        Path image = driver.image(volume);
        Process mkfs = new ProcessBuilder("mkfs.xfs", "-q", "-f", image.toString()).redirectErrorStream(true).start();
        String output = new String(mkfs.getInputStream().readAllBytes());
        assertThat(mkfs.waitFor()).as("mkfs.xfs: %s", output).isZero();
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(new byte[] {(byte) value}), offset);
            channel.force(true);
        }
        return volume;
    }

    private void assertNoReplayLeft() throws IOException {
        Path replays = driver.poolDir().resolve(".xfs-replays");
        if (Files.isDirectory(replays)) {
            try (var left = Files.list(replays)) {
                assertThat(left).as("replay mount points").isEmpty();
            }
        }
    }

    @Test
    @RequiresRoot
    void cloneOfABlockVolumeHoldsItsBytes() throws IOException {
        String source = driver.create("pvc-block", 32 * MIB, block()).getVolumeId();
        Published original = kubelet.stageAndPublish(source, block(), "pod-block");
        byte[] bytes = TestData.random((int) MIB, 11);
        try (FileChannel device = FileChannel.open(original.target(), StandardOpenOption.WRITE)) {
            device.write(ByteBuffer.wrap(bytes), 8 * MIB);
            device.force(true);
        }

        String clone = driver.create("pvc-block-clone", 32 * MIB, block(), fromVolume(source)).getVolumeId();
        Published copy = kubelet.stageAndPublish(clone, block(), "pod-block-clone");

        ByteBuffer read = ByteBuffer.allocate(bytes.length);
        try (FileChannel device = FileChannel.open(copy.target(), StandardOpenOption.READ)) {
            while (read.hasRemaining() && device.read(read, 8 * MIB + read.position()) > 0) {
                // until full
            }
        }
        assertThat(read.array()).isEqualTo(bytes);
    }

    // What the controller says about a clone

    @Test
    void cloneNamesItsSourceVolumeAndGetsItsSizeWhenNoneIsAsked() {
        String source = driver.create("pvc-source", 48 * MIB, mount("ext4")).getVolumeId();

        Volume clone = driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-clone")
                .addVolumeCapabilities(mount("ext4")).setVolumeContentSource(fromVolume(source)).build())
                .getVolume();

        assertThat(clone.getContentSource()).isEqualTo(fromVolume(source));
        assertThat(clone.getCapacityBytes()).isEqualTo(48 * MIB);
        assertThat(driver.available()).isEqualTo(POOL_CAPACITY - 2 * 48 * MIB);
    }

    @Test
    void cloneOfAVolumeThatDoesNotExistIsNotFoundAndCreatesNothing() throws IOException {
        for (String id : List.of("default-aaaaaaaaaaaaaaaaaaaaaaaaaa", "pvc-1", "other-aaaaaaaaaaaaaaaaaaaaaaaaaa")) {
            assertFails(() -> driver.create("pvc-clone", 64 * MIB, mount("ext4"), fromVolume(id)),
                    Code.NOT_FOUND, id, "does not exist on node " + TestDriver.NODE);
        }

        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    void cloneSmallerThanItsSourceIsOutOfRangeAndCreatesNothing() throws IOException {
        String source = driver.create("pvc-source", 64 * MIB, mount("ext4")).getVolumeId();
        List<Path> files = driver.poolFiles();

        assertFails(() -> driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-clone")
                .setCapacityRange(CapacityRange.newBuilder().setLimitBytes(32 * MIB))
                .addVolumeCapabilities(mount("ext4")).setVolumeContentSource(fromVolume(source)).build()),
                Code.OUT_OF_RANGE, String.valueOf(64 * MIB));

        assertThat(driver.poolFiles()).isEqualTo(files);
    }

    @Test
    void cloneIntoAnotherPoolThanItsSourceIsInvalidArgument() throws IOException {
        driver.close();
        driver = TestDriver.start(dir, List.of(new FilePoolConfig("default", dir.resolve("pool"), POOL_CAPACITY),
                new FilePoolConfig("other", dir.resolve("pool-other"), POOL_CAPACITY)));
        String source = driver.create("pvc-source", 64 * MIB, mount("ext4")).getVolumeId();

        assertFails(() -> driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-clone")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(64 * MIB))
                .addVolumeCapabilities(mount("ext4")).putParameters("hearth.dev/pool", "other")
                .setVolumeContentSource(fromVolume(source)).build()), Code.INVALID_ARGUMENT, "'default'", "'other'");

        assertThat(driver.poolFiles()).hasSize(2); // the source's image and metadata
        try (var files = Files.list(dir.resolve("pool-other"))) {
            assertThat(files.map(f -> f.getFileName().toString()))
                    .containsExactlyInAnyOrder(".hearth.lock", "snapshots");
        }
    }
}
