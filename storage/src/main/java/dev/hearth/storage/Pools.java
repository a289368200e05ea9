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

    /** The ID a client sent, if it names a volume that exists here; empty for anything else. */
    public Optional<VolumeId> existing(String volumeId) {
        return VolumeId.parse(volumeId).filter(id -> find(id).isPresent());
    }

    /** A volume made for this request name in any pool (names are unique per driver, not per pool). */
    public Optional<Volume> findByName(String name) {
        String key = VolumeId.keyOf(name);
        for (Pool pool : byName.values()) {
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

    /** Whether every pool offers a feature: what the driver can advertise for all of its volumes. */
    public boolean allHave(PoolFeature feature) {
        return byName.values().stream().allMatch(pool -> pool.features().contains(feature));
    }
}
