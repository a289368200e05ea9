package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.ThinPoolStatus.Failed;
import dev.hearth.linux.ThinPoolStatus.Mode;
import dev.hearth.linux.ThinPoolStatus.Working;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The thin-pool status line in each form dm-thin.c's pool_status writes. */
class ThinPoolStatusTest {

    @Test
    void aHealthyPoolAsCurrentKernelsWriteIt() {
        // As the kernel emits it: every field followed by a space, the low-water mark last.
        assertThat(ThinPoolStatus.parse("3 17/4096 128/1024 - rw discard_passdown queue_if_no_space - 1024 "))
                .isEqualTo(new Working(3, 17, 4096, 128, 1024, OptionalLong.empty(), Mode.READ_WRITE, false));
    }

    @Test
    void aHeldMetadataRootIsItsBlock() {
        assertThat(ThinPoolStatus.parse("12 200/4096 300/16384 4711 rw no_discard_passdown error_if_no_space - 1024"))
                .isEqualTo(new Working(12, 200, 4096, 300, 16384, OptionalLong.of(4711), Mode.READ_WRITE, false));
    }

    @Test
    void readOnlyAndOutOfDataSpaceAreModes() {
        assertThat(ThinPoolStatus.parse("1 10/4096 10/1024 - ro ignore_discard queue_if_no_space - 1024"))
                .extracting(s -> ((Working) s).mode()).isEqualTo(Mode.READ_ONLY);
        assertThat(ThinPoolStatus.parse("1 10/4096 1024/1024 - out_of_data_space discard_passdown queue_if_no_space - 1024"))
                .isEqualTo(new Working(1, 10, 4096, 1024, 1024, OptionalLong.empty(), Mode.OUT_OF_DATA_SPACE, false));
    }

    @Test
    void needsCheckIsSeen() {
        assertThat(ThinPoolStatus.parse("7 33/4096 5/1024 - ro discard_passdown error_if_no_space needs_check 1024"))
                .isEqualTo(new Working(7, 33, 4096, 5, 1024, OptionalLong.empty(), Mode.READ_ONLY, true));
    }

    @Test
    void olderKernelsWriteNoLowWaterMark() {
        assertThat(ThinPoolStatus.parse("0 10/4096 0/1024 - rw discard_passdown queue_if_no_space needs_check"))
                .isEqualTo(new Working(0, 10, 4096, 0, 1024, OptionalLong.empty(), Mode.READ_WRITE, true));
    }

    @Test
    void fieldsAfterTheKnownOnesAreIgnored() {
        assertThat(ThinPoolStatus.parse("0 10/4096 0/1024 - rw discard_passdown queue_if_no_space - 1024 whatever 5"))
                .isInstanceOf(Working.class);
    }

    @Test
    void transactionIdsAndCountsUseAllOf64Bits() {
        Working w = (Working) ThinPoolStatus.parse(
                "9223372036854775807 1/4096 4294967296/8589934592 - rw discard_passdown queue_if_no_space - 1024");
        assertThat(w.transactionId()).isEqualTo(Long.MAX_VALUE);
        assertThat(w.usedDataBlocks()).isEqualTo(1L << 32);
        assertThat(w.totalDataBlocks()).isEqualTo(1L << 33);
    }

    @ParameterizedTest
    @ValueSource(strings = {"Fail", "Error", "Fail\n", " Error "})
    void aFailedPoolHasOnlyTheKernelsWord(String status) {
        assertThat(ThinPoolStatus.parse(status)).isEqualTo(new Failed(status.strip()));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "",
        "0 10/4096 0/1024 -",                                                      // 3.x: no mode
        "0 10/4096 0/1024 - rw discard_passdown queue_if_no_space",                // no needs_check
        "0 10/4096 0/1024 - rx discard_passdown queue_if_no_space - 1024",         // unknown mode
        "0 10-4096 0/1024 - rw discard_passdown queue_if_no_space - 1024",         // not used/total
        "0 10/4096 /1024 - rw discard_passdown queue_if_no_space - 1024",
        "-1 10/4096 0/1024 - rw discard_passdown queue_if_no_space - 1024",        // signed
        "0 10/4096 0/1024 x rw discard_passdown queue_if_no_space - 1024",         // held root
        "0 10/4096 0/1024 - rw discard_passdown queue_if_no_space maybe 1024",     // needs_check
        "fail",
    })
    void anythingElseIsRefusedNamingTheLine(String status) {
        assertThatThrownBy(() -> ThinPoolStatus.parse(status))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not a thin-pool status")
                .hasMessageContaining("\"" + status + "\"");
    }
}
