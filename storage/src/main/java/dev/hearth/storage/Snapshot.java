package dev.hearth.storage;

import java.time.Instant;

/**
 * A point-in-time copy of a volume, kept in the volume's pool. Its size is the source's at that
 * time. A snapshot whose content is still being copied in the background is not yet
 * {@code readyToUse}: it cannot be restored until it is.
 */
public record Snapshot(SnapshotId id, String name, VolumeId source, long sizeBytes, Instant createdAt,
        boolean readyToUse) {

    /** A snapshot complete when made. */
    public Snapshot(SnapshotId id, String name, VolumeId source, long sizeBytes, Instant createdAt) {
        this(id, name, source, sizeBytes, createdAt, true);
    }
}
