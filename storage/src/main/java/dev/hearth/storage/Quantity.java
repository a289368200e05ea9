package dev.hearth.storage;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Byte sizes as Kubernetes writes them: {@code 512Mi}, {@code 10Gi}, {@code 1G}, {@code 4096}. */
public final class Quantity {

    private static final Pattern FORM = Pattern.compile("(\\d+)([KMGTP]i?|k)?");

    private Quantity() {}

    public static long parse(String text) {
        Matcher m = FORM.matcher(text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException(Quoted.of(text) + " is not a size; write e.g. 4096, 512Mi, 10Gi or 1T");
        }
        long number = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "" : m.group(2);
        long factor = switch (unit) {
            case "" -> 1;
            case "k", "K" -> 1000L;
            case "Ki" -> 1L << 10;
            case "M" -> 1000L * 1000;
            case "Mi" -> 1L << 20;
            case "G" -> 1000L * 1000 * 1000;
            case "Gi" -> 1L << 30;
            case "T" -> 1000L * 1000 * 1000 * 1000;
            case "Ti" -> 1L << 40;
            case "P" -> 1000L * 1000 * 1000 * 1000 * 1000;
            case "Pi" -> 1L << 50;
            default -> throw new IllegalArgumentException("unknown unit in " + Quoted.of(text));
        };
        return Math.multiplyExact(number, factor);
    }

    /** A short human form for logs and the demo: 1.5 GiB, 64 MiB, 512 B. */
    public static String format(long bytes) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
        double value = bytes;
        int unit = 0;
        while (value >= 1024 && unit < units.length - 1) {
            value /= 1024;
            unit++;
        }
        return unit == 0 ? bytes + " B" : String.format(Locale.ROOT, "%.1f %s", value, units[unit]);
    }
}
