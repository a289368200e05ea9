package dev.hearth.storage;

import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * A volume as its pool records it: the request name it was made for, its size, and the
 * pool-specific parameters it was made with (compared when the same name is requested again).
 */
public record Volume(VolumeId id, String name, long sizeBytes, Map<String, String> parameters, Instant createdAt) {

    /** The stored parameter that records a restore's or clone's source, so a repeat must name the same one. */
    public static final String SOURCE = "source";

    public Volume {
        parameters = Map.copyOf(parameters);
    }

    /** Where the volume's initial content came from, if it was restored or cloned. */
    public Optional<VolumeSource> source() {
        String source = parameters.get(SOURCE);
        if (source == null) {
            return Optional.empty();
        }
        if (source.startsWith("snapshot:")) {
            return SnapshotId.parse(source.substring(9)).map(VolumeSource.FromSnapshot::new);
        }
        return VolumeId.parse(source.substring(source.indexOf(':') + 1)).map(VolumeSource.FromVolume::new);
    }

    public Volume withSize(long newSize) {
        return new Volume(id, name, newSize, parameters, createdAt);
    }
}
