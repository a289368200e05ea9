package dev.hearth.storage;

/**
 * What a request asks for: at least {@code requiredBytes}, at most {@code limitBytes}; zero means
 * "not said". Turning it into a size is the pool's job, with its granularity and default.
 */
public record CapacityRange(long requiredBytes, long limitBytes) {

    public static final CapacityRange ANY = new CapacityRange(0, 0);

    public CapacityRange {
        if (requiredBytes < 0 || limitBytes < 0) {
            throw new StorageException.InvalidArgument("capacity_range bytes must not be negative: required_bytes="
                    + requiredBytes + ", limit_bytes=" + limitBytes);
        }
        if (limitBytes > 0 && requiredBytes > limitBytes) {
            throw new StorageException.InvalidArgument("capacity_range required_bytes " + requiredBytes
                    + " exceeds limit_bytes " + limitBytes);
        }
    }

    /**
     * The size to make: the required size rounded up to the granularity, else the default
     * (capped by the limit); never below {@code minimum}.
     *
     * @throws StorageException.OutOfRange when no multiple of the granularity fits the range
     */
    public long resolve(long granularity, long defaultSize, long minimum) {
        long wanted = requiredBytes > 0 ? requiredBytes : defaultSize;
        if (requiredBytes == 0 && limitBytes > 0) {
            wanted = Math.min(wanted, limitBytes);
        }
        long size = roundUp(Math.max(wanted, minimum), granularity);
        if (requiredBytes == 0 && limitBytes > 0 && size > limitBytes) {
            size = limitBytes / granularity * granularity;
        }
        if (size < minimum || (limitBytes > 0 && size > limitBytes) || size <= 0) {
            throw new StorageException.OutOfRange("no volume size in multiples of " + granularity
                    + " bytes (minimum " + minimum + ") fits required_bytes=" + requiredBytes
                    + ", limit_bytes=" + limitBytes);
        }
        return size;
    }

    /** Whether an existing volume of {@code size} bytes satisfies this range. */
    public boolean admits(long size) {
        return size >= requiredBytes && (limitBytes == 0 || size <= limitBytes);
    }

    static long roundUp(long bytes, long granularity) {
        long rounded = Math.ceilDiv(bytes, granularity) * granularity;
        if (rounded < bytes) {
            throw new StorageException.OutOfRange("size " + bytes + " overflows when rounded to " + granularity);
        }
        return rounded;
    }
}
