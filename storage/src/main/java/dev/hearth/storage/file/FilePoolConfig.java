package dev.hearth.storage.file;

import dev.hearth.storage.PoolFeature;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.VolumeId;
import java.math.BigDecimal;
import java.math.RoundingMode;
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
    public record Reserve(long bytes, BigDecimal percent) {

        // Before the constants below: their construction reads it.
        private static final BigDecimal HUNDRED = BigDecimal.valueOf(100);

        public static final Reserve NONE = new Reserve(0, BigDecimal.ZERO);
        public static final Reserve DEFAULT = new Reserve(0, BigDecimal.valueOf(15));

        public Reserve {
            Objects.requireNonNull(percent, "percent");
            if (bytes < 0 || percent.signum() < 0 || percent.compareTo(HUNDRED) >= 0) {
                throw new IllegalArgumentException("a reserve is a size or a percentage from 0 to below 100");
            }
            if (bytes > 0 && percent.signum() > 0) {
                throw new IllegalArgumentException("a reserve is a size or a percentage, not both");
            }
            percent = percent.stripTrailingZeros();
        }

        /** {@code 10Gi}, {@code 0} or {@code 15%} (a fraction such as {@code 2.5%} too). */
        public static Reserve parse(String text) {
            String value = text.strip();
            String form = "'" + text + "' is neither a size nor a percentage; write e.g. 10Gi, 0 or 15%";
            if (!value.endsWith("%")) {
                try {
                    return new Reserve(Quantity.parse(value), BigDecimal.ZERO);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(form);
                }
            }
            BigDecimal percent;
            try {
                percent = new BigDecimal(value.substring(0, value.length() - 1).strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(form);
            }
            if (percent.signum() < 0 || percent.compareTo(HUNDRED) >= 0) {
                throw new IllegalArgumentException("a reserve of '" + text + "' is not from 0% to below 100%");
            }
            return new Reserve(0, percent);
        }

        /** The bytes held back on a filesystem of {@code filesystemBytes}. */
        public long bytesOf(long filesystemBytes) {
            if (percent.signum() == 0) {
                return bytes;
            }
            return BigDecimal.valueOf(filesystemBytes).multiply(percent).divide(HUNDRED, 0, RoundingMode.UP)
                    .longValueExact();
        }

        /** As the pool spec writes it: {@code 15%}, {@code 10.0 GiB} or {@code 0}. */
        @Override
        public String toString() {
            if (percent.signum() > 0) {
                return percent.toPlainString() + "%";
            }
            return bytes == 0 ? "0" : Quantity.format(bytes);
        }
    }
}
