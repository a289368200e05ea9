package dev.hearth.driver;

import dev.hearth.linux.FileSystems;
import dev.hearth.linux.FsStats;
import dev.hearth.linux.LinuxException;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.file.FilePoolConfig;
import java.util.Optional;

/** How a pool is set up, in words for the start-up log, and what about it deserves a warning. */
final class PoolReport {

    private PoolReport() {}

    /**
     * {@code default (kind file, dir /var/lib/hearth/pools/default, capacity 214.2 GiB = filesystem 252.0 GiB
     * less reserve 15% = 37.8 GiB, provisioning thick)}.
     */
    static String describe(dev.hearth.storage.PoolConfig config) {
        return switch (config) {
            case FilePoolConfig file -> describe(file);
            case dev.hearth.storage.lvm.LvmPoolConfig lvm -> describe(lvm);
            case dev.hearth.storage.device.DevicePoolConfig device -> device.name() + " (kind device, "
                    + device.describe() + ")";
            default -> config.name() + " (kind " + config.kind() + ")";
        };
    }

    /** {@code fast (kind lvm, thin pool vg0/tp, overprovision 3.0)} or {@code lvm (kind lvm, volume group vg0, wipe zero)}. */
    static String describe(dev.hearth.storage.lvm.LvmPoolConfig config) {
        return config.name() + " (kind lvm, " + (config.thin()
                ? "thin pool " + config.describeTarget() + ", overprovision " + config.overprovision()
                : "volume group " + config.volumeGroup() + ", wipe " + config.wipe().label())
                + config.growth().map(g -> ", grows " + config.volumeGroup() + " onto " + g.describe()).orElse("")
                + ")";
    }

    static String describe(FilePoolConfig config) {
        Optional<FsStats> fs = statvfs(config);
        StringBuilder text = new StringBuilder(config.name()).append(" (kind file, dir ").append(config.directory());
        String reserve = "reserve " + config.reserve()
                + (config.reserve().isShare() && fs.isPresent()
                        ? " = " + Quantity.format(config.reserve().bytesOf(fs.get().totalBytes())) : "");
        if (config.capacityBytes() > 0) {
            text.append(", capacity ").append(Quantity.format(config.capacityBytes())).append(", ").append(reserve);
        } else if (fs.isPresent()) {
            long total = fs.get().totalBytes();
            text.append(", capacity ").append(Quantity.format(Math.max(0, total - config.reserve().bytesOf(total))))
                    .append(" = filesystem ").append(Quantity.format(total)).append(" less ").append(reserve);
        } else {
            text.append(", capacity: its filesystem's size less ").append(reserve);
        }
        text.append(", provisioning ").append(config.provisioning().label());
        if (!config.directIo()) {
            text.append(", direct-io false");
        }
        return text.append(')').toString();
    }

    /**
     * A capacity that the pool's filesystem cannot hold once the reserve is kept back: thick
     * volumes will be refused before it is reached, thin ones may fill the disk and fail writes.
     */
    static Optional<String> capacityWarning(FilePoolConfig config) {
        Optional<FsStats> fs = statvfs(config);
        if (config.capacityBytes() == 0 || fs.isEmpty()) {
            return Optional.empty();
        }
        long total = fs.get().totalBytes();
        long usable = Math.max(0, total - config.reserve().bytesOf(total));
        if (config.capacityBytes() <= usable) {
            return Optional.empty();
        }
        String consequence = config.provisioning() == Provisioning.THIN
                ? "thin volumes promised beyond it fail their writes once the filesystem is full"
                : "thick volumes will be refused before the capacity is reached";
        return Optional.of("pool '" + config.name() + "': capacity " + Quantity.format(config.capacityBytes())
                + " is more than its filesystem can give: " + config.directory() + " is on a filesystem of "
                + Quantity.format(total) + ", which less the reserve kept free (" + config.reserve()
                + (config.reserve().isShare() ? " = " + Quantity.format(total - usable) : "")
                + ") leaves " + Quantity.format(usable) + "; " + consequence);
    }

    private static Optional<FsStats> statvfs(FilePoolConfig config) {
        try {
            return Optional.of(FileSystems.statvfs(config.directory()));
        } catch (LinuxException e) {
            return Optional.empty();
        }
    }
}
