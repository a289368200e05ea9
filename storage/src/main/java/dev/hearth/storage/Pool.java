package dev.hearth.storage;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A named place on this node that volumes are carved from. Every operation is idempotent, and
 * everything a pool knows it reads back from the node (files, LV tags), never from memory.
 * Kinds: {@code file} ({@link dev.hearth.storage.file.FilePool}); lvm and device follow. (Not
 * sealed: the kinds live in their own packages, and sealing across packages needs a named module.)
 */
public interface Pool extends AutoCloseable {

    String name();

    /** Short kind name for logs and metrics: "file", "lvm", "device". */
    String kind();

    /** The StorageClass parameter keys this pool takes (besides the one that picks the pool). */
    Set<String> parameterKeys();

    /** Checks the pool-specific StorageClass parameters and returns them normalized. */
    Map<String, String> validateParameters(Map<String, String> parameters);

    Capacity capacity();

    /** Creates the volume, or returns the one a previous identical request made. */
    Volume create(VolumeRequest request);

    Optional<Volume> find(VolumeId id);

    /** Every volume of the pool, ordered by ID. */
    List<Volume> list();

    /** Removes the volume and returns its space; a missing volume is not an error. */
    void delete(VolumeId id);

    /** Makes the volume available as a block device (attaching it if needed) and returns it. */
    Path attach(VolumeId id);

    /** The block device the volume is attached as right now, if any. */
    Optional<Path> attachedDevice(VolumeId id);

    /** Releases the block device; a volume that is not attached is not an error. */
    void detach(VolumeId id);

    /** What this pool can do beyond create and delete; callers check before asking for it. */
    Set<PoolFeature> features();

    /**
     * Grows the volume to at least the range's required bytes; a volume already that large is
     * returned unchanged. A volume attached as a block device sees its new size at once.
     */
    Volume expand(VolumeId id, CapacityRange range);

    /**
     * What the pool can prove about whether the volume was ever written. A filesystem is made only
     * on a volume that is {@link Emptiness.Proven}: a probe that finds no signature is not proof.
     */
    Emptiness emptiness(VolumeId id);

    /** Whether the volume's backing store is intact, as the pool sees it. */
    VolumeCondition condition(VolumeId id);

    /**
     * Takes a point-in-time copy of a volume, or returns the one a previous request with this name
     * made. If the volume's filesystem is mounted on this node it is frozen while the copy is taken.
     */
    Snapshot createSnapshot(String name, VolumeId source);

    Optional<Snapshot> findSnapshot(SnapshotId id);

    /** Every snapshot of the pool, ordered by ID. */
    List<Snapshot> listSnapshots();

    /** Removes the snapshot; a missing one is not an error. */
    void deleteSnapshot(SnapshotId id);

    /** Null when the pool can serve requests, else what is wrong with it. */
    String problem();

    /** Releases the pool's hold on the node (not its volumes). */
    @Override
    void close();
}
