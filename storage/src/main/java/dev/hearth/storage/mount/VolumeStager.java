package dev.hearth.storage.mount;

import dev.hearth.storage.Attachment;
import dev.hearth.storage.Pool;
import dev.hearth.storage.Pools;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.fs.FilesystemType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * A volume's life on this node, in the order the kubelet drives it: attach and stage (making a
 * filesystem only on a provably empty device), publish into pods, unpublish, unstage and detach;
 * and, when a step fails, taking back what that call did and nothing else. The Node service
 * validates requests and maps the answers; the orchestration is here, once, for staged and
 * ephemeral volumes alike. A volume is passed in as the caller found it to exist, so one request
 * looks it up once and reads the device table once on the way in.
 */
public final class VolumeStager {

    private static final System.Logger LOG = System.getLogger(VolumeStager.class.getName());

    private final Pools pools;
    private final Mounter mounter;

    public VolumeStager(Pools pools, Mounter mounter) {
        this.pools = pools;
        this.mounter = mounter;
    }

    /**
     * Attaches the volume and mounts its filesystem at the staging path, making one first only if
     * the volume is provably empty; gives the root to {@code group} (fsGroup) if one is asked for.
     */
    public void stageFilesystem(VolumeId volume, Path staging, Optional<FilesystemType> type, List<String> options,
            Optional<Integer> group) {
        Pool pool = poolOf(volume);
        stage(pool, volume, staging, (device, table) -> {
            mounter.stageFilesystem(table, volume, device, () -> pool.emptiness(volume), staging, type, options);
            group.ifPresent(gid -> mounter.applyGroup(staging, gid));
        });
    }

    /** Attaches the volume for a raw block publish; the staging path must hold no filesystem of it. */
    public void stageBlock(VolumeId volume, Path staging) {
        Pool pool = poolOf(volume);
        stage(pool, volume, staging, (device, table) -> mounter.stageBlock(table, volume, device, staging));
    }

    /**
     * Attaches the volume, then reads the mount table once for the whole stage. Read after the
     * attach, not before: the device number may have been freed by another volume's unstage a moment
     * ago, and a table read before the attach would still show that volume's binds of the number as
     * this volume's (a raw block publish, refusing the stage). Attaching mounts nothing, so the
     * staging path reads the same either way.
     */
    private void stage(Pool pool, VolumeId volume, Path staging, BiConsumer<Path, MountTable> onDevice) {
        Attachment attachment = pool.attach(volume);
        MountTable table = null;
        try {
            table = MountTable.read();
            onDevice.accept(attachment.device(), table);
            pool.handedOut(volume);
        } catch (RuntimeException e) {
            // What this call attached goes again, unless it is now mounted; a mount that was
            // there before (another volume's) is not a reason to keep it.
            boolean wasMounted = table != null && table.at(staging).isPresent();
            if (attachment.attachedNow() && (wasMounted || !mounter.isMounted(staging))) {
                detachQuietly(pool, volume);
            }
            throw e;
        }
    }

    /**
     * Binds the staged filesystem into the target; the last publish's {@code group} owns the root,
     * as the kubelet would apply each pod's fsGroup.
     */
    public void publishFilesystem(VolumeId id, Path staging, Path target, boolean readOnly, Optional<Integer> group) {
        Path device = stagedDevice(id, staging);
        mounter.publishFilesystem(id, device, staging, target, readOnly);
        // Through the staging path, which is the same directory, writable even under a read-only bind.
        group.ifPresent(gid -> mounter.applyGroup(staging, gid));
    }

    /** Binds the volume's device node (or a read-only view of it) onto a file at the target. */
    public void publishBlock(VolumeId id, Path staging, Path target, boolean readOnly) {
        mounter.publishBlock(id, stagedDevice(id, staging), target, readOnly);
    }

    /**
     * Takes away what a publish of the volume put at the target. An ID that names no volume of
     * this node's pools is not attached here: only an empty target is then taken away.
     */
    public void unpublish(Optional<VolumeId> id, Path target) {
        mounter.unpublish(target, id.flatMap(this::attachedDevice));
    }

    /**
     * Unmounts what the stage mounted, releases read-only views a killed publish left unbound, and
     * detaches the volume; idempotent.
     */
    public void unstage(Optional<VolumeId> id, Path staging) {
        Optional<Path> device = id.flatMap(this::attachedDevice);
        mounter.unstage(staging, device);
        id.ifPresent(volume -> mounter.releaseUnboundViews(volume, device));
        id.ifPresent(volume -> pools.of(volume).ifPresent(pool -> pool.detach(volume)));
    }

    /** What a volume gets formatted as when its request names no filesystem. */
    public FilesystemType defaultType() {
        return mounter.defaultType();
    }

    /**
     * Makes a volume for this publish alone, stages it at its own staging path ({@code stagingOf}
     * its ID) and binds it into the target, whose root then goes to {@code group}. When making,
     * staging or binding fails, all of it goes again, the volume too (it holds no data yet); a
     * mount that was at the target before is not this publish's to take down.
     */
    public Volume publishNew(Pool pool, VolumeRequest request, Function<VolumeId, Path> stagingOf, Path target,
            boolean readOnly, Optional<FilesystemType> type, List<String> options, Optional<Integer> group) {
        boolean targetWasMounted = mounter.isMounted(target);
        boolean targetExisted = Files.exists(target, LinkOption.NOFOLLOW_LINKS);
        // The staging directory comes before the volume and goes after it: it is how an unpublish
        // finds a volume whose publish or unpublish a kill cut short (EphemeralVolumes.unpublish).
        Path staging = stagingOf.apply(VolumeId.mint(pool.name(), request.name()));
        boolean stagingMadeNow = !Files.isDirectory(staging);
        MountTable.makeDirectory(staging, "ephemeral staging directory", staging);
        Volume volume;
        try {
            volume = pool.create(request);
        } catch (RuntimeException e) {
            if (stagingMadeNow) {
                removeDirectoryQuietly(staging);
            }
            throw e;
        }
        if (!stagingOf.apply(volume.id()).equals(staging)) {
            throw new IllegalStateException("pool " + pool.name() + " gave volume " + volume.id() + " for name "
                    + Quoted.of(request.name()) + ", not the ID minted from it");
        }
        try {
            Path device = pool.attach(volume.id()).device();
            mounter.stageFilesystem(volume.id(), device, () -> pool.emptiness(volume.id()), staging, type, options);
            pool.handedOut(volume.id());
            mounter.publishFilesystem(volume.id(), device, staging, target, readOnly);
        } catch (RuntimeException e) {
            // The target is this publish's to take down only if it made it, or mounted on it: what
            // was there before (a file with data, say, on which nothing can be mounted) stays as it was.
            boolean targetIsOurs = !targetWasMounted && (!targetExisted || mounter.isMounted(target));
            try {
                remove(pool, volume.id(), staging, targetIsOurs ? Optional.of(target) : Optional.empty());
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
                LOG.log(System.Logger.Level.WARNING, "could not take down ephemeral volume " + volume.id() + ": "
                        + cleanup.getMessage());
            }
            throw e;
        }
        group.ifPresent(gid -> mounter.applyGroup(target, gid));
        return volume;
    }

    /**
     * Unmounts a volume made by {@link #publishNew} from the target (if given) and its staging
     * path, detaches and deletes the volume, drops its format records as DeleteVolume does, then
     * removes that path. A volume that is already gone
     * (a kill cut its publish or removal short) leaves only the path to remove. A target that, once
     * nothing is mounted on it, holds what no publish makes (a file with data) is refused, but only
     * after the volume is gone: none of the volume is there, and nobody else would ever delete it.
     */
    public void remove(VolumeId id, Path staging, Optional<Path> target) {
        remove(poolOf(id), id, staging, target);
    }

    private void remove(Pool pool, VolumeId id, Path staging, Optional<Path> target) {
        Optional<Path> device = pool.attachedDevice(id);
        Optional<StorageException> targetRefused = target.flatMap(t -> unpublishOrRefusal(id, t, device));
        mounter.unstage(staging, device);
        pool.detach(id);
        pool.delete(id);
        mounter.forget(id); // a record of a format a kill cut short must not outlive the volume
        removeDirectory(staging);
        targetRefused.ifPresent(refusal -> {
            throw refusal;
        });
    }

    /**
     * Takes the volume off the target; the refusal of what is left there once nothing is mounted on
     * it, for the caller to answer with after the volume is gone. With something still mounted there
     * (busy, someone else's, or over a bind of this volume), the refusal stands at once.
     */
    private Optional<StorageException> unpublishOrRefusal(VolumeId id, Path target, Optional<Path> device) {
        try {
            mounter.unpublish(target, device);
            return Optional.empty();
        } catch (StorageException.Precondition e) {
            if (mounter.isMounted(target)) {
                throw e;
            }
            return Optional.of(new StorageException.Precondition("inline volume " + id + " is removed, but "
                    + e.getMessage(), e));
        }
    }

    private Path stagedDevice(VolumeId id, Path staging) {
        return poolOf(id).attachedDevice(id).orElseThrow(() -> new StorageException.Precondition("volume " + id
                + " is not staged on this node (at " + Quoted.of(staging) + " or elsewhere): its device is not attached"));
    }

    /** Whether something is mounted at {@code path} that is not the volume (its stage or a publish of it). */
    public boolean holdsOtherThan(VolumeId id, Path path) {
        return VolumeHealth.holdsOther(attachedDevice(id), path);
    }

    /** The device a volume of ours is attached as on this node, if it is. */
    private Optional<Path> attachedDevice(VolumeId id) {
        return pools.of(id).flatMap(pool -> pool.attachedDevice(id));
    }

    private Pool poolOf(VolumeId id) {
        return pools.of(id).orElseThrow(() -> new StorageException.NotFound("volume " + id
                + " is in pool '" + id.pool() + "', which this node does not have"));
    }

    /** The staging directory of a volume made for one publish is the driver's own; the kubelet never sees it. */
    private static void removeDirectory(Path staging) {
        try {
            Files.deleteIfExists(staging);
        } catch (IOException e) {
            throw new StorageException.Failed("removing ephemeral staging directory " + staging + ": "
                    + e.getMessage(), e);
        }
    }

    private static void removeDirectoryQuietly(Path staging) {
        try {
            removeDirectory(staging);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "could not remove " + staging + " after a failed create: "
                    + e.getMessage());
        }
    }

    private static void detachQuietly(Pool pool, VolumeId id) {
        try {
            pool.detach(id);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "could not detach " + id + " after a failed stage: " + e.getMessage());
        }
    }
}
