package dev.hearth.controller;

import dev.hearth.storage.Pool;
import dev.hearth.storage.Pools;
import dev.hearth.storage.StorageException;
import java.util.Map;
import java.util.TreeMap;

/**
 * Splits a request's parameters into the pool they choose and that pool's own settings. Keys the
 * external-provisioner adds ({@code csi.storage.k8s.io/...}) are Kubernetes' business and ignored;
 * any other key outside the pool's vocabulary is refused, naming the key.
 */
record StorageClassParameters(Pool pool, Map<String, String> poolParameters) {

    static final String PREFIX = "hearth.dev/";
    static final String POOL = PREFIX + "pool";
    /** Keys Kubernetes' sidecars add (fstype, pvc/pv/snapshot names): theirs, never ours to refuse. */
    static final String KUBERNETES = "csi.storage.k8s.io/";

    static StorageClassParameters of(Map<String, String> parameters, Pools pools) {
        Map<String, String> own = new TreeMap<>();
        for (var entry : parameters.entrySet()) {
            String key = entry.getKey();
            if (key.startsWith(KUBERNETES) || key.equals(POOL)) {
                continue;
            }
            if (!key.startsWith(PREFIX)) {
                throw new StorageException.InvalidArgument("unknown parameter '" + key
                        + "': hearth accepts " + POOL + " and the pool's own " + PREFIX + "* keys");
            }
            own.put(key, entry.getValue());
        }
        Pool pool = parameters.containsKey(POOL)
                ? pools.byName(parameters.get(POOL)).orElseThrow(() -> new StorageException.InvalidArgument(
                        "parameter " + POOL + " names pool '" + parameters.get(POOL)
                                + "', which this node does not have"))
                : pools.defaultPool();
        return new StorageClassParameters(pool, pool.validateParameters(own));
    }
}
