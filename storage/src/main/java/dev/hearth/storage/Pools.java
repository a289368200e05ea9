package dev.hearth.storage;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The pools of this node, by name, and which one a StorageClass gets when it names none. */
public final class Pools {

    private final Map<String, Pool> byName = new LinkedHashMap<>();
    private final Pool defaultPool;

    public Pools(List<Pool> pools, String defaultName) {
        if (pools.isEmpty()) {
            throw new IllegalArgumentException("at least one pool is needed");
        }
        for (Pool pool : pools) {
            if (byName.putIfAbsent(pool.name(), pool) != null) {
                throw new IllegalArgumentException("two pools are named '" + pool.name() + "'");
            }
        }
        String wanted = defaultName == null ? pools.getFirst().name() : defaultName;
        defaultPool = byName.get(wanted);
        if (defaultPool == null) {
            throw new IllegalArgumentException("default pool '" + wanted + "' is not configured; pools: "
                    + byName.keySet());
        }
    }

    public Pool defaultPool() {
        return defaultPool;
    }

    public Optional<Pool> byName(String name) {
        return Optional.ofNullable(byName.get(name));
    }

    /** The pool an ID names; empty for a pool this node does not have. */
    public Optional<Pool> of(VolumeId id) {
        return byName(id.pool());
    }

    /** Finds a volume by ID across the configured pools. */
    public Optional<Volume> find(VolumeId id) {
        return of(id).flatMap(pool -> pool.find(id));
    }

    /** The volume a client's ID names, if it exists here (read once); empty for anything else. */
    public Optional<Volume> existingVolume(String volumeId) {
        return VolumeId.parse(volumeId).flatMap(this::find);
    }

    /** The ID a client sent, if it names a volume that exists here; empty for anything else. */
    public Optional<VolumeId> existing(String volumeId) {
        return VolumeId.parse(volumeId).filter(id -> of(id).map(pool -> pool.exists(id)).orElse(false));
    }

    /** A volume made for this request name in any pool (names are unique per driver, not per pool). */
    public Optional<Volume> findByName(String name) {
        return findByName(name, null);
    }

    /** {@link #findByName(String)} in every pool but {@code except} (which a create looks in itself). */
    public Optional<Volume> findByName(String name, Pool except) {
        String key = VolumeId.keyOf(name);
        for (Pool pool : byName.values()) {
            if (pool == except) {
                continue;
            }
            Optional<Volume> found = pool.find(new VolumeId(pool.name(), key));
            if (found.isPresent()) {
                return found;
            }
        }
        return Optional.empty();
    }

    public List<Pool> all() {
        return List.copyOf(byName.values());
    }

    /**
     * Whether some pool offers a feature, which is when the driver advertises it: one pool kind
     * without snapshots must not take them from every other pool. Each request for a feature is
     * then checked against its own volume's pool with {@link #requireFeature}.
     */
    public boolean anyHas(PoolFeature feature) {
        return byName.values().stream().anyMatch(pool -> PoolFeature.of(pool).contains(feature));
    }

    /**
     * Refuses a request that needs a feature its pool lacks, naming the pool and its kind.
     *
     * <p>An invalid argument, not a failed precondition: nothing on the node can change for the
     * request to succeed later; the caller must choose another pool or source. The CSI spec says
     * so for each such request: CreateVolume's "source incompatible or not supported" and
     * NodeExpandVolume's "exceeds capabilities ... not supported by the volume" are both
     * INVALID_ARGUMENT, and CreateSnapshot's general one for a field the plugin does not allow.
     *
     * @param what the refused operation as it follows "cannot", e.g. "take snapshots"
     */
    public static void requireFeature(Pool pool, PoolFeature feature, String what) {
        if (!PoolFeature.of(pool).contains(feature)) {
            throw refusal(pool, what);
        }
    }

    /** The pool's snapshots, or the refusal {@link #requireFeature} gives a pool without them. */
    public static Snapshots snapshotsOf(Pool pool, String what) {
        return pool.snapshots().orElseThrow(() -> refusal(pool, what));
    }

    /** The pool's expansion, or the refusal {@link #requireFeature} gives a pool without it. */
    public static Expansion expansionOf(Pool pool, String what) {
        return pool.expansion().orElseThrow(() -> refusal(pool, what));
    }

    private static StorageException refusal(Pool pool, String what) {
        return new StorageException.InvalidArgument("pool '" + pool.name() + "' (kind " + pool.kind()
                + ") cannot " + what);
    }
}
