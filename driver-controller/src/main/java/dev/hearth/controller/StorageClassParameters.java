package dev.hearth.controller;

import dev.hearth.storage.Claim;
import dev.hearth.storage.Pool;
import dev.hearth.storage.Pools;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Splits a request's parameters into the pool they choose, that pool's own settings and the claim
 * the volume is for. Keys the external-provisioner adds ({@code csi.storage.k8s.io/...}) are
 * Kubernetes' business: never refused, and read only for the PVC and PV names, which the pool
 * records with the volume ({@link Claim}). Any other key outside the pool's vocabulary is refused,
 * naming the key and every key accepted.
 */
record StorageClassParameters(Pool pool, Map<String, String> poolParameters, Optional<Claim> claim) {

    static final String PREFIX = "hearth.dev/";
    static final String POOL = PREFIX + "pool";
    /** Keys Kubernetes' sidecars add (fstype, pvc/pv/snapshot names): theirs, never ours to refuse. */
    static final String KUBERNETES = "csi.storage.k8s.io/";

    static StorageClassParameters of(Map<String, String> parameters, Pools pools) {
        Pool pool = parameters.containsKey(POOL)
                ? pools.byName(parameters.get(POOL)).orElseThrow(() -> new StorageException.InvalidArgument(
                        "parameter " + POOL + " names pool " + Quoted.of(parameters.get(POOL))
                                + ", which this node does not have; it has " + poolNames(pools)))
                : pools.defaultPool();
        Map<String, String> own = new TreeMap<>();
        for (var entry : parameters.entrySet()) {
            String key = entry.getKey();
            if (key.startsWith(KUBERNETES) || key.equals(POOL)) {
                continue;
            }
            if (!pool.parameterKeys().contains(key)) {
                throw new StorageException.InvalidArgument("unknown parameter " + Quoted.of(key)
                        + "; accepted: " + accepted(pool));
            }
            own.put(key, entry.getValue());
        }
        return new StorageClassParameters(pool, pool.validateParameters(own), Claim.fromParameters(parameters));
    }

    /** Every key a StorageClass for this pool may hold, sorted. */
    private static String accepted(Pool pool) {
        TreeSet<String> keys = new TreeSet<>(pool.parameterKeys());
        keys.add(POOL);
        keys.add(KUBERNETES + "*");
        return String.join(", ", keys);
    }

    private static String poolNames(Pools pools) {
        return String.join(", ", pools.all().stream().map(Pool::name).sorted().toList());
    }
}
