package dev.hearth.storage;

import java.util.Map;

/**
 * What CreateVolume asks of a pool: a name, a capacity range and the pool's own parameters
 * (already stripped of the keys that choose the pool or belong to Kubernetes).
 */
public record VolumeRequest(String name, CapacityRange range, Map<String, String> parameters) {

    public VolumeRequest {
        if (name == null || name.isEmpty()) {
            throw new StorageException.InvalidArgument("volume name is required");
        }
        parameters = Map.copyOf(parameters);
    }
}
