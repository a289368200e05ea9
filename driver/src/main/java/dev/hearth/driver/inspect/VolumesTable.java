package dev.hearth.driver.inspect;

import dev.hearth.driver.inspect.Inspection.MountRow;
import dev.hearth.driver.inspect.Inspection.PoolRow;
import dev.hearth.driver.inspect.Inspection.VolumeRow;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.Volume;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.file.Path;
import java.util.Optional;

/**
 * {@code hearth volumes} for a person: the pools, their volumes (one line each), the paths of each
 * volume (its backing store and its mounts), and the orphans, each an aligned table. Sizes are
 * binary, as Kubernetes writes them (Gi, Mi); what is absent or unknown shows as '-'.
 */
public final class VolumesTable {

    private static final String[] UNITS = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

    private VolumesTable() {}

    public static String render(Inspection inspection) {
        Table pools = new Table("POOL", "KIND", "CAPACITY", "USED", "FREE", "VOLUMES", "PROBLEM");
        Table volumes = new Table("VOLUME", "NAME", "PVC", "SIZE", "SOURCE", "DEVICE", "STAGED", "PUBLISHED",
                "CONDITION");
        Table paths = new Table("VOLUME", "WHAT", "PATH");
        for (PoolRow pool : inspection.pools()) {
            Optional<Capacity> capacity = pool.capacity();
            pools.row(pool.name() + (pool.isDefault() ? " (default)" : ""), pool.kind(),
                    capacity.map(c -> size(c.totalBytes())).orElse(null),
                    capacity.map(c -> size(c.allocatedBytes())).orElse(null),
                    capacity.map(c -> size(c.availableBytes())).orElse(null),
                    Integer.toString(pool.volumes().size()), pool.problem().orElse(null));
            for (VolumeRow row : pool.volumes()) {
                Volume volume = row.volume();
                String id = volume.id().toString();
                volumes.row(id, volume.name(), volume.claim().map(Object::toString).orElse(null),
                        size(volume.sizeBytes()), volume.source().map(Object::toString).orElse(null),
                        row.device().map(Path::toString).orElse(null), count(row, MountRole.STAGING),
                        count(row, MountRole.PUBLISH),
                        row.condition().map(c -> c.abnormal() ? c.message() : "ok").orElse(null));
                row.backing().ifPresent(backing -> paths.row(id, "backing", backing.toString()));
                for (MountRow mount : row.mounts()) {
                    paths.row(id, mount.role().label() + (mount.readOnly() ? " (ro)" : ""), mount.path().toString());
                }
            }
        }
        StringBuilder out = new StringBuilder(pools.render());
        out.append('\n').append(volumes.isEmpty() ? "No volumes.\n" : volumes.render());
        if (!paths.isEmpty()) {
            out.append('\n').append(paths.render());
        }
        Table orphans = new Table("ORPHAN", "POOL", "SUBJECT", "DETAIL");
        for (Orphan orphan : inspection.orphans()) {
            orphans.row(orphan.kind().label(), orphan.pool(), orphan.subject(), orphan.detail());
        }
        out.append('\n').append(orphans.isEmpty() ? "No orphans.\n" : orphans.render());
        return out.toString();
    }

    private static String count(VolumeRow row, MountRole role) {
        long count = row.count(role);
        return count == 0 ? null : Long.toString(count);
    }

    /** {@code 256Mi}, {@code 1.5Gi}, {@code 2Gi}: one decimal at most, dropped when 0; below 1 Ki, bytes. */
    static String size(long bytes) {
        if (bytes < 1024) {
            return Long.toString(bytes);
        }
        int unit = 0;
        BigDecimal value = BigDecimal.valueOf(bytes).divide(BigDecimal.valueOf(1024));
        while (value.compareTo(BigDecimal.valueOf(1024)) >= 0 && unit + 1 < UNITS.length) {
            value = value.divide(BigDecimal.valueOf(1024));
            unit++;
        }
        return value.setScale(1, RoundingMode.HALF_UP).stripTrailingZeros().toPlainString() + UNITS[unit];
    }
}
