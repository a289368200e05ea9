package dev.hearth.storage.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.Disk;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.device.VolumeRecord.Empty;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class SmallestFitTest {

    private static final long GIB = 1L << 30;

    private static FreeDisks.Free disk(String name, long size) {
        return disk(name, name.hashCode() & 0xff, size);
    }

    private static FreeDisks.Free disk(String name, int minor, long size) {
        Disk disk = new Disk(name, Path.of("/dev", name), 259, minor, size, 512, 4096, false, false,
                false, "", "model", "serial-" + name, "", List.of(), Optional.empty(), List.of(), List.of(), List.of(),
                false);
        return new FreeDisks.Free(disk, DiskIdentity.of(disk).orElseThrow(), Empty.SAMPLED, Optional.empty());
    }

    private static List<String> names(List<FreeDisks.Free> free) {
        return free.stream().map(f -> f.disk().name()).toList();
    }

    @Test
    void theSmallestDiskThatHoldsTheRequestComesFirstAndEqualSizesGoByDeviceNumber() {
        List<FreeDisks.Free> free = List.of(disk("loop12", 12, 4 * GIB), disk("loop1", 1, 1 * GIB),
                disk("loop10", 10, 2 * GIB), disk("loop5", 5, 2 * GIB));

        assertThat(names(SmallestFit.order(free, new CapacityRange(2 * GIB - 1, 0), "p")))
                .containsExactly("loop5", "loop10", "loop12");
        assertThat(names(SmallestFit.order(free, CapacityRange.ANY, "p")))
                .containsExactly("loop1", "loop5", "loop10", "loop12");
    }

    @Test
    void aLimitAdmitsOnlyDisksNoLargerThanIt() {
        List<FreeDisks.Free> free = List.of(disk("a", 1 * GIB), disk("b", 2 * GIB), disk("c", 4 * GIB));

        assertThat(names(SmallestFit.order(free, new CapacityRange(GIB, 2 * GIB), "p"))).containsExactly("a", "b");
        assertThat(names(SmallestFit.order(free, new CapacityRange(2 * GIB, 2 * GIB), "p"))).containsExactly("b");
    }

    @Test
    void noFreeDiskLargeEnoughIsExhaustion() {
        assertThatThrownBy(() -> SmallestFit.order(List.of(disk("a", GIB)), new CapacityRange(2 * GIB, 0), "fast"))
                .isInstanceOf(StorageException.Exhausted.class)
                .hasMessageContaining("pool 'fast' has no free disk of 2.0 GiB or more; its free disks: /dev/a 1.0 GiB");
        assertThatThrownBy(() -> SmallestFit.order(List.of(), CapacityRange.ANY, "fast"))
                .isInstanceOf(StorageException.Exhausted.class).hasMessageContaining("no free disk at all");
    }

    @Test
    void aLimitBelowEveryLargeEnoughDiskIsOutOfRange() {
        List<FreeDisks.Free> free = List.of(disk("a", GIB), disk("b", 4 * GIB));

        assertThatThrownBy(() -> SmallestFit.order(free, new CapacityRange(2 * GIB, 3 * GIB), "fast"))
                .isInstanceOf(StorageException.OutOfRange.class)
                .hasMessageContaining("limit_bytes " + 3 * GIB)
                .hasMessageContaining("the smallest is " + 4 * GIB + " bytes");
    }
}
