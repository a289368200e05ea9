package dev.hearth.storage;

import java.util.EnumSet;
import java.util.Set;

/** What a kind of pool can do beyond creating and deleting volumes. The services advertise only these. */
public enum PoolFeature {
    SNAPSHOTS,
    CLONES,
    EXPANSION;

    /** What a pool offers, read from the parts it has. */
    public static Set<PoolFeature> of(Pool pool) {
        Set<PoolFeature> features = EnumSet.noneOf(PoolFeature.class);
        if (pool.snapshots().isPresent()) {
            features.add(SNAPSHOTS);
        }
        if (pool.clones()) {
            features.add(CLONES);
        }
        if (pool.expansion().isPresent()) {
            features.add(EXPANSION);
        }
        return features;
    }
}
