package dev.hearth.driver.inspect;

import dev.hearth.storage.Capacity;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeCondition;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * What {@code hearth volumes} found on this node: each pool with its volumes, the orphans, and
 * what could not be read (nothing, when the command exits 0).
 *
 * @param errors what could not be read, each naming where; the rest is shown as far as it was read
 */
public record Inspection(Path stateDir, String driverName, List<PoolRow> pools, List<Orphan> orphans,
        List<String> errors) {

    public Inspection {
        pools = List.copyOf(pools);
        orphans = List.copyOf(orphans);
        errors = List.copyOf(errors);
    }

    /**
     * @param capacity empty if it could not be read
     * @param problem what keeps the pool from serving, as the driver's readiness check says it
     */
    public record PoolRow(String name, String kind, boolean isDefault, Optional<Capacity> capacity,
            Optional<String> problem, List<VolumeRow> volumes) {

        public PoolRow {
            volumes = List.copyOf(volumes);
        }
    }

    /**
     * @param backing what holds its data (an image file, an LV)
     * @param device the block device it is attached as right now
     * @param mounts every mount of that device (or of a read-only view of it) on this node
     * @param condition empty if it could not be read
     */
    public record VolumeRow(Volume volume, Optional<Path> backing, Optional<Path> device, List<MountRow> mounts,
            Optional<VolumeCondition> condition) {

        public VolumeRow {
            mounts = List.copyOf(mounts);
        }

        public long count(MountRole role) {
            return mounts.stream().filter(m -> m.role() == role).count();
        }
    }

    public record MountRow(Path path, MountRole role, boolean readOnly) {}
}
