package dev.hearth.storage.fs;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Capabilities;
import dev.hearth.linux.FileSystems;
import dev.hearth.linux.FsStats;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.UserModeLinux;
import dev.hearth.storage.tool.ToolRunner;
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
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NodeExpandVolume's ext4 path for real: a mounted ext4 grows online (resize2fs, which asks the
 * kernel through EXT4_IOC_RESIZE_FS) and keeps its data. The kernel wants CAP_SYS_RESOURCE for
 * that, which the test hosts' root lacks; there the scenario runs in a user-mode Linux guest,
 * whose root has it, on the same production code and host tools.
 */
@RequiresTools({"mkfs.ext4", "resize2fs", "e2fsck", "blkid"})
class Ext4OnlineGrowUmlTest {

    private static final long OLD_SIZE = 64 * MIB;
    private static final long NEW_SIZE = 128 * MIB;
    private static final long DATA = 8 * MIB;
    /** With DATA, more than the old filesystem could hold. */
    private static final long MORE = 48 * MIB;

    @TempDir
    Path dir;

    @Test
    void aMountedExt4GrowsOnlineToItsGrownLoopDeviceAndKeepsItsData() throws Exception {
        if (Capabilities.effective(Capabilities.CAP_SYS_RESOURCE)
                && Capabilities.effective(Capabilities.CAP_SYS_ADMIN)) {
            growOnline(dir);
            return;
        }
        UserModeLinux.assumeAvailable("online ext4 growth needs CAP_SYS_RESOURCE (and mounting CAP_SYS_ADMIN),"
                + " which this process lacks");
        UserModeLinux.Result guest = UserModeLinux.runInGuest(
                Ext4OnlineGrowUmlTest.class, "growOnline", dir, Duration.ofMinutes(3));
        assertThat(guest.output()).as(guest.describe()).contains("grown online from ");
        System.out.println(guest.describe()); // boot and run times, for the test report
    }

    /** The scenario; on a capable host directly, else as the guest's whole job. */
    static void growOnline(Path dir) throws IOException {
        ToolRunner tools = new ToolRunner();
        List<List<String>> ran = new ArrayList<>();
        Grower grower = new Grower((argv, timeout) -> {
            ran.add(argv);
            return tools.run(argv, timeout);
        });
        try (Cleanup cleanup = new Cleanup()) {
            Path image = dir.resolve("ext4.img");
            cleanup.add(() -> Files.deleteIfExists(image));
            Scratch.resize(image, OLD_SIZE);
            LoopDevice device = Scratch.attach(cleanup, image, false, true);
            new Formatter(tools).format(device.path(), FilesystemType.EXT4);
            Path mnt = Files.createDirectory(dir.resolve("mnt"));
            cleanup.add(() -> Files.deleteIfExists(mnt));
            Scratch.mount(cleanup, device.path().toString(), mnt, "ext4", 0, null);
            writePattern(mnt.resolve("data"), DATA, 1);
            FsStats before = FileSystems.statvfs(mnt);
            assertThat(DATA + MORE).as("the test's data must not fit the old filesystem")
                    .isGreaterThan(before.totalBytes());

            Scratch.resize(image, NEW_SIZE);
            Loop.setCapacity(device);
            grower.growMounted(device.path(), mnt, FilesystemType.EXT4);

            long after = FileSystems.statvfs(mnt).totalBytes();
            assertThat(ran).containsExactly(List.of("resize2fs", device.path().toString()));
            assertThat(MountInfo.at(mnt)).as("still mounted, never unmounted").isPresent();
            assertThat(after).as("statvfs total after the grow").isGreaterThan(110 * MIB).isLessThanOrEqualTo(NEW_SIZE);
            assertThat(FilesystemSize.of(device.path())).hasValue(NEW_SIZE);
            assertPattern(mnt.resolve("data"), DATA, 1);
            writePattern(mnt.resolve("more"), MORE, 2); // needs the new block groups

            grower.growMounted(device.path(), mnt, FilesystemType.EXT4);
            assertThat(ran).as("a second grow has nothing to do").hasSize(1);

            // What is on the device, not what the page cache remembers.
            Mounts.unmount(mnt);
            tools.run(List.of("e2fsck", "-f", "-n", device.path().toString()), Duration.ofMinutes(2));
            Mounts.mount(device.path().toString(), mnt, "ext4", 0, null);
            assertPattern(mnt.resolve("data"), DATA, 1);
            assertPattern(mnt.resolve("more"), MORE, 2);
            System.out.println("grown online from " + before.totalBytes() + " to " + after + " bytes, data intact");
        }
    }

    // The data: one random MiB, every 1 KiB block of it stamped with its offset in the file, so a
    // block written to the wrong place shows. Streamed a MiB at a time: in the guest every page of
    // a large array costs a slow page fault.

    private static void writePattern(Path file, long size, long seed) throws IOException {
        byte[] base = base(seed);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (long offset = 0; offset < size; offset += MIB) {
                ByteBuffer chunk = chunk(base, offset);
                while (chunk.hasRemaining()) {
                    channel.write(chunk);
                }
            }
            channel.force(true);
        }
    }

    private static void assertPattern(Path file, long size, long seed) throws IOException {
        byte[] base = base(seed);
        ByteBuffer actual = ByteBuffer.allocate(Math.toIntExact(MIB));
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            assertThat(channel.size()).as(file + " size").isEqualTo(size);
            for (long offset = 0; offset < size; offset += MIB) {
                actual.clear();
                while (actual.hasRemaining() && channel.read(actual) >= 0) {
                    // until the MiB is full
                }
                int mismatch = Arrays.mismatch(actual.array(), chunk(base, offset).array());
                assertThat(mismatch).as("%s differs from what was written at byte %d", file,
                        offset + Math.max(mismatch, 0)).isEqualTo(-1);
            }
        }
    }

    private static byte[] base(long seed) {
        byte[] bytes = new byte[Math.toIntExact(MIB)];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private static ByteBuffer chunk(byte[] base, long offset) {
        ByteBuffer chunk = ByteBuffer.wrap(base.clone());
        for (int block = 0; block < MIB; block += 1024) {
            chunk.putLong(block, offset + block);
        }
        return chunk;
    }
}
