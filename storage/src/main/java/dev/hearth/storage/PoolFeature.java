package dev.hearth.storage;

/** What a kind of pool can do beyond creating and deleting volumes. The services advertise only these. */
public enum PoolFeature {
    SNAPSHOTS,
    CLONES,
    EXPANSION
}
