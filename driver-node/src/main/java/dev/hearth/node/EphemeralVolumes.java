package dev.hearth.node;

import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Pool;
import dev.hearth.storage.Pools;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.mount.Mounter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * CSI ephemeral inline volumes: a volume that lives exactly as long as one pod. NodePublishVolume
 * creates it (sized and typed by the pod's volume attributes), stages it under the driver's state
 * directory and binds it into the pod; NodeUnpublishVolume takes it all down again. The kubelet's
 * volume ID names it; the pool knows it by the name {@code ephemeral:<that id>}.
 */
final class EphemeralVolumes {

    static final String EPHEMERAL = "csi.storage.k8s.io/ephemeral";
    static final String SIZE = "hearth.dev/size";
    static final String POOL = "hearth.dev/pool";
    private static final String KUBERNETES = "csi.storage.k8s.io/";
    private static final System.Logger LOG = System.getLogger(EphemeralVolumes.class.getName());

    private final Pools pools;
    private final Mounter mounter;
    private final Path stagingRoot;

    EphemeralVolumes(Pools pools, Mounter mounter, Path stagingRoot) {
        this.pools = pools;
        this.mounter = mounter;
        this.stagingRoot = stagingRoot;
    }

    static boolean requested(Map<String, String> volumeContext) {
        return "true".equals(volumeContext.get(EPHEMERAL));
    }

    /** The pool's ID of the ephemeral volume the kubelet calls {@code volumeId}, if it exists. */
    Optional<VolumeId> find(String volumeId) {
        return pools.findByName(name(volumeId)).map(Volume::id);
    }

    void publish(String volumeId, Map<String, String> attributes, VolumeCapability capability, Path target,
            boolean readOnly, Optional<FilesystemType> filesystem) {
        if (!capability.hasMount()) {
            throw new StorageException.InvalidArgument("an ephemeral volume is a filesystem; block was requested");
        }
        Map<String, String> parameters = new TreeMap<>();
        attributes.forEach((key, value) -> {
            if (!key.startsWith(KUBERNETES)) {
                parameters.put(key, value);
            }
        });
        Pool pool = Optional.ofNullable(parameters.remove(POOL))
                .map(name -> pools.byName(name).orElseThrow(() -> new StorageException.InvalidArgument(
                        "volume attribute " + POOL + " names pool " + Quoted.of(name)
                                + ", which this node does not have")))
                .orElse(pools.defaultPool());
        long size = size(parameters.remove(SIZE));
        parameters.keySet().stream().filter(key -> !pool.parameterKeys().contains(key)).findFirst().ifPresent(key -> {
            throw new StorageException.InvalidArgument("unknown volume attribute " + Quoted.of(key) + "; accepted: "
                    + accepted(pool));
        });
        // A mount already at the target is not this publish's to take down if it fails.
        boolean targetWasMounted = mounter.isMounted(target);
        FilesystemType type = filesystem.orElse(mounter.defaultType());
        CapacityRange range = new CapacityRange(size, 0).atLeast(type.minimumBytes(), "an " + type.kernelName()
                + " filesystem");
        Volume volume = pool.create(new VolumeRequest(name(volumeId), range, pool.validateParameters(parameters)));
        Path staging = staging(volume.id());
        try {
            Path device = pool.attach(volume.id());
            mounter.stageFilesystem(volume.id(), device, () -> pool.emptiness(volume.id()), staging, filesystem,
                    capability.getMount().getMountFlagsList());
            mounter.publishFilesystem(volume.id(), device, staging, target, readOnly);
        } catch (RuntimeException e) {
            // Nothing half-made stays: the volume was made for this publish and holds no data yet.
            takeDown(pool, volume.id(), targetWasMounted ? Optional.empty() : Optional.of(target), e);
            throw e;
        }
    }

    /** Unpublishes and deletes the ephemeral volume; false when {@code volumeId} names none. */
    boolean unpublish(String volumeId, Path target) {
        Optional<VolumeId> id = find(volumeId);
        if (id.isEmpty()) {
            return false;
        }
        remove(pools.of(id.get()).orElseThrow(), id.get(), Optional.of(target));
        return true;
    }

    private void takeDown(Pool pool, VolumeId id, Optional<Path> target, RuntimeException cause) {
        try {
            remove(pool, id, target);
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
            LOG.log(System.Logger.Level.WARNING, "could not take down ephemeral volume " + id + ": " + e.getMessage());
        }
    }

    /** Unmounts the volume from the target (if given) and its staging path, then detaches and deletes it. */
    private void remove(Pool pool, VolumeId id, Optional<Path> target) {
        Optional<Path> device = pool.attachedDevice(id);
        target.ifPresent(t -> mounter.unpublish(t, device));
        Path staging = staging(id);
        mounter.unstage(staging, device);
        removeDirectory(staging);
        pool.detach(id);
        pool.delete(id);
    }

    private Path staging(VolumeId id) {
        return stagingRoot.resolve(id.toString());
    }

    /** The staging directory is the driver's own, made by the stage; the kubelet never sees it. */
    private static void removeDirectory(Path staging) {
        try {
            Files.deleteIfExists(staging);
        } catch (IOException e) {
            throw new StorageException.Failed("removing ephemeral staging directory " + staging + ": "
                    + e.getMessage(), e);
        }
    }

    /** Every volume attribute an ephemeral volume from this pool may have, sorted. */
    private static String accepted(Pool pool) {
        Set<String> keys = new TreeSet<>(pool.parameterKeys());
        keys.addAll(List.of(KUBERNETES + "*", POOL, SIZE));
        return String.join(", ", keys);
    }

    private static long size(String text) {
        if (text == null) {
            return 0;
        }
        try {
            return Quantity.parse(text);
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw new StorageException.InvalidArgument("volume attribute " + SIZE + ": " + e.getMessage());
        }
    }

    private static String name(String volumeId) {
        return "ephemeral:" + volumeId;
    }
}
