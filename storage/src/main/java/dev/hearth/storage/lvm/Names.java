package dev.hearth.storage.lvm;

import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.VolumeId;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The LV names hearth gives, from IDs alone: {@code hearth.<pool>.<key>} for a volume,
 * {@code hearth.<pool>.snap.<key>} for a snapshot, {@code hearth.<pool>.xfer.<key>} for the
 * temporary snapshot a thick copy reads from. Pool names and keys hold no dot, so no two kinds
 * can share a name, and none has a suffix or prefix LVM reserves ({@code _tmeta}, {@code snapshot}...).
 */
final class Names {

    private static final String PREFIX = "hearth.";

    private Names() {}

    static String volume(VolumeId id) {
        return PREFIX + id.pool() + "." + id.key();
    }

    static String snapshot(SnapshotId id) {
        return PREFIX + id.pool() + ".snap." + id.key();
    }

    static String transfer(String pool, String key) {
        return PREFIX + pool + ".xfer." + key;
    }

    /** The volume ID an LV name of this pool stands for, if it is a volume's name. */
    static Optional<VolumeId> volumeId(String pool, String lv) {
        String prefix = PREFIX + pool + ".";
        if (!lv.startsWith(prefix)) {
            return Optional.empty();
        }
        return VolumeId.parse(pool + "-" + lv.substring(prefix.length()));
    }

    /** The snapshot ID an LV name of this pool stands for, if it is a snapshot's name. */
    static Optional<SnapshotId> snapshotId(String pool, String lv) {
        String prefix = PREFIX + pool + ".snap.";
        if (!lv.startsWith(prefix)) {
            return Optional.empty();
        }
        return SnapshotId.parse(pool + "_" + lv.substring(prefix.length()));
    }

    /** The key of a transfer LV of this pool, if {@code lv} is one. */
    static Optional<String> transferKey(String pool, String lv) {
        String prefix = PREFIX + pool + ".xfer.";
        return lv.startsWith(prefix) ? Optional.of(lv.substring(prefix.length())) : Optional.empty();
    }

    /** {@code /dev/mapper/<vg>-<lv>}, each name's dashes doubled as device-mapper does. */
    static Path device(String vg, String lv) {
        return Path.of("/dev/mapper", mapperName(vg, lv));
    }

    /** The LV's device-mapper name: {@code <vg>-<lv>}, each name's dashes doubled. */
    static String mapperName(String vg, String lv) {
        return mapperName(vg) + "-" + mapperName(lv);
    }

    /** The hidden device an origin has while an old-style (copy-on-write) snapshot of it exists. */
    static Path realDevice(String vg, String lv) {
        return Path.of("/dev/mapper", mapperName(vg) + "-" + mapperName(lv) + "-real");
    }

    private static String mapperName(String name) {
        return name.replace("-", "--");
    }
}
