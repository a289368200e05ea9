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
import dev.hearth.storage.mount.VolumeStager;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * CSI ephemeral inline volumes: a volume that lives exactly as long as one pod. NodePublishVolume
 * creates it (sized and typed by the pod's volume attributes), stages it under the driver's state
 * directory and binds it into the pod; NodeUnpublishVolume takes it all down again. This class reads
 * the attributes; the {@link VolumeStager} does the staging and the taking down. The kubelet's
 * volume ID names it; the pool knows it by the name {@code ephemeral:<that id>}.
 */
final class EphemeralVolumes {

    static final String EPHEMERAL = "csi.storage.k8s.io/ephemeral";
    static final String SIZE = "hearth.dev/size";
    static final String POOL = "hearth.dev/pool";
    private static final String KUBERNETES = "csi.storage.k8s.io/";

    private final Pools pools;
    private final VolumeStager stager;
    private final Path stagingRoot;

    EphemeralVolumes(Pools pools, VolumeStager stager, Path stagingRoot) {
        this.pools = pools;
        this.stager = stager;
        this.stagingRoot = stagingRoot;
    }

    static boolean requested(Map<String, String> volumeContext) {
        return "true".equals(volumeContext.get(EPHEMERAL));
    }

    /**
     * The pool's ID of the ephemeral volume the kubelet calls {@code volumeId}, if it exists. The
     * kubelet's own IDs ({@code csi-} and 64 hex digits) are looked for in every pool. An ID of the
     * shape of a hearth volume ID almost always names a persistent volume, so for those only an
     * ephemeral volume's own staging directory is looked for (a stat per pool, no pool lookup): an
     * lvm pool would otherwise spawn an lvs on every unpublish.
     */
    Optional<VolumeId> find(String volumeId) {
        if (VolumeId.parse(volumeId).isPresent()) {
            return stagedIds(volumeId).filter(id -> pools.existing(id.toString()).isPresent()).findFirst();
        }
        return pools.findByName(name(volumeId)).map(Volume::id);
    }

    void publish(String volumeId, Map<String, String> attributes, VolumeCapability capability, Path target,
            boolean readOnly, Optional<FilesystemType> filesystem, Optional<Integer> group) {
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
        FilesystemType type = filesystem.orElse(stager.defaultType());
        CapacityRange range = new CapacityRange(size, 0).atLeast(type.minimumBytes(), "an " + type.kernelName()
                + " filesystem");
        stager.publishNew(pool, new VolumeRequest(name(volumeId), range, pool.validateParameters(parameters)),
                this::staging, target, readOnly, filesystem, capability.getMount().getMountFlagsList(), group);
    }

    /**
     * Unpublishes and deletes the ephemeral volume; false when {@code volumeId} names none. An
     * ephemeral volume's staging directory is made before the volume and removed after it, so a
     * kill that cut a publish or an unpublish short leaves the directory, with or without the
     * volume; this finds it either way and removes what is there.
     */
    boolean unpublish(String volumeId, Path target) {
        Optional<VolumeId> id = VolumeId.parse(volumeId).isPresent() ? staged(volumeId)
                : find(volumeId).or(() -> staged(volumeId));
        if (id.isEmpty()) {
            return false;
        }
        // The kubelet's own IDs are csi- and hex; a client may still give an inline volume the ID of a
        // persistent volume. The persistent volume's publishes then stay its own: a target holding
        // something that is not the inline volume is left to the persistent volume's unpublish.
        if (VolumeId.parse(volumeId).isPresent() && stager.holdsOtherThan(id.get(), target)
                && pools.existing(volumeId).isPresent()) {
            return false;
        }
        stager.remove(id.get(), staging(id.get()), Optional.of(target));
        return true;
    }

    /** The ID of the ephemeral volume {@code volumeId} whose staging directory exists, in whichever pool. */
    private Optional<VolumeId> staged(String volumeId) {
        return stagedIds(volumeId).findFirst();
    }

    private Stream<VolumeId> stagedIds(String volumeId) {
        String key = VolumeId.keyOf(name(volumeId));
        return pools.all().stream().map(pool -> new VolumeId(pool.name(), key))
                .filter(id -> Files.isDirectory(staging(id)));
    }

    private Path staging(VolumeId id) {
        return stagingRoot.resolve(id.toString());
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
