package dev.hearth.linux;

import java.util.OptionalLong;

/**
 * The status line of a {@code thin} target, one thin volume of a pool (the kernel's
 * thin-provisioning.rst, "Status"): how much of it the pool has given blocks, or the single word the
 * kernel writes when it cannot tell.
 */
public sealed interface ThinStatus {

    /**
     * A thin volume that reports its mapping.
     *
     * @param mappedSectors       the 512-byte sectors it has blocks for, whole pool blocks (chunks)
     * @param highestMappedSector the last sector of its highest mapped block; empty when nothing is mapped
     */
    record Working(long mappedSectors, OptionalLong highestMappedSector) implements ThinStatus {}

    /**
     * A thin volume with no numbers to give: {@code Fail} (its pool failed), {@code Error} (the kernel
     * could not read the pool's metadata) or {@code -} (it is not open in its pool).
     *
     * @param word the kernel's word, as it wrote it
     */
    record Failed(String word) implements ThinStatus {}

    /**
     * Reads {@code <nr mapped sectors> <highest mapped sector>|-}, or one of the words of {@link Failed}.
     *
     * @throws IllegalArgumentException if it is neither
     */
    static ThinStatus parse(String status) {
        String text = status.strip();
        if (text.equals("Fail") || text.equals("Error") || text.equals("-")) {
            return new Failed(text);
        }
        String[] fields = text.split("\\s+");
        if (fields.length != 2) {
            throw new IllegalArgumentException("not a thin status (needs 2 fields): \"" + status + "\"");
        }
        try {
            long mapped = number(fields[0]);
            // With nothing mapped the kernel writes "-"; what it would write otherwise is unspecified.
            OptionalLong highest = mapped == 0 || fields[1].equals("-")
                    ? OptionalLong.empty() : OptionalLong.of(number(fields[1]));
            return new Working(mapped, highest);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not a thin status: \"" + status + "\": " + e.getMessage(), e);
        }
    }

    /** Unsigned decimal, as the kernel's %llu writes it; no sign, no spaces. */
    private static long number(String field) {
        if (field.isEmpty() || !field.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new IllegalArgumentException("not a number: " + field);
        }
        return Long.parseUnsignedLong(field);
    }
}
