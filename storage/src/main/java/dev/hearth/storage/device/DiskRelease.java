package dev.hearth.storage.device;

import dev.hearth.linux.Disk;
import dev.hearth.linux.Errno;
import dev.hearth.linux.ExclusiveDevice;
import dev.hearth.linux.LinuxException;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountInfo;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.probe.ProbeResult;
import dev.hearth.storage.probe.SignatureProbe;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The end of a device pool's volume: its disk wiped by the pool's policy, read back, and only then
 * given back, in the order {@link DevicePool} describes, from wherever a crash left it. The disk
 * is found by identity and opened exclusively for the wipe; a disk in use, or one that changed, is
 * refused and left as it is.
 */
final class DiskRelease {

    private static final System.Logger LOG = System.getLogger(DiskRelease.class.getName());

    private final DevicePoolConfig config;
    private final DiskClaims claims;
    private final VolumeRecords records;
    private final ProvenDisks proven;
    private final DiskWrites.Reader writes;
    private final DiskWiper wiper;
    private final Function<DiskIdentity, Located> locate;
    /** Volumes whose disk is being wiped now: a second delete of one is told to come back. */
    private final Set<VolumeId> wiping = ConcurrentHashMap.newKeySet();

    DiskRelease(DevicePoolConfig config, DiskClaims claims, VolumeRecords records, ProvenDisks proven,
            DiskWrites.Reader writes, DiskWiper wiper, Function<DiskIdentity, Located> locate) {
        this.config = config;
        this.claims = claims;
        this.records = records;
        this.proven = proven;
        this.writes = writes;
        this.wiper = wiper;
        this.locate = locate;
    }

    /** Deletes the recorded volume now; BUSY while another call (or the start-up) is wiping its disk. */
    void delete(VolumeRecord record) {
        VolumeId id = record.volume().id();
        if (!wiping.add(id)) {
            throw new StorageException.Busy("the disk of volume " + id + " is being wiped; retry once that is done");
        }
        try {
            release(record);
        } finally {
            wiping.remove(id);
        }
    }

    /**
     * Finishes, in the background (a wipe may take long), the deletes that wait for their disk: cut
     * short by a restart, or made while the disk was gone. Only those whose disk is on the node are
     * started; the others wait for the next call.
     */
    void resume(List<VolumeRecord> records, Function<DiskIdentity, Located> now) {
        for (VolumeRecord record : records) {
            VolumeId id = record.volume().id();
            if (record.releasing() && now.apply(record.disk()) instanceof Located.Found
                    && wiping.add(id)) {
                Thread.ofVirtual().name("hearth-release-" + id).start(() -> finish(record));
            }
        }
    }

    /** The delete itself, from wherever a crash may have left it; see {@link DevicePool} for the order. */
    private void release(VolumeRecord record) {
        VolumeId id = record.volume().id();
        DiskClaims.Claim claim = claimOf(record).orElse(null);
        if (claim == null) {
            // Not (or no longer) this volume's disk: the claim went back before a crash, and the disk may
            // be another volume's by now. Its record goes; the disk is not touched.
            records.delete(id);
            return;
        }
        switch (locate.apply(record.disk())) {
            case Located.Missing missing -> {
                // Deleted for the caller, but the disk owes a wipe: it stays claimed until it is back.
                if (!record.releasing()) {
                    records.write(record.releasingNow());
                }
                LOG.log(System.Logger.Level.WARNING, "pool '" + config.name() + "': volume " + id + " is deleted, "
                        + "but " + missing.problem() + "; the disk stays claimed, and is wiped when it comes back");
            }
            case Located.Changed changed -> throw new StorageException.Precondition("not deleting volume " + id
                    + ": " + changed.problem() + ". Restore the disk, or remove " + records.directory().resolve(
                            id.toString()) + " and the claim in " + claims.directory() + " by hand");
            case Located.Found(Disk disk) -> {
                List<String> uses = rawBlockUses(disk);
                if (!uses.isEmpty()) {
                    throw new StorageException.Precondition("volume " + id + " is in use on this node as a raw block "
                            + "device (" + String.join("; ", uses) + "); unpublish and unstage it before deleting");
                }
                wipe(record, disk);
                giveBack(claim);
                records.delete(id);
            }
        }
    }

    /**
     * What uses the disk without the kernel's exclusive claim, which the wipe's exclusive open would
     * not see: its device node bound somewhere (a raw block stage or publish), or a loop device
     * reading it (a read-only view of a read-only publish).
     */
    private List<String> rawBlockUses(Disk disk) {
        List<String> uses = new ArrayList<>();
        try {
            for (LoopAttachment loop : Loop.list()) {
                if (loop.backingFile().equals(disk.path())) {
                    uses.add(loop.device().path() + " reads it");
                }
            }
        } catch (IOException e) {
            throw new StorageException.Failed("listing the loop devices: " + e.getMessage(), e);
        }
        try {
            for (Path bind : MountInfo.bindsOf(MountInfo.read(), disk.path())) {
                uses.add("bound at " + bind);
            }
        } catch (IOException e) {
            throw new StorageException.Failed("reading the mount table: " + e.getMessage(), e);
        }
        return uses;
    }

    private void wipe(VolumeRecord record, Disk disk) {
        VolumeId id = record.volume().id();
        DiskWiper.Result result;
        try (ExclusiveDevice device = ExclusiveDevice.open(disk.path(), disk.major(), disk.minor())) {
            if (device.size() != record.disk().sizeBytes()) {
                throw new StorageException.Precondition("not wiping " + disk.path() + " for volume " + id + ": it has "
                        + device.size() + " bytes, not the " + record.disk().sizeBytes() + " of the volume's disk");
            }
            if (!record.releasing()) {
                records.write(record.releasingNow());
            }
            long started = System.nanoTime();
            result = wiper.wipe(device, disk, config.wipe());
            LOG.log(System.Logger.Level.INFO, "pool '" + config.name() + "': disk " + disk.path() + " of volume " + id + " "
                    + result.how() + " in " + (System.nanoTime() - started) / 1_000_000 + " ms");
        } catch (LinuxException e) {
            if (e.is(Errno.EBUSY)) {
                throw new StorageException.Precondition("volume " + id + " is in use on this node: its disk "
                        + disk.path() + " is mounted, held or open exclusively (" + String.join("; ", disk.uses())
                        + "); unstage it before deleting");
            }
            throw new StorageException.Failed("wiping disk " + disk.path() + " of volume " + id + ": "
                    + e.getMessage(), e);
        } catch (IOException e) {
            throw new StorageException.Failed("wiping disk " + disk.path() + " of volume " + id + ": "
                    + e.getMessage(), e);
        }
        verifyWiped(id, disk, result);
    }

    /** Reads the wiped disk back (the sampled check) and, if it is zeros, records it so for the next volume. */
    private void verifyWiped(VolumeId id, Disk disk, DiskWiper.Result result) {
        ProbeResult after;
        try (FileChannel channel = FileChannel.open(disk.path(), StandardOpenOption.READ)) {
            after = SignatureProbe.probe(channel, disk.sizeBytes(), result.zeroed() ? ZeroCheck.SAMPLED : ZeroCheck.EDGES,
                    _ -> {});
        } catch (IOException e) {
            throw new StorageException.Failed("reading back disk " + disk.path() + " of volume " + id + " after "
                    + "wiping it: " + e.getMessage(), e);
        }
        if (after instanceof ProbeResult.Signed || (result.zeroed() && !after.isEmpty())) {
            throw new StorageException.Failed("disk " + disk.path() + " of volume " + id + " was " + result.how()
                    + ", but reading it back finds: " + after.describe() + "; it is kept from other volumes");
        }
        if (result.zeroed()) {
            Optional<DiskWrites> counts = writes.of(disk);
            try {
                if (counts.isPresent()) {
                    proven.mark(DiskIdentity.of(disk).orElseThrow(), counts.get(), VolumeRecord.Empty.ZEROED, result.how());
                }
            } catch (IOException e) {
                // Only a shortcut is lost: the disk is checked like any other before it is offered again.
                LOG.log(System.Logger.Level.WARNING, "could not record that " + disk.path() + " was zeroed: "
                        + e.getMessage());
            }
        }
    }

    private void finish(VolumeRecord record) {
        VolumeId id = record.volume().id();
        try {
            LOG.log(System.Logger.Level.INFO, "pool '" + config.name() + "': finishing the delete of volume " + id
                    + ": wiping its disk " + record.disk());
            release(record);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "pool '" + config.name() + "': the delete of volume " + id + " is not done: "
                    + e.getMessage() + "; its disk stays claimed until a retried DeleteVolume finishes it");
        } finally {
            wiping.remove(id);
        }
    }

    private Optional<DiskClaims.Claim> claimOf(VolumeRecord record) {
        try {
            return claims.of(record.disk()).filter(c -> c.pool().equals(config.name())
                    && c.holder().equals(record.volume().id().toString()));
        } catch (IOException e) {
            throw new StorageException.Failed("reading the claim on " + record.disk() + ": " + e.getMessage(), e);
        }
    }

    void giveBack(DiskClaims.Claim claim) {
        try {
            claims.release(claim);
        } catch (IOException e) {
            throw new StorageException.Failed("giving back disk " + claim.disk() + ": " + e.getMessage(), e);
        }
    }

}
