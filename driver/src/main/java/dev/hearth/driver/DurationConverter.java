package dev.hearth.driver;

import java.time.Duration;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Durations as people write them ({@code 30s}, {@code 2m}, {@code 500ms}) or in ISO-8601 ({@code PT30S}).
 * Failures are {@link TypeConversionException}s, whose message picocli shows as it is.
 */
final class DurationConverter implements ITypeConverter<Duration> {

    @Override
    public Duration convert(String value) {
        Duration duration = parse(value);
        if (duration.isNegative()) {
            throw new TypeConversionException("'" + value + "' is negative; a duration is 0 or more");
        }
        return duration;
    }

    private static Duration parse(String value) {
        String v = value.trim().toLowerCase(java.util.Locale.ROOT);
        try {
            if (v.startsWith("pt")) {
                return Duration.parse(v);
            }
            if (v.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
            }
            long amount = Long.parseLong(v.substring(0, v.length() - 1));
            return switch (v.charAt(v.length() - 1)) {
                case 's' -> Duration.ofSeconds(amount);
                case 'm' -> Duration.ofMinutes(amount);
                case 'h' -> Duration.ofHours(amount);
                default -> throw new IllegalArgumentException();
            };
        } catch (RuntimeException e) {
            throw new TypeConversionException("'" + value + "' is not a duration; write e.g. 30s, 2m or 500ms");
        }
    }
}
