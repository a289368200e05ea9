package dev.hearth.linux;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

@RequiresRoot
class LoopTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    @Test
    void attachesSparseFileWithDirectIoAndFindsIt() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 64 * MIB);

        LoopDevice device = Scratch.attach(cleanup, file, false, true);

        assertThat(BlockDevices.isBlockDevice(device.path())).isTrue();
        assertThat(BlockDevices.deviceNumber(device.path())).as("as sysfs writes it").contains(Files.readString(
                Path.of("/sys/class/block/loop" + device.number() + "/dev")).strip());
        assertThat(BlockDevices.size(device.path())).isEqualTo(64 * MIB);
        LoopAttachment expected = new LoopAttachment(device, file.toRealPath(), false, false, true, false);
        assertThat(Loop.findByBackingFile(file)).contains(expected);
        assertThat(Loop.list()).contains(expected);
    }

    /**
     * The listing reads only the devices /proc/partitions names, those with a size: one over an
     * empty file is bound but has none, and is found through its own sysfs directory alone.
     */
    @Test
    void listsTheDevicesThatHaveASizeAndSkipsOneOverAnEmptyFile() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 8 * MIB);
        Path empty = Scratch.sparseFile(dir.resolve("empty.img"), 0);
        LoopDevice sized = Scratch.attach(cleanup, file, false, false);
        LoopDevice unsized = Scratch.attach(cleanup, empty, false, false);

        assertThat(Files.readString(Path.of("/proc/partitions"))).containsPattern("\\sloop" + sized.number() + "\n")
                .doesNotContainPattern("\\sloop" + unsized.number() + "\n");
        assertThat(Loop.list()).extracting(LoopAttachment::device).contains(sized).doesNotContain(unsized);
        assertThat(Loop.describe(unsized)).map(LoopAttachment::backingFile).contains(empty.toRealPath());
    }

    @Test
    void writesThroughTheDeviceLandInTheBackingFile() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 64 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, false, true);
        byte[] pattern = pattern(4096);

        Scratch.writeAt(device.path(), MIB, pattern);

        assertThat(Scratch.readAt(file, MIB, pattern.length)).isEqualTo(pattern);
    }

    @Test
    void setCapacityPicksUpAGrownBackingFile() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 64 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, false, true);

        Scratch.resize(file, 96 * MIB);
        assertThat(BlockDevices.size(device.path())).isEqualTo(64 * MIB);
        Loop.setCapacity(device);

        assertThat(BlockDevices.size(device.path())).isEqualTo(96 * MIB);
    }

    @Test
    void detachForgetsTheFileAndIsIdempotent() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 64 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, false, true);

        Loop.detach(device);

        assertThat(Loop.findByBackingFile(file)).isEmpty();
        assertThat(Loop.list()).noneMatch(a -> a.device().equals(device) && a.backingFile().equals(file));
        Loop.detach(device);
    }

    /**
     * A detach while someone else has the device open waits for that last close, and the device
     * says so; {@link Loop#keep} takes the detach back, so the close leaves it bound to its file.
     */
    @Test
    void aDetachWaitingForTheLastCloseIsShownAndCanBeTakenBack() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 8 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, false, true);
        LoopAttachment before = Loop.describe(device).orElseThrow();
        assertThat(before.detaching()).isFalse();

        try (FileChannel holder = FileChannel.open(device.path(), StandardOpenOption.READ)) {
            Loop.detach(device);
            assertThat(Loop.describe(device)).get().extracting(LoopAttachment::detaching).isEqualTo(true);

            assertThat(Loop.keep(device)).isTrue();
        }

        assertThat(Loop.describe(device)).as("as before the detach: its file, direct I/O and all").contains(before);
        assertThat(BlockDevices.size(device.path())).isEqualTo(8 * MIB);
    }

    /** Without the take-back the last close ends it, and a device no longer bound cannot be kept. */
    @Test
    void aDetachWaitingForTheLastCloseEndsAtItAndLeavesNothingToKeep() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 8 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, false, false);
        try (FileChannel holder = FileChannel.open(device.path(), StandardOpenOption.READ)) {
            Loop.detach(device);
        }

        assertThat(Loop.describe(device)).isEmpty();
        assertThat(Loop.keep(device)).isFalse();
    }

    @Test
    void readOnlyAttachmentRefusesWrites() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 64 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, true, true);

        assertThat(Loop.findByBackingFile(file)).hasValueSatisfying(a -> assertThat(a.readOnly()).isTrue());
        assertThatThrownBy(() -> Scratch.writeAt(device.path(), 0, pattern(4096))).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> BlockDevices.discard(device.path(), 0, MIB)).isInstanceOf(IOException.class);
        assertThat(Scratch.readAt(file, 0, 4096)).containsOnly(0);
    }

    @Test
    void discardPunchesAHoleInTheBackingFile() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 64 * MIB);
        Scratch.writeAt(file, 0, pattern((int) MIB));
        long allocatedBefore = FileOps.allocatedBytes(file);
        LoopDevice device = Scratch.attach(cleanup, file, false, true);

        BlockDevices.discard(device.path(), 0, MIB);

        assertThat(allocatedBefore).isGreaterThanOrEqualTo(MIB);
        assertThat(FileOps.allocatedBytes(file)).isLessThan(allocatedBefore);
        assertThat(Scratch.readAt(file, 0, 4096)).containsOnly(0);
    }

    @Test
    void zeroOutMakesAWrittenRangeReadAsZerosAndLeavesTheRestAlone() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 8 * MIB);
        byte[] pattern = pattern((int) (3 * MIB));
        Scratch.writeAt(file, 0, pattern);
        LoopDevice device = Scratch.attach(cleanup, file, false, true);

        BlockDevices.zeroOut(device.path(), MIB, MIB);

        assertThat(Scratch.readAt(device.path(), MIB, (int) MIB)).containsOnly(0);
        assertThat(Scratch.readAt(file, 0, (int) MIB)).isEqualTo(java.util.Arrays.copyOf(pattern, (int) MIB));
        assertThat(Scratch.readAt(file, 2 * MIB, (int) MIB))
                .isEqualTo(java.util.Arrays.copyOfRange(pattern, (int) (2 * MIB), (int) (3 * MIB)));
        assertThatThrownBy(() -> BlockDevices.zeroOut(device.path(), 1, 512)).isInstanceOf(IOException.class);
    }

    @Test
    void deletedBackingFileIsFlaggedAndNeverFound() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 64 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, false, true);
        Path real = file.toRealPath();

        Files.delete(file);

        assertThat(Loop.list()).contains(new LoopAttachment(device, real, true, false, true, false));
        assertThat(Loop.findByBackingFile(real)).isEmpty();
    }

    @Test
    void backingPathLongerThanTheKernelNameFieldIsListedInFull() throws IOException {
        Path deep = Files.createDirectories(dir.resolve("a-directory-name-that-is-long".repeat(4)));
        Path file = Scratch.sparseFile(deep.resolve("disk.img"), 8 * MIB);

        LoopDevice device = Scratch.attach(cleanup, file, false, false);

        assertThat(file.toString().length()).isGreaterThan(64);
        assertThat(Loop.findByBackingFile(file)).hasValueSatisfying(a -> {
            assertThat(a.device()).isEqualTo(device);
            assertThat(a.directIo()).isFalse();
        });
    }

    @Test
    void listingWhileDevicesAreDetachedNeverFails() throws Exception {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), MIB);
        ExecutorService churn = Executors.newSingleThreadExecutor();
        try {
            Future<?> attaching = churn.submit(() -> {
                for (int i = 0; i < 300; i++) {
                    LoopDevice device = Loop.attach(file, false, false);
                    Loop.detach(device);
                }
                return null;
            });
            while (!attaching.isDone()) {
                Loop.list(); // a device detached between reading its directory and its files is simply gone
            }
            attaching.get();
        } finally {
            churn.shutdownNow();
            for (LoopAttachment left : Loop.list()) {
                if (left.backingFile().equals(file.toRealPath())) {
                    Loop.detach(left.device());
                }
            }
        }
    }

    @Test
    void concurrentAttachesGetDistinctDevices() throws Exception {
        List<Path> files = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            files.add(Scratch.sparseFile(dir.resolve("disk" + i + ".img"), 8 * MIB));
        }
        List<LoopDevice> devices = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(files.size())) {
            List<Future<LoopDevice>> futures = new ArrayList<>();
            for (Path f : files) {
                futures.add(pool.submit((Callable<LoopDevice>) () -> Loop.attach(f, false, true)));
            }
            for (Future<LoopDevice> f : futures) {
                try {
                    LoopDevice d = f.get();
                    devices.add(d);
                    cleanup.add(() -> Loop.detach(d));
                } catch (Exception e) {
                    // keep collecting so every device that did attach is detached
                    cleanup.add(() -> {
                        throw new IOException("attach failed", e);
                    });
                }
            }
        }

        assertThat(devices).hasSize(4).doesNotHaveDuplicates();
        for (int i = 0; i < files.size(); i++) {
            assertThat(Loop.findByBackingFile(files.get(i)).map(LoopAttachment::device)).contains(devices.get(i));
        }
    }

    @Test
    void directIoFallsBackWhereTheBackingFilesystemRefusesIt() throws IOException {
        // ramfs cannot do O_DIRECT, and LOOP_CONFIGURE with LO_FLAGS_DIRECT_IO then fails with EINVAL
        Path file = fileOn("ramfs", "ramfs", null);

        LoopDevice device = Scratch.attach(cleanup, file, false, true);

        assertThat(Loop.findByBackingFile(file))
                .contains(new LoopAttachment(device, file, false, false, false, false));
        assertThat(BlockDevices.size(device.path())).isEqualTo(8 * MIB);
    }

    @Test
    void tmpfsBackingFileGetsDirectIoOnCurrentKernels() throws IOException {
        Path file = fileOn("tmpfs", "tmpfs", "size=16m");

        LoopDevice device = Scratch.attach(cleanup, file, false, true);

        // tmpfs gained O_DIRECT in Linux 6.6; older kernels take the fallback path
        assertThat(Loop.findByBackingFile(file)).hasValueSatisfying(a -> assertThat(a.device()).isEqualTo(device));
        assertThat(BlockDevices.size(device.path())).isEqualTo(8 * MIB);
    }

    @Test
    void attachOfMissingFileNamesIt() {
        Path missing = dir.resolve("missing.img");

        assertThatThrownBy(() -> Loop.attach(missing, false, true))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue())
                .hasMessageContaining(missing.toString());
    }

    @Test
    void setCapacityOfAnUnattachedDeviceFails() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 8 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, false, false);
        Loop.detach(device);

        assertThatThrownBy(() -> Loop.setCapacity(device))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENXIO)).isTrue())
                .hasMessageContaining("LOOP_SET_CAPACITY");
    }

    /**
     * A driver container restarted: the old one attached the device through its bind mount of the
     * host's state directory, and its mount namespace is gone. sysfs then names the file relative to
     * that detached mount; the new container, which mounts the same directory, still finds its
     * device, by the file's inode, under its own mount.
     */
    @Test
    @RequiresTools({"unshare", "mount", "losetup"})
    void aDeviceAttachedInAMountNamespaceSinceGoneIsFoundUnderThisNamespacesMountOfItsFile() throws Exception {
        Path state = Files.createDirectories(dir.resolve("host-state/pools/default")).getParent().getParent();
        Scratch.sparseFile(state.resolve("pools/default/v.img"), 8 * MIB);
        LoopDevice device = attachInAGoneContainer(state);
        assertThat(Files.readString(Path.of("/sys/block/loop" + device.number() + "/loop/backing_file")).strip())
                .as("sysfs, once the attaching namespace is gone").isEqualTo("/pools/default/v.img");

        Path newView = Files.createDirectory(dir.resolve("new-container"));
        Scratch.mount(cleanup, state.toString(), newView, "none", MountFlags.MS_BIND, null);
        Path image = newView.resolve("pools/default/v.img");

        assertThat(Loop.describe(device)).map(LoopAttachment::backingFile).contains(image);
        assertThat(Loop.findByBackingFile(image)).map(LoopAttachment::device).contains(device);
        assertThat(Loop.list()).anyMatch(a -> a.device().equals(device) && a.backingFile().equals(image));
    }

    /**
     * Where no mount here reaches the file under that name (the host's view of a container's
     * device: the directory is reached through / at its full path), the device keeps the name sysfs
     * gives, and the file is still found to back it, by its inode.
     */
    @Test
    @RequiresTools({"unshare", "mount", "losetup"})
    void aDeviceWhoseFileIsReachedUnderAnotherNameKeepsSysfsNameAndIsFoundByInode() throws Exception {
        Path state = Files.createDirectories(dir.resolve("host-state/pools/default")).getParent().getParent();
        Path file = Scratch.sparseFile(state.resolve("pools/default/v.img"), 8 * MIB);
        LoopDevice device = attachInAGoneContainer(state);

        assertThat(Loop.describe(device)).map(LoopAttachment::backingFile).contains(Path.of("/pools/default/v.img"));
        assertThat(Loop.findByBackingFile(file)).map(LoopAttachment::device).contains(device);
        assertThat(Loop.findByBackingFile(Scratch.sparseFile(state.resolve("pools/default/other.img"), MIB))).isEmpty();
    }

    /**
     * Attaches {@code state}'s pools/default/v.img as a driver container does, through its bind
     * mount of the state directory in a mount namespace of its own, which then exits.
     */
    private LoopDevice attachInAGoneContainer(Path state) throws Exception {
        Path oldView = Files.createDirectory(dir.resolve("old-container"));
        Process attach = new ProcessBuilder("unshare", "--mount", "--propagation", "private", "sh", "-c",
                "mount --bind \"$0\" \"$1\" && exec losetup --find --show \"$1/pools/default/v.img\"",
                state.toString(), oldView.toString()).redirectErrorStream(true).start();
        String out = new String(attach.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertThat(attach.waitFor()).as(out).isZero();
        LoopDevice device = LoopDevice.fromPath(Path.of(out)).orElseThrow();
        cleanup.add(() -> Loop.detach(device));
        return device;
    }

    private Path fileOn(String fsType, String name, String data) throws IOException {
        Path mnt = Files.createDirectory(dir.resolve(name));
        Scratch.mount(cleanup, fsType, mnt, fsType, 0, data);
        return Scratch.sparseFile(mnt.resolve("disk.img"), 8 * MIB);
    }

    static byte[] pattern(int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i * 31 + 7);
        }
        return b;
    }
}
