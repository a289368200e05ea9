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

    /**
     * This range raised to at least {@code minimum} bytes, for {@code what} (e.g. "an xfs filesystem")
     * that cannot be made smaller: a required size below it is rounded up, a limit below it is refused.
     *
     * @throws StorageException.OutOfRange if the limit is below the minimum
     */
    public CapacityRange atLeast(long minimum, String what) {
        if (limitBytes > 0 && limitBytes < minimum) {
            throw new StorageException.OutOfRange(what + " needs at least " + minimum + " bytes ("
                    + Quantity.format(minimum) + "), but limit_bytes is " + limitBytes);
        }
        return requiredBytes >= minimum ? this : new CapacityRange(minimum, limitBytes);
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
