package dev.hearth.storage.device;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Disk;
import dev.hearth.storage.device.DiskWiper.Discard;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How wipe=discard decides that a discard leaves zeros, from a disk's queue limits in sysfs. */
class DiskWiperTest {

    @TempDir
    Path sys;

    private Disk disk(String name, Optional<Path> backing, String... queue) throws Exception {
        Path dir = Files.createDirectories(sys.resolve(name).resolve("queue"));
        for (int i = 0; i < queue.length; i += 2) {
            Files.writeString(dir.resolve(queue[i]), queue[i + 1] + "\n");
        }
        return new Disk(name, Path.of("/dev", name), 259, 0, 1L << 30, 512, 4096, false, false, false, "", "", "",
                "", List.of(), backing, List.of(), List.of(), List.of(), false);
    }

    @Test
    void aLoopDeviceThatDiscardsPunchesHolesInItsFile() throws Exception {
        DiskWiper wiper = new DiskWiper(sys);

        assertThat(wiper.discardOn(disk("loop3", Optional.of(Path.of("/srv/disk.img")), "discard_max_bytes",
                "4294966784", "write_zeroes_unmap_max_bytes", "0"))).isEqualTo(Discard.PUNCH_LOOP_FILE);
        assertThat(wiper.discardOn(disk("loop4", Optional.of(Path.of("/srv/other.img")), "discard_max_bytes", "0")))
                .as("a file whose filesystem cannot punch holes").isEqualTo(Discard.NONE);
    }

    @Test
    void aDiskThatZeroesByUnmappingIsDiscardedWithTheKernelsGuaranteeAndAnyOtherIsZeroed() throws Exception {
        DiskWiper wiper = new DiskWiper(sys);

        assertThat(wiper.discardOn(disk("nvme0n1", Optional.empty(), "discard_max_bytes", "2199023255040",
                "write_zeroes_unmap_max_bytes", "2199023255040"))).isEqualTo(Discard.UNMAP_ZEROING);
        assertThat(wiper.discardOn(disk("nvme1n1", Optional.empty(), "discard_max_bytes", "2199023255040",
                "discard_zeroes_data", "0", "write_zeroes_unmap_max_bytes", "0"))).isEqualTo(Discard.NONE);
        assertThat(wiper.discardOn(disk("sda", Optional.empty(), "discard_max_bytes", "2147450880")))
                .as("a kernel older than 6.17, which does not say").isEqualTo(Discard.NONE);
    }
}
