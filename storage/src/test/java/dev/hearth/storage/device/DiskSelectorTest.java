package dev.hearth.storage.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.Disk;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Which disks a pool spec's {@code disks}, {@code min-size}, {@code model} and {@code rotational} select, and why not. */
class DiskSelectorTest {

    private static final long GIB = 1L << 30;

    private static final Disk NVME = disk("nvme0n1", 1000 * GIB, "Samsung SSD 980 PRO 1TB", false,
            "/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_1TB_S5GXNF0R1", "/dev/disk/by-path/pci-0000:01:00.0-nvme-1");
    private static final Disk HDD = disk("sda", 4000 * GIB, "ST4000NM0035", true,
            "/dev/disk/by-id/ata-ST4000NM0035_ZC1A2B3C", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4");
    private static final Disk BARE = disk("vdb", 10 * GIB, "", false);

    @Test
    void aGlobMatchesTheDeviceNameOrAnyOfItsLinks() {
        assertThat(select("/dev/disk/by-id/nvme-*").refuses(NVME)).isEmpty();
        assertThat(select("/dev/disk/by-path/pci-0000:01:00.0-*").refuses(NVME)).isEmpty();
        assertThat(select("/dev/nvme*").refuses(NVME)).isEmpty();
        assertThat(select("/dev/disk/by-id/wwn-0x5000c500*").refuses(HDD)).isEmpty();
        assertThat(select("/dev/vd[b-z]").refuses(BARE)).isEmpty();
    }

    @Test
    void aGlobStarStopsAtASlash() {
        assertThat(select("/dev/*").refuses(HDD)).isEmpty();
        assertThat(select("/dev/disk/*").refuses(HDD)).as("by-id/... is one directory deeper").isPresent();
        assertThat(select("/dev/disk/**").refuses(HDD)).isEmpty();
        assertThat(select("/dev/disk/**").refuses(BARE)).as("no udev links at all").isPresent();
    }

    @Test
    void anyOfSeveralGlobsSelectsAndARefusalNamesThemAll() {
        DiskSelector selector = DiskSelector.parse("/dev/disk/by-id/nvme-* | /dev/vdb", null, null, null);

        assertThat(selector.refuses(NVME)).isEmpty();
        assertThat(selector.refuses(BARE)).isEmpty();
        assertThat(selector.refuses(HDD)).hasValue("no name of it matches /dev/disk/by-id/nvme-* | /dev/vdb");
    }

    @Test
    void whatAScanAsksBeforeReadingADeviceAgreesWithTheFullVerdictOnNames() {
        DiskSelector selector = DiskSelector.parse("/dev/loop7|/dev/disk/by-id/nvme-*|/dev/vd[b-z]", null, null, null);

        assertThat(selector.mayTake("/dev/loop7", List.of())).as("a literal name").isTrue();
        assertThat(selector.mayTake("/dev/loop70", List.of())).as("a literal is the whole name").isFalse();
        assertThat(selector.mayTake("/dev/loop", List.of())).isFalse();
        assertThat(selector.mayTake("/dev/vdc", List.of())).isTrue();
        assertThat(selector.mayTake("/dev/vda", List.of())).isFalse();
        assertThat(selector.mayTake("/dev/vdbb", List.of())).isFalse();
        assertThat(selector.mayTake("/dev/nvme0n1", NVME.links())).as("by a link").isTrue();
        assertThat(selector.mayTake("/dev/sda", HDD.links())).isFalse();
        for (Disk disk : List.of(NVME, HDD, BARE)) {
            assertThat(selector.mayTake(disk.path().toString(), disk.links()))
                    .isEqualTo(selector.refuses(disk).isEmpty());
        }
        assertThat(select("/dev/*").mayTake("/dev/sda", List.of())).isTrue();
        assertThat(select("/dev/disk/**").mayTake("/dev/sda", List.of())).isFalse();
    }

    @Test
    void theModelPatternMustMatchTheWholeModel() {
        assertThat(DiskSelector.parse("/dev/**", null, "Samsung SSD 9.*", null).refuses(NVME)).isEmpty();
        assertThat(DiskSelector.parse("/dev/**", null, "Samsung", null).refuses(NVME))
                .hasValue("model 'Samsung SSD 980 PRO 1TB' does not match Samsung");
        assertThat(DiskSelector.parse("/dev/**", null, ".*", null).refuses(BARE)).as("an empty model").isEmpty();
    }

    @Test
    void rotationalSelectsSpinningOrSolidState() {
        DiskSelector spinning = DiskSelector.parse("/dev/**", null, null, "true");
        DiskSelector solid = DiskSelector.parse("/dev/**", null, null, "FALSE");

        assertThat(spinning.refuses(HDD)).isEmpty();
        assertThat(spinning.refuses(NVME)).hasValue("non-rotational, and the pool takes only rotational disks");
        assertThat(solid.refuses(NVME)).isEmpty();
        assertThat(solid.refuses(HDD)).hasValue("rotational, and the pool takes only non-rotational disks");
    }

    @Test
    void aDiskBelowTheMinimumIsSelectedButTooSmall() {
        DiskSelector selector = DiskSelector.parse("/dev/**", "100Gi", null, null);

        assertThat(selector.refuses(BARE)).as("size is its own verdict, after use and read-only").isEmpty();
        assertThat(selector.tooSmall(BARE)).isTrue();
        assertThat(selector.tooSmall(NVME)).isFalse();
        assertThat(selector.minSizeBytes()).isEqualTo(100 * GIB);
        assertThat(DiskSelector.parse("/dev/**", null, null, null).tooSmall(BARE)).isFalse();
    }

    @Test
    void describeSpellsThePoolSpecKeysAndParsesBackToTheSameSelector() {
        DiskSelector selector = DiskSelector.parse("/dev/disk/by-id/nvme-*|/dev/sd[b-d]", "1536Mi", "Samsung.*",
                "false");

        assertThat(selector.describe())
                .isEqualTo("disks=/dev/disk/by-id/nvme-*|/dev/sd[b-d],min-size=1536Mi,model=Samsung.*,rotational=false");
        DiskSelector again = DiskSelector.parse("/dev/disk/by-id/nvme-*|/dev/sd[b-d]", "1536Mi", "Samsung.*", "false");
        assertThat(again.describe()).isEqualTo(selector.describe());
        assertThat(DiskSelector.parse("/dev/vdb", "1000000000", null, null).describe())
                .isEqualTo("disks=/dev/vdb,min-size=1000000000");
        assertThat(DiskSelector.parse("/dev/vdb", "2Ti", null, null).describe()).isEqualTo("disks=/dev/vdb,min-size=2Ti");
    }

    @Test
    void whatASpecGetsWrongIsSaid() {
        assertThatThrownBy(() -> DiskSelector.parse(" | ", null, null, null))
                .hasMessageContaining("needs at least one path glob");
        assertThatThrownBy(() -> DiskSelector.parse("disk/by-id/nvme-*", null, null, null))
                .hasMessage("disk path glob 'disk/by-id/nvme-*' must start with /dev/");
        assertThatThrownBy(() -> DiskSelector.parse("/dev/sd[b-", null, null, null))
                .hasMessageStartingWith("disk path glob '/dev/sd[b-' is not a glob");
        assertThatThrownBy(() -> DiskSelector.parse("/dev/sd*", null, "Samsung(", null))
                .hasMessageStartingWith("model=Samsung( is not a regular expression");
        assertThatThrownBy(() -> DiskSelector.parse("/dev/sd*", null, null, "yes"))
                .hasMessage("rotational=yes must be true or false");
        assertThatThrownBy(() -> DiskSelector.parse("/dev/sd*", "lots", null, null))
                .hasMessageContaining("is not a size");
    }

    private static DiskSelector select(String glob) {
        return new DiskSelector(List.of(glob), 0, Optional.empty(), Optional.empty());
    }

    static Disk disk(String name, long size, String model, boolean rotational, String... links) {
        return new Disk(name, Path.of("/dev", name), 8, 0, size, 512, 4096, rotational, false, false, "", model,
                "", "", List.of(links).stream().map(Path::of).toList(), Optional.empty(), List.of(), List.of(),
                List.of(), false);
    }
}
