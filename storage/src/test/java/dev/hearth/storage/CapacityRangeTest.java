package dev.hearth.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class CapacityRangeTest {

    private static final long MIB = 1L << 20;
    private static final long GIB = 1L << 30;

    @Test
    void requiredSizeIsRoundedUpToTheGranularity() {
        assertThat(new CapacityRange(MIB + 1, 0).resolve(MIB, GIB, MIB)).isEqualTo(2 * MIB);
        assertThat(new CapacityRange(1, 0).resolve(MIB, GIB, MIB)).isEqualTo(MIB);
        assertThat(new CapacityRange(5 * MIB, 0).resolve(MIB, GIB, MIB)).isEqualTo(5 * MIB);
    }

    @Test
    void roundedSizeWithinTheLimitIsAccepted() {
        assertThat(new CapacityRange(MIB + 1, 2 * MIB).resolve(MIB, GIB, MIB)).isEqualTo(2 * MIB);
        assertThat(new CapacityRange(3 * MIB, 3 * MIB).resolve(MIB, GIB, MIB)).isEqualTo(3 * MIB);
    }

    @Test
    void requiredSizeBelowTheMinimumGetsTheMinimum() {
        assertThat(new CapacityRange(4096, 0).resolve(MIB, GIB, 16 * MIB)).isEqualTo(16 * MIB);
    }

    @Test
    void defaultSizeIsUsedWhenNothingIsAsked() {
        assertThat(CapacityRange.ANY.resolve(MIB, GIB, MIB)).isEqualTo(GIB);
        assertThat(CapacityRange.ANY.resolve(MIB, 10 * MIB + 1, MIB)).isEqualTo(11 * MIB);
    }

    @Test
    void defaultSizeIsCappedByTheLimit() {
        assertThat(new CapacityRange(0, 100 * MIB).resolve(MIB, GIB, MIB)).isEqualTo(100 * MIB);
        // the limit is not a multiple of the granularity: the largest multiple below it
        assertThat(new CapacityRange(0, 100 * MIB + 512).resolve(MIB, GIB, MIB)).isEqualTo(100 * MIB);
        // a default below the limit stays as it is
        assertThat(new CapacityRange(0, 2 * GIB).resolve(MIB, GIB, MIB)).isEqualTo(GIB);
    }

    @Test
    void limitSmallerThanTheGranularityIsOutOfRange() {
        assertThatThrownBy(() -> new CapacityRange(0, 1000).resolve(MIB, GIB, MIB))
                .isInstanceOf(StorageException.OutOfRange.class)
                .hasMessageContaining("limit_bytes=1000");
    }

    @Test
    void rangeWithNoMultipleOfTheGranularityInsideIsOutOfRange() {
        assertThatThrownBy(() -> new CapacityRange(MIB + 1, MIB + 1000).resolve(MIB, GIB, MIB))
                .isInstanceOf(StorageException.OutOfRange.class)
                .hasMessageContaining("required_bytes=" + (MIB + 1));
    }

    @Test
    void limitBelowTheMinimumIsOutOfRange() {
        assertThatThrownBy(() -> new CapacityRange(0, 8 * MIB).resolve(MIB, GIB, 16 * MIB))
                .isInstanceOf(StorageException.OutOfRange.class);
        assertThatThrownBy(() -> new CapacityRange(MIB, 8 * MIB).resolve(MIB, GIB, 16 * MIB))
                .isInstanceOf(StorageException.OutOfRange.class);
    }

    @Test
    void sizeThatOverflowsWhenRoundedIsOutOfRange() {
        assertThatThrownBy(() -> new CapacityRange(Long.MAX_VALUE, 0).resolve(MIB, GIB, MIB))
                .isInstanceOf(StorageException.OutOfRange.class);
    }

    @Test
    void requiredAboveLimitIsInvalid() {
        assertThatThrownBy(() -> new CapacityRange(2 * MIB, MIB))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining(Long.toString(2 * MIB))
                .hasMessageContaining(Long.toString(MIB));
    }

    @Test
    void negativeBytesAreInvalid() {
        assertThatThrownBy(() -> new CapacityRange(-1, 0))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining("required_bytes=-1");
        assertThatThrownBy(() -> new CapacityRange(0, -5))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining("limit_bytes=-5");
    }

    @Test
    void admitsSizesInsideTheRangeOnly() {
        CapacityRange range = new CapacityRange(2 * MIB, 4 * MIB);

        assertThat(range.admits(2 * MIB)).isTrue();
        assertThat(range.admits(3 * MIB)).isTrue();
        assertThat(range.admits(4 * MIB)).isTrue();
        assertThat(range.admits(2 * MIB - 1)).isFalse();
        assertThat(range.admits(4 * MIB + 1)).isFalse();
    }

    @Test
    void admitsAnySizeAboveRequiredWhenThereIsNoLimit() {
        assertThat(new CapacityRange(MIB, 0).admits(Long.MAX_VALUE)).isTrue();
        assertThat(new CapacityRange(MIB, 0).admits(MIB - 1)).isFalse();
        assertThat(CapacityRange.ANY.admits(0)).isTrue();
    }
}
