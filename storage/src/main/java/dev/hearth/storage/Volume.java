package dev.hearth.storage;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A volume as its pool records it: the request name it was made for, its size, the pool-specific
 * parameters it was made with and, for a restore or a clone, where its initial content came from
 * (both compared when the same name is requested again, see {@link VolumeRequest#sameRequestAgain});
 * and the Kubernetes claim it was made for, when the request named one (a label, never compared).
 */
public record Volume(VolumeId id, String name, long sizeBytes, Map<String, String> parameters,
        Optional<VolumeSource> source, Instant createdAt, Optional<Claim> claim) {

    public Volume {
        parameters = Map.copyOf(parameters);
        Objects.requireNonNull(claim, "claim");
    }

    /** A volume made for no Kubernetes claim that the pool knows of. */
    public Volume(VolumeId id, String name, long sizeBytes, Map<String, String> parameters,
            Optional<VolumeSource> source, Instant createdAt) {
        this(id, name, sizeBytes, parameters, source, createdAt, Optional.empty());
    }

    public Volume withSize(long newSize) {
        return new Volume(id, name, newSize, parameters, source, createdAt, claim);
    }
}
