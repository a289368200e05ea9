package dev.hearth.storage.file;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.storage.file.FilePoolConfig.Reserve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class FilePoolConfigTest {

    private static final long GIB = 1L << 30;

    @ParameterizedTest
    @CsvSource({"10Gi,10737418240,10.0 GiB", "0,0,0", "512Mi,536870912,512.0 MiB", "1G,1000000000,953.7 MiB",
            "15,15,15 B"})
    void aReserveIsASize(String text, long bytes, String shown) {
        Reserve reserve = Reserve.parse(text);

        assertThat(reserve.bytesOf(100 * GIB)).isEqualTo(bytes);
        assertThat(reserve.bytesOf(GIB)).as("a size does not depend on the filesystem").isEqualTo(bytes);
        assertThat(reserve).hasToString(shown);
    }

    @ParameterizedTest
    @CsvSource({"15%,100,15", "15 %,200,30", "2.5%,100,2.5", "0%,100,0", "99.9%,1000,999", ".5%,200,1", "015%,100,15",
            "99.999999%,100000000,99999999"})
    void aReserveIsAShareOfTheFilesystem(String text, long filesystemGib, double reservedGib) {
        Reserve reserve = Reserve.parse(text);

        assertThat(reserve.bytesOf(filesystemGib * GIB)).isEqualTo((long) Math.ceil(reservedGib * GIB));
    }

    @Test
    void aShareRoundsUpToTheByteAndPrintsAsWritten() {
        assertThat(Reserve.parse("15%").bytesOf(101)).isEqualTo(16);
        assertThat(Reserve.parse("15%")).hasToString("15%");
        assertThat(Reserve.parse("2.50%")).hasToString("2.5%");
        assertThat(Reserve.parse("0.000001%")).hasToString("0.000001%");
        assertThat(Reserve.parse("12.345%")).hasToString("12.345%");
        assertThat(Reserve.DEFAULT).isEqualTo(Reserve.parse("15%"));
        assertThat(Reserve.DEFAULT).hasToString("15%");
    }

    @Test
    void aShareOfTheLargestFilesystemsDoesNotOverflow() {
        assertThat(Reserve.parse("15%").bytesOf(Long.MAX_VALUE)).isEqualTo(exactShare(Long.MAX_VALUE, "15"));
        assertThat(Reserve.parse("99.999999%").bytesOf(Long.MAX_VALUE))
                .isEqualTo(exactShare(Long.MAX_VALUE, "99.999999"));
        assertThat(Reserve.parse("2.5%").bytesOf((1L << 62) + 7)).isEqualTo(exactShare((1L << 62) + 7, "2.5"));
        assertThat(Reserve.parse("0.000001%").bytesOf(1)).as("any share of a byte rounds up to it").isEqualTo(1);
    }

    @Test
    void aSeventhDecimalIsRefusedAsSuch() {
        assertThatThrownBy(() -> Reserve.parse("0.0000001%")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("a reserve of '0.0000001%' has more than 6 decimals");
    }

    private static long exactShare(long filesystemBytes, String percent) {
        return new java.math.BigDecimal(filesystemBytes).multiply(new java.math.BigDecimal(percent))
                .divide(java.math.BigDecimal.valueOf(100), 0, java.math.RoundingMode.UP).longValueExact();
    }

    @ParameterizedTest
    @ValueSource(strings = {"lots", "%", "-1%", "100%", "150%", "ten%", "1.5Gi", ".%", "1.2.3%", "1e1%", "+5%",
            "0.0000001%", "100.0%", "0100%", "99999999999999999999999%", "1,5%"})
    void anythingElseIsRefusedSayingWhatAReserveIs(String text) {
        assertThatThrownBy(() -> Reserve.parse(text)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(text);
    }

    @Test
    void theShortConstructorsKeepNoReserve() {
        assertThat(new FilePoolConfig("a", java.nio.file.Path.of("/x"), GIB).reserve()).isEqualTo(Reserve.NONE);
    }
}
