package dev.hearth.storage;

import java.util.List;
import java.util.Optional;

/**
 * The snapshot part of a pool whose kind can take point-in-time copies of its volumes (see
 * {@link Pool#snapshots()}). A restore is then the pool's {@link Pool#create} with a snapshot source.
 */
public interface Snapshots {

    /**
     * Takes a point-in-time copy of a volume, or returns the one a previous request with this name
     * made. If the volume's filesystem is mounted on this node it is frozen while the copy is taken.
     */
    Snapshot create(String name, VolumeId source);

    Optional<Snapshot> find(SnapshotId id);

    /** Every snapshot of the pool, ordered by ID. */
    List<Snapshot> list();

    /** Removes the snapshot; a missing one is not an error. */
    void delete(SnapshotId id);
}
