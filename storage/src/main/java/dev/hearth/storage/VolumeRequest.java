package dev.hearth.storage;

import java.util.Map;
import java.util.Optional;

/**
 * What CreateVolume asks of a pool: a name, a capacity range, the pool's own parameters (already
 * stripped of the keys that choose the pool or belong to Kubernetes) and, for a restore or a
 * clone, where the content comes from.
 */
public record VolumeRequest(String name, CapacityRange range, Map<String, String> parameters,
        Optional<VolumeSource> source) {

    public VolumeRequest {
        if (name == null || name.isEmpty()) {
            throw new StorageException.InvalidArgument("volume name is required");
        }
        parameters = Map.copyOf(parameters);
    }

    public VolumeRequest(String name, CapacityRange range, Map<String, String> parameters) {
        this(name, range, parameters, Optional.empty());
    }
}
