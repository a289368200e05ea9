package dev.hearth.storage.file;

import dev.hearth.storage.PoolFeature;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.VolumeId;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * How a file pool is set up on this node.
 *
 * @param capacityBytes the most its volumes may add up to; 0 means the size of the filesystem
 *     the directory lives on, less the reserve
 * @param reserve what the pool leaves free on that filesystem for everything else on it
 * @param directIo attach loop devices with direct I/O, so the page cache holds data once, not twice
 * @param features what the pool offers of what a file pool can do (all of it unless switched off):
 *     a pool without a feature refuses it for its own volumes while other pools still offer it
 */
public record FilePoolConfig(String name, Path directory, long capacityBytes, Reserve reserve,
        Provisioning provisioning, boolean directIo, long defaultVolumeBytes, Set<PoolFeature> features)
        implements dev.hearth.storage.PoolConfig {

    public static final long DEFAULT_VOLUME_BYTES = 1L << 30;

    public FilePoolConfig {
        if (!VolumeId.isPoolName(name)) {
            throw new IllegalArgumentException("pool name '" + name
                    + "' must be 1-32 characters of a-z, 0-9 and '-', starting and ending with a letter or digit");
        }
        if (!directory.isAbsolute()) {
            throw new IllegalArgumentException("pool '" + name + "': directory must be absolute: " + directory);
        }
        if (capacityBytes < 0 || defaultVolumeBytes <= 0) {
            throw new IllegalArgumentException("pool '" + name + "': sizes must be positive");
        }
        Objects.requireNonNull(reserve, "reserve");
        directory = directory.normalize();
        features = Set.copyOf(features);
    }

    @Override
    public String kind() {
        return "file";
    }

    /** A pool with every feature a file pool has. */
    public FilePoolConfig(String name, Path directory, long capacityBytes, Reserve reserve,
            Provisioning provisioning, boolean directIo, long defaultVolumeBytes) {
        this(name, directory, capacityBytes, reserve, provisioning, directIo, defaultVolumeBytes,
                EnumSet.allOf(PoolFeature.class));
    }

    /** A pool limited by its capacity alone: no reserve (tests and benchmarks on scratch filesystems). */
    public FilePoolConfig(String name, Path directory, long capacityBytes, Provisioning provisioning,
            boolean directIo, long defaultVolumeBytes) {
        this(name, directory, capacityBytes, Reserve.NONE, provisioning, directIo, defaultVolumeBytes);
    }

    public FilePoolConfig(String name, Path directory, long capacityBytes) {
        this(name, directory, capacityBytes, Provisioning.THICK, true, DEFAULT_VOLUME_BYTES);
    }

    /** This pool with {@code off} switched off. */
    public FilePoolConfig without(PoolFeature... off) {
        EnumSet<PoolFeature> left = EnumSet.allOf(PoolFeature.class);
        left.retainAll(features);
        for (PoolFeature feature : off) {
            left.remove(feature);
        }
        return new FilePoolConfig(name, directory, capacityBytes, reserve, provisioning, directIo, defaultVolumeBytes,
                left);
    }

    /**
     * What a pool leaves free on its filesystem: a size ({@code 10Gi}) or a share of the
     * filesystem's size ({@code 15%}). Exactly one of the two is non-zero, or neither for none.
     *
     * <p>The default, 15%, is where the kubelet's default eviction thresholds start: with the
     * images on the node's root filesystem, {@code imagefs.available<15%} puts the node into
     * DiskPressure. A pool on a disk of its own can do with less.
     */
    public record Reserve(long bytes, long microPercent) {

        /** 100% in {@link #microPercent}'s unit, a millionth of a percent. */
        private static final long WHOLE = 100_000_000;
        private static final int FRACTION_DIGITS = 6;

        public static final Reserve NONE = new Reserve(0, 0);
        public static final Reserve DEFAULT = new Reserve(0, 15 * WHOLE / 100);

        // Plain long arithmetic rather than BigDecimal: BigDecimal's class initialisation alone took
        // 10-15 ms of the daemon's start, before the socket was up (issue 11).
        public Reserve {
            if (bytes < 0 || microPercent < 0 || microPercent >= WHOLE) {
                throw new IllegalArgumentException("a reserve is a size or a percentage from 0 to below 100");
            }
            if (bytes > 0 && microPercent > 0) {
                throw new IllegalArgumentException("a reserve is a size or a percentage, not both");
            }
        }

        /** {@code 10Gi}, {@code 0} or {@code 15%} (a fraction such as {@code 2.5%} too, to 6 decimals). */
        public static Reserve parse(String text) {
            String value = text.strip();
            String form = "'" + text + "' is neither a size nor a percentage; write e.g. 10Gi, 0 or 15%";
            if (!value.endsWith("%")) {
                try {
                    return new Reserve(Quantity.parse(value), 0);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(form);
                }
            }
            long micro = microPercent(value.substring(0, value.length() - 1).strip());
            if (micro == -1) {
                throw new IllegalArgumentException(form);
            }
            if (micro == -2) {
                throw new IllegalArgumentException("a reserve of '" + text + "' has more than " + FRACTION_DIGITS
                        + " decimals");
            }
            if (micro >= WHOLE) {
                throw new IllegalArgumentException("a reserve of '" + text + "' is not from 0% to below 100%");
            }
            return new Reserve(0, micro);
        }

        /**
         * {@code digits[.digits]} in millionths, at most {@link #WHOLE}; -1 if it is no such number,
         * -2 if it has more decimals than a millionth.
         */
        private static long microPercent(String number) {
            int dot = number.indexOf('.');
            String whole = dot < 0 ? number : number.substring(0, dot);
            String fraction = dot < 0 ? "" : number.substring(dot + 1);
            if (whole.isEmpty() && fraction.isEmpty() || !digits(whole) || !digits(fraction)) {
                return -1;
            }
            if (fraction.length() > FRACTION_DIGITS) {
                return -2;
            }
            int leadingZeros = 0;
            while (leadingZeros < whole.length() && whole.charAt(leadingZeros) == '0') {
                leadingZeros++;
            }
            if (whole.length() - leadingZeros > 3) {
                return WHOLE; // 1000% and more: out of range, said as such
            }
            long micro = whole.isEmpty() ? 0 : Long.parseLong(whole) * 1_000_000;
            return micro + (fraction.isEmpty() ? 0 : Long.parseLong((fraction + "000000").substring(0, FRACTION_DIGITS)));
        }

        private static boolean digits(String text) {
            return text.chars().allMatch(c -> c >= '0' && c <= '9');
        }

        /** Whether it is a share of the filesystem rather than a size. */
        public boolean isShare() {
            return microPercent > 0;
        }

        /** The bytes held back on a filesystem of {@code filesystemBytes}, a share rounded up to the byte. */
        public long bytesOf(long filesystemBytes) {
            if (microPercent == 0) {
                return bytes;
            }
            // filesystemBytes * microPercent / WHOLE, rounded up, without overflow: the remainder's
            // product is below WHOLE squared (10^16).
            long quotient = filesystemBytes / WHOLE;
            long remainder = filesystemBytes % WHOLE;
            return quotient * microPercent + Math.ceilDiv(remainder * microPercent, WHOLE);
        }

        /** As the pool spec writes it: {@code 15%}, {@code 2.5%}, {@code 10.0 GiB} or {@code 0}. */
        @Override
        public String toString() {
            if (microPercent > 0) {
                String fraction = Long.toString(1_000_000 + microPercent % 1_000_000).substring(1);
                int end = fraction.length();
                while (end > 0 && fraction.charAt(end - 1) == '0') {
                    end--;
                }
                return microPercent / 1_000_000 + (end == 0 ? "" : "." + fraction.substring(0, end)) + "%";
            }
            return bytes == 0 ? "0" : Quantity.format(bytes);
        }
    }
}
