package dev.hearth.storage;

import java.util.Optional;

/**
 * A snapshot's identity: {@code <pool>_<key>}, the key derived from the CSI snapshot name as a
 * volume's is. The underscore, which pool names never contain, keeps snapshot and volume IDs
 * apart, so neither can be mistaken for the other.
 */
public record SnapshotId(String pool, String key) {

    public SnapshotId {
        if (!VolumeId.isPoolName(pool) || !VolumeId.isKey(key)) {
            throw new IllegalArgumentException("invalid snapshot id parts: " + pool + ", " + key);
        }
    }

    public static SnapshotId mint(String pool, String name) {
        return new SnapshotId(pool, keyOf(name));
    }

    /** The pool-independent part of the ID a snapshot named {@code name} gets. */
    public static String keyOf(String name) {
        return VolumeId.keyOf("snapshot:" + name);
    }

    /** Parses an ID this driver minted; anything else is empty. */
    public static Optional<SnapshotId> parse(String id) {
        if (id == null || id.length() < VolumeId.KEY_LENGTH + 2 || id.length() > VolumeId.KEY_LENGTH + 33) {
            return Optional.empty();
        }
        int separator = id.length() - VolumeId.KEY_LENGTH - 1;
        String pool = id.substring(0, separator);
        String key = id.substring(separator + 1);
        if (id.charAt(separator) != '_' || !VolumeId.isPoolName(pool) || !VolumeId.isKey(key)) {
            return Optional.empty();
        }
        return Optional.of(new SnapshotId(pool, key));
    }

    @Override
    public String toString() {
        return pool + "_" + key;
    }
}
