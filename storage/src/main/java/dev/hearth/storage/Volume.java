package dev.hearth.storage;

import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * A volume as its pool records it: the request name it was made for, its size, the pool-specific
 * parameters it was made with and, for a restore or a clone, where its initial content came from
 * (both compared when the same name is requested again, see {@link VolumeRequest#sameRequestAgain}).
 */
public record Volume(VolumeId id, String name, long sizeBytes, Map<String, String> parameters,
        Optional<VolumeSource> source, Instant createdAt) {

    public Volume {
        parameters = Map.copyOf(parameters);
    }

    public Volume withSize(long newSize) {
        return new Volume(id, name, newSize, parameters, source, createdAt);
    }
}
