package dev.hearth.storage;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What CreateVolume asks of a pool: a name, a capacity range, the pool's own parameters (already
 * stripped of the keys that choose the pool or belong to Kubernetes), for a restore or a clone
 * where the content comes from, and the Kubernetes claim the volume is for, if the request named
 * one: the pool records it with the volume, but it is no part of what the request asks for.
 */
public record VolumeRequest(String name, CapacityRange range, Map<String, String> parameters,
        Optional<VolumeSource> source, Optional<Claim> claim) {

    public VolumeRequest {
        if (name == null || name.isEmpty()) {
            throw new StorageException.InvalidArgument("volume name is required");
        }
        parameters = Map.copyOf(parameters);
        Objects.requireNonNull(claim, "claim");
    }

    public VolumeRequest(String name, CapacityRange range, Map<String, String> parameters,
            Optional<VolumeSource> source) {
        this(name, range, parameters, source, Optional.empty());
    }

    public VolumeRequest(String name, CapacityRange range, Map<String, String> parameters) {
        this(name, range, parameters, Optional.empty());
    }

    /**
     * The volume a previous request made under this request's ID, if it is what this request asks
     * for; every pool kind answers a repeated create with it.
     *
     * @param parameters this request's parameters as the pool normalized them
     * @throws StorageException.Conflict if the volume was made for another name, with other
     *     parameters or another source, or with a size outside this request's range (the claim is
     *     not compared: the volume keeps the one its first request named)
     */
    public Volume sameRequestAgain(Volume volume, Map<String, String> parameters) {
        if (!volume.name().equals(name)) {
            throw new StorageException.Conflict("volume " + volume.id() + " was made for name "
                    + Quoted.of(volume.name()) + ", which shares its key with " + Quoted.of(name));
        }
        if (!volume.parameters().equals(parameters)) {
            throw new StorageException.Conflict("volume " + Quoted.of(name) + " exists with parameters "
                    + volume.parameters() + ", not " + parameters);
        }
        if (!volume.source().equals(source)) {
            throw new StorageException.Conflict("volume " + Quoted.of(name) + " exists with content from "
                    + volume.source().map(Object::toString).orElse("nowhere") + ", not from "
                    + source.map(Object::toString).orElse("nowhere"));
        }
        if (!range.admits(volume.sizeBytes())) {
            throw new StorageException.Conflict("volume " + Quoted.of(name) + " exists with "
                    + volume.sizeBytes() + " bytes, outside the requested range " + range);
        }
        return volume;
    }
}
