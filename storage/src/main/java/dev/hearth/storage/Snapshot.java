package dev.hearth.storage;

import java.time.Instant;

/** A point-in-time copy of a volume, kept in the volume's pool. Its size is the source's at that time. */
public record Snapshot(SnapshotId id, String name, VolumeId source, long sizeBytes, Instant createdAt) {}
