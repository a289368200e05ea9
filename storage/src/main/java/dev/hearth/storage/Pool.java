package dev.hearth.storage;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A named place on this node that volumes are carved from: a core every kind has, and optional
 * parts ({@link #snapshots()}, {@link #expansion()}, {@link #clones()}) a kind has or has not.
 * Every operation is idempotent, and everything a pool knows it reads back from the node (files,
 * LV tags), never from memory.
 * Kinds: {@code file} ({@link dev.hearth.storage.file.FilePool}), {@code lvm}
 * ({@link dev.hearth.storage.lvm.LvmPool}) and {@code device} ({@link dev.hearth.storage.device.DevicePool}).
 * (Not sealed: the kinds live in their own packages, and sealing across packages needs a named module.)
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

    /**
     * Whether the volume exists, when the caller needs no more than that: a pool may know it more
     * cheaply than by reading the volume's record (an lvm pool: its device node).
     */
    default boolean exists(VolumeId id) {
        return find(id).isPresent();
    }

    /** Every volume of the pool, ordered by ID. */
    List<Volume> list();

    /**
     * Every volume with a way to tell each one's condition, for ListVolumes: a pool that reads its
     * volumes with one command answers both from that one read. The default lists and asks
     * {@link #condition} for the volumes the caller does ask about.
     */
    default Listing listing() {
        return new Listing(list(), volume -> condition(volume.id()));
    }

    /**
     * The IDs of the pool's volumes, in no particular order: what ListVolumes pages over. A pool
     * that can name its volumes without reading their records (a file pool: one directory listing)
     * says so here; the default lists them.
     */
    default List<VolumeId> ids() {
        return list().stream().map(Volume::id).toList();
    }

    /**
     * {@link #listing()} of only these volumes (those of them that still exist): one page of
     * ListVolumes. A pool that reads its volumes one by one reads just these; the default lists all.
     */
    default Listing listing(java.util.Collection<VolumeId> ids) {
        Listing all = listing();
        java.util.Set<VolumeId> wanted = java.util.Set.copyOf(ids);
        return new Listing(all.volumes().stream().filter(v -> wanted.contains(v.id())).toList(), all.condition());
    }

    /** The volumes of a pool and how to tell the condition of each of them. */
    record Listing(List<Volume> volumes, java.util.function.Function<Volume, VolumeCondition> condition) {}

    /** Removes the volume and returns its space; a missing volume is not an error. */
    void delete(VolumeId id);

    /**
     * Makes a volume the caller knows to exist (by {@link #exists}, {@link #find} or {@link #create})
     * available as a block device, without reading its record again, and says whether this call
     * attached it or found it attached.
     */
    Attachment attach(VolumeId id);

    /** The block device the volume is attached as right now, if any. */
    Optional<Path> attachedDevice(VolumeId id);

    /** Releases the block device; a volume that is not attached is not an error. */
    void detach(VolumeId id);

    /**
     * What the pool can prove about whether a volume it has was ever written. A filesystem is made
     * only on a volume that is {@link Emptiness.Proven}: a probe that finds no signature is not proof.
     */
    Emptiness emptiness(VolumeId id);

    /**
     * Called once a stage has handed the volume to its user (a filesystem made or found and
     * mounted, or a block device staged): from then on, a pool that vouched for its emptiness
     * from its history can no longer. Nothing for a pool that proves emptiness from the volume itself.
     */
    default void handedOut(VolumeId id) {}

    /** Whether the volume's backing store is intact, as the pool sees it. */
    VolumeCondition condition(VolumeId id);

    /**
     * The directories this pool keeps its volumes, records or snapshots in. A node call never mounts
     * a volume there or below: a volume mounted over a pool's empty snapshot directory would take
     * the next snapshots into itself, one over a record directory would hide the records.
     */
    default List<Path> ownDirectories() {
        return List.of();
    }

    /**
     * What holds the volume's data on this node, for an operator to find it: an image file, an
     * LV's path, a disk. Named whether or not it exists right now (see {@link #condition}).
     */
    default Optional<Path> backing(VolumeId id) {
        return Optional.empty();
    }

    /**
     * What the pool finds on this node that is its own kind of thing but belongs to none of its
     * volumes (an image or LV without a record, a loop device of a deleted image), or a record
     * without its data. Only reads: nothing is removed or repaired, and a pool opened read-only
     * answers it beside a driver that serves the pool.
     */
    default List<Orphan> orphans() {
        return List.of();
    }

    /**
     * The pool's snapshots, if its kind can take them. A kind that cannot has no such part, not
     * methods that throw; a request for one is refused by the pool's name ({@link Pools#snapshotsOf}).
     */
    default Optional<Snapshots> snapshots() {
        return Optional.empty();
    }

    /** Growing volumes in place, if the pool's kind can. */
    default Optional<Expansion> expansion() {
        return Optional.empty();
    }

    /**
     * Whether {@link #create} takes one of this pool's volumes as a source (a clone). A restore,
     * a create from a snapshot, comes with {@link #snapshots()}.
     */
    default boolean clones() {
        return false;
    }

    /** Null when the pool can serve requests, else what is wrong with it. */
    String problem();

    /**
     * Does ahead, once, what the pool's first calls would otherwise do on a request's time, and
     * runs their read-only paths, so that the JVM has run them before a request does. Called on a
     * background thread after the driver serves; it must change nothing on the node. An error is
     * the caller's to log and ignore: each call does its work again anyway. The default does nothing.
     */
    default void warmUp() throws IOException {}

    /** Releases the pool's hold on the node (not its volumes). */
    @Override
    void close();
}
