package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BlockDevicesTest {

    @TempDir
    Path dir;

    @Test
    void regularFilesAndMissingPathsAreNotBlockDevices() throws IOException {
        Path file = Files.createFile(dir.resolve("file"));

        assertThat(BlockDevices.isBlockDevice(file)).isFalse();
        assertThat(BlockDevices.isBlockDevice(dir.resolve("missing"))).isFalse();
        assertThat(BlockDevices.isBlockDevice(Path.of("/dev/null"))).isFalse();
        assertThat(BlockDevices.deviceNumber(file)).isEmpty();
        assertThat(BlockDevices.deviceNumber(dir.resolve("missing"))).isEmpty();
        assertThat(BlockDevices.deviceNumber(Path.of("/dev/null"))).as("a character device").isEmpty();
    }

    @Test
    void sizeOfARegularFileIsEnotty() throws IOException {
        Path file = Files.createFile(dir.resolve("file"));

        assertThatThrownBy(() -> BlockDevices.size(file))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOTTY)).isTrue())
                .hasMessage("ioctl(" + file + ", BLKGETSIZE64): ENOTTY (Inappropriate ioctl for device)");
    }

    @Test
    void discardRejectsNegativeRanges() {
        assertThatThrownBy(() -> BlockDevices.discard(Path.of("/dev/null"), -1, 512))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void loopDeviceIsRecognisedFromItsPathOnly() {
        assertThat(LoopDevice.fromPath(Path.of("/dev/loop12"))).contains(new LoopDevice(12));
        assertThat(LoopDevice.fromPath(Path.of("/dev/loop-control"))).isEmpty();
        assertThat(LoopDevice.fromPath(Path.of("/dev/vda"))).isEmpty();
        assertThat(LoopDevice.fromPath(Path.of("/tmp/loop1"))).isEmpty();
        assertThat(new LoopDevice(3).path()).isEqualTo(Path.of("/dev/loop3"));
    }
}
