package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.ThinStatus.Failed;
import dev.hearth.linux.ThinStatus.Working;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The thin status line in each form dm-thin.c's thin_status writes. */
class ThinStatusTest {

    @Test
    void aVolumeWithMappedBlocksReportsTheLastSectorOfItsHighest() {
        assertThat(ThinStatus.parse("16384 49151")).isEqualTo(new Working(16384, OptionalLong.of(49151)));
    }

    @Test
    void anUntouchedVolumeHasNoHighestSector() {
        assertThat(ThinStatus.parse("0 -")).isEqualTo(new Working(0, OptionalLong.empty()));
        assertThat(ThinStatus.parse("0 -\n")).isEqualTo(new Working(0, OptionalLong.empty()));
    }

    @Test
    void withNothingMappedTheHighestSectorIsUnspecifiedAndIgnored() {
        assertThat(ThinStatus.parse("0 127")).isEqualTo(new Working(0, OptionalLong.empty()));
    }

    @ParameterizedTest
    @ValueSource(strings = {"Fail", "Error", "-", " Fail\n"})
    void aVolumeWithoutNumbersHasOnlyTheKernelsWord(String status) {
        assertThat(ThinStatus.parse(status)).isEqualTo(new Failed(status.strip()));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "128", "128 255 7", "-128 255", "128 x", "x 255", "fail", "128 -5"})
    void anythingElseIsRefusedNamingTheLine(String status) {
        assertThatThrownBy(() -> ThinStatus.parse(status))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not a thin status")
                .hasMessageContaining("\"" + status + "\"");
    }
}
