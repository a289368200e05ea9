package dev.hearth.linux;

import java.util.Arrays;
import java.util.OptionalLong;

/**
 * The status line of a {@code thin-pool} target (the kernel's thin-provisioning.rst, "Status"):
 * either the pool's numbers, or the single word the kernel writes when it has none.
 */
public sealed interface ThinPoolStatus {

    /**
     * What the pool lets through; the kernel writes {@code ro} both for a pool that failed into
     * read-only mode and for one whose metadata device is full.
     */
    enum Mode {
        READ_WRITE("rw"), READ_ONLY("ro"), OUT_OF_DATA_SPACE("out_of_data_space");

        private final String word;

        Mode(String word) {
            this.word = word;
        }

        /** As the status line writes it. */
        public String word() {
            return word;
        }
    }

    /**
     * A pool that reports its usage. Blocks of metadata are 4 KiB; blocks of data are the pool's
     * chunk size ({@code lvs -o chunk_size}, the table's data block size).
     *
     * @param transactionId    LVM's counter of the metadata changes it sent the pool
     * @param heldMetadataRoot the metadata snapshot userspace reserved for reading, if any
     * @param needsCheck       a metadata operation failed: the pool must be deactivated and
     *                         checked (thin_check, lvconvert --repair) before it works fully again
     */
    record Working(long transactionId, long usedMetadataBlocks, long totalMetadataBlocks, long usedDataBlocks,
            long totalDataBlocks, OptionalLong heldMetadataRoot, Mode mode, boolean needsCheck)
            implements ThinPoolStatus {}

    /**
     * A pool with no numbers to give: {@code Fail} (it failed, no I/O passes; the recovery tools
     * must run) or {@code Error} (the kernel could not read its metadata to answer).
     *
     * @param word the kernel's word, as it wrote it
     */
    record Failed(String word) implements ThinPoolStatus {}

    /**
     * Reads the status as kernels since 4.2 write it: {@code <transaction id>
     * <used>/<total metadata blocks> <used>/<total data blocks> <held root>|- rw|ro|out_of_data_space
     * <discards> <error|queue>_if_no_space needs_check|-}, then fields this ignores
     * ({@code metadata_low_watermark} in newer kernels, any later ones).
     *
     * @throws IllegalArgumentException if it is neither that nor one of the words of {@link Failed}
     */
    static ThinPoolStatus parse(String status) {
        String text = status.strip();
        if (text.equals("Fail") || text.equals("Error")) {
            return new Failed(text);
        }
        String[] fields = text.split("\\s+");
        if (fields.length < 8) {
            throw new IllegalArgumentException("not a thin-pool status (needs 8 fields): \"" + status + "\"");
        }
        try {
            long[] metadata = fraction(fields[1]);
            long[] data = fraction(fields[2]);
            OptionalLong held = fields[3].equals("-") ? OptionalLong.empty() : OptionalLong.of(number(fields[3]));
            Mode mode = Arrays.stream(Mode.values()).filter(m -> m.word().equals(fields[4])).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("unknown mode " + fields[4]));
            boolean needsCheck = switch (fields[7]) {
                case "needs_check" -> true;
                case "-" -> false;
                default -> throw new IllegalArgumentException("neither needs_check nor -: " + fields[7]);
            };
            return new Working(number(fields[0]), metadata[0], metadata[1], data[0], data[1], held, mode, needsCheck);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not a thin-pool status: \"" + status + "\": " + e.getMessage(), e);
        }
    }

    private static long[] fraction(String field) {
        int slash = field.indexOf('/');
        if (slash < 0) {
            throw new IllegalArgumentException("not used/total: " + field);
        }
        return new long[] {number(field.substring(0, slash)), number(field.substring(slash + 1))};
    }

    /** Unsigned decimal, as the kernel's %llu writes it; no sign, no spaces. */
    private static long number(String field) {
        if (field.isEmpty() || !field.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new IllegalArgumentException("not a number: " + field);
        }
        return Long.parseUnsignedLong(field);
    }
}
