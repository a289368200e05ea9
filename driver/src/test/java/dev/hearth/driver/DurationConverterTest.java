package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine.TypeConversionException;

class DurationConverterTest {

    private final DurationConverter converter = new DurationConverter();

    @ParameterizedTest
    @CsvSource({"30s,PT30S", "2m,PT2M", "1h,PT1H", "500ms,PT0.5S", "PT45S,PT45S", "0s,PT0S", " 10S ,PT10S"})
    void readsDurationsAsOperatorsWriteThem(String text, String expected) {
        assertThat(converter.convert(text)).isEqualTo(Duration.parse(expected));
    }

    @ParameterizedTest
    @ValueSource(strings = {"-5s", "PT-5S", "-1ms"})
    void refusesNegativeDurationsNamingTheValue(String text) {
        assertThatThrownBy(() -> converter.convert(text))
                .isInstanceOf(TypeConversionException.class)
                .hasMessageContaining(text)
                .hasMessageContaining("negative");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "soon", "5", "5d", "s", "PTXS"})
    void refusesWhatIsNotADurationNamingTheValue(String text) {
        assertThatThrownBy(() -> converter.convert(text))
                .isInstanceOf(TypeConversionException.class)
                .hasMessageContaining("'" + text + "' is not a duration");
    }
}
