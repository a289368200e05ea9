package dev.hearth.linux;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

class ExclusiveDeviceTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    @Test
    void devNumbersDecodeAsGlibcDoes() {
        // makedev(8, 16) and makedev(259, 1048575) as glibc encodes them.
        assertThat(BlockDevices.major(0x810L)).isEqualTo(8);
        assertThat(BlockDevices.minor(0x810L)).isEqualTo(16);
        long big = (259L & 0xfff) << 8 | (259L & ~0xfffL) << 32 | (1048575L & 0xff) | (1048575L & ~0xffL) << 12;
        assertThat(BlockDevices.major(big)).isEqualTo(259);
        assertThat(BlockDevices.minor(big)).isEqualTo(1048575);
    }

    @Test
    @RequiresRoot
    void zeroOutDiscardAndUnmapEachLeaveZerosOnALoopDevice() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 16 * MIB);
        LoopDevice loop = Scratch.attach(cleanup, file, false, false);
        Disk disk = scanned(loop);
        byte[] data = new byte[(int) MIB];
        Arrays.fill(data, (byte) 0x5a);
        for (int i = 0; i < 3; i++) {
            Scratch.writeAt(loop.path(), i * 4 * MIB, data);
        }

        try (ExclusiveDevice device = ExclusiveDevice.open(loop.path(), disk.major(), disk.minor())) {
            assertThat(device.size()).isEqualTo(16 * MIB);
            device.zeroOut(0, MIB);
            device.discard(4 * MIB, MIB);
            device.zeroByUnmapping(8 * MIB, MIB);
            device.flush();
        }

        for (int i = 0; i < 3; i++) {
            assertThat(Scratch.readAt(loop.path(), i * 4 * MIB, (int) MIB)).containsOnly(0);
        }
    }

    @Test
    @RequiresRoot
    void anotherDevicesNumberIsRefusedWithoutWriting() throws IOException {
        LoopDevice loop = Scratch.attach(cleanup, Scratch.sparseFile(dir.resolve("disk.img"), 8 * MIB), false, false);
        Disk disk = scanned(loop);

        assertThatThrownBy(() -> ExclusiveDevice.open(loop.path(), disk.major(), disk.minor() + 1))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("not " + disk.major() + ":" + (disk.minor() + 1));
        assertThatThrownBy(() -> ExclusiveDevice.open(Files.createFile(dir.resolve("plain")), 7, 0))
                .isInstanceOf(IOException.class);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aMountedDeviceCannotBeOpened() throws Exception {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 64 * MIB);
        LoopDevice loop = Scratch.attach(cleanup, file, false, true);
        assertThat(new ProcessBuilder("mkfs.ext4", "-q", loop.path().toString()).inheritIO().start().waitFor()).isZero();
        Scratch.mount(cleanup, loop.path().toString(), Files.createDirectory(dir.resolve("mnt")), "ext4", 0, null);
        Disk disk = scanned(loop);

        assertThatThrownBy(() -> ExclusiveDevice.open(loop.path(), disk.major(), disk.minor()))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.EBUSY)).isTrue());
    }

    private static Disk scanned(LoopDevice loop) throws IOException {
        return DiskScan.named(new DiskScan().disks(), loop.path().getFileName().toString()).orElseThrow();
    }
}
