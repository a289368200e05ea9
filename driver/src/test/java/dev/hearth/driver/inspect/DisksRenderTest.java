package dev.hearth.driver.inspect;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The parts of {@code hearth disks}' output that need no disk: the order of names, shortened cells, the probe's offset. */
class DisksRenderTest {

    @Test
    void disksAreListedInTheOrderPeopleCountThem() {
        List<String> names = new ArrayList<>(List.of("loop10", "sdb", "nvme10n1", "loop2", "sda", "nvme2n1", "sda1",
                "loop1048000", "vda", "loop0"));

        names.sort(DiskInspection::naturally);

        assertThat(names).containsExactly("loop0", "loop2", "loop10", "loop1048000", "nvme2n1", "nvme10n1", "sda",
                "sda1", "sdb", "vda");
    }

    @Test
    void aLongWwnKeepsItsStartAndEnd() {
        assertThat(DisksTable.shorten("eui.0025388b91b2c3d4", 20)).isEqualTo("eui.0025388b91b2c3d4");
        assertThat(DisksTable.shorten("t10.ATA     Samsung SSD 860 EVO 1TB     S3Z9NB0K123456X", 20))
                .isEqualTo("t10.ATA S..0K123456X").hasSize(20);
        assertThat(DisksTable.shorten("Samsung  SSD", 20)).isEqualTo("Samsung SSD");
        assertThat(DisksTable.shorten("", 20)).isEmpty();
    }

    @Test
    void theProbesWordsForDataNameItsOffset() {
        assertThat(DisksJson.nonZeroOffset("no known signature, but non-zero data at offset 538935296"))
                .contains(538935296L);
        assertThat(DisksJson.nonZeroOffset("something else")).isEmpty();
    }
}
