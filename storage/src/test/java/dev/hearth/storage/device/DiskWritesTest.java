package dev.hearth.storage.device;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Disk;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DiskWritesTest {

    @TempDir
    Path sys;

    private static Disk disk(String name, Optional<Path> backing) {
        return new Disk(name, Path.of("/dev", name), 7, 3, 64 << 20, 512, 512, false, false, false, "", "", "", "",
                List.of(), backing, List.of(), List.of(), List.of(), false);
    }

    private void stat(String name, String stat, String diskseq) throws Exception {
        Path dir = Files.createDirectories(sys.resolve(name));
        Files.writeString(dir.resolve("stat"), stat);
        if (diskseq != null) {
            Files.writeString(dir.resolve("diskseq"), diskseq + "\n");
        }
    }

    @Test
    void sectorsWrittenCountButReadsAndFlushesDoNot() throws Exception {
        DiskWrites.Reader reader = new DiskWrites.Reader(sys, "boot-1");
        Disk disk = disk("nvme0n1", Optional.empty());
        stat("nvme0n1", "  591894 1629 123151562 50619   319569 475469 170711091 639822 0 75212 703510 155 0 7809142 23"
                + " 68750 13044\n", "60980");
        DiskWrites before = reader.of(disk).orElseThrow();

        assertThat(before).isEqualTo(new DiskWrites("boot-1", 60980, "170711091,7809142", ""));
        stat("nvme0n1", "  600000 1629 999999999 50619   319569 475469 170711091 639822 0 75212 703510 155 0 7809142 99"
                + " 99999 13044\n", "60980");
        assertThat(reader.of(disk)).as("reads").contains(before);
        stat("nvme0n1", "  600000 1629 999999999 50619   319570 475469 170711091 639822 0 75212 703510 155 0 7809142 99"
                + " 99999 13044\n", "60980");
        assertThat(reader.of(disk)).as("a flush: a write request of no sectors").contains(before);
        stat("nvme0n1", "  600000 1629 999999999 50619   319571 475469 170711099 639822 0 75212 703510 155 0 7809142 99"
                + " 99999 13044\n", "60980");
        assertThat(reader.of(disk)).as("a write").isNotEqualTo(Optional.of(before));
        assertThat(new DiskWrites.Reader(sys, "boot-2").of(disk)).as("another boot").isNotEqualTo(Optional.of(before));
    }

    @Test
    void aLoopDevicesFileCountsAndAMissingDiskHasNoCounts() throws Exception {
        Path file = Files.write(sys.resolve("disk.img"), new byte[4096]);
        Disk disk = disk("loop3", Optional.of(file));
        stat("loop3", "1 0 8 0 0 0 0 0 0 0 0\n", null);
        DiskWrites.Reader reader = new DiskWrites.Reader(sys, "boot-1");
        DiskWrites before = reader.of(disk).orElseThrow();

        assertThat(before.diskseq()).isZero();
        assertThat(before.written()).isEqualTo("0");
        Files.setLastModifiedTime(file, FileTime.from(Instant.now().plusSeconds(5)));
        assertThat(reader.of(disk)).as("the file written past the device").isNotEqualTo(Optional.of(before));
        assertThat(reader.of(disk("loop9", Optional.empty()))).isEmpty();
    }
}
