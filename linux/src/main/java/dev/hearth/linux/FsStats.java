package dev.hearth.linux;

/**
 * {@code struct statvfs}. Block counts are in {@code fragmentSize} units (f_frsize), which is what
 * the byte figures multiply by; {@code blockSize} is only the preferred I/O size.
 */
public record FsStats(long blockSize, long fragmentSize, long totalBlocks, long freeBlocks, long availableBlocks,
                      long totalInodes, long freeInodes, long availableInodes, long flags) {

    /** {@code ST_RDONLY} in {@link #flags()}. */
    public static final long ST_RDONLY = 1;

    public long totalBytes() {
        return totalBlocks * fragmentSize;
    }

    /** Free including the blocks reserved for root. */
    public long freeBytes() {
        return freeBlocks * fragmentSize;
    }

    /** Free for an unprivileged writer: what a volume's user can still fill. */
    public long availableBytes() {
        return availableBlocks * fragmentSize;
    }

    public boolean readOnly() {
        return (flags & ST_RDONLY) != 0;
    }
}
