package dev.hearth.storage;

import java.time.Instant;
import java.util.Map;

/**
 * A volume as its pool records it: the request name it was made for, its size, and the
 * pool-specific parameters it was made with (compared when the same name is requested again).
 */
public record Volume(VolumeId id, String name, long sizeBytes, Map<String, String> parameters, Instant createdAt) {

    public Volume {
        parameters = Map.copyOf(parameters);
    }
}
