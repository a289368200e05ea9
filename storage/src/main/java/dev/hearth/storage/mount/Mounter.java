package dev.hearth.storage.mount;

import dev.hearth.linux.Errno;
import dev.hearth.linux.LinuxException;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountFlags;
import dev.hearth.linux.Mounts;
import dev.hearth.storage.Emptiness;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.fs.Formatter;
import dev.hearth.storage.fs.Grower;
import dev.hearth.storage.probe.SignatureProbe;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * Stages and publishes block devices on this node. It keeps no state: whether something is
 * staged or published is read from /proc/self/mountinfo every time ({@link MountTable}), so a
 * restarted driver continues where the last one stopped. Whether a device gets a filesystem made
 * is {@link FirstFormat}'s decision; binds into pods and taking mounts down, {@link Publisher}'s.
 */
public final class Mounter {

    private static final Logger LOG = Logger.getLogger(Mounter.class.getName());

    private final FirstFormat firstFormat;
    private final FormatJournal journal;
    private final Grower grower;
    private final FilesystemType defaultType;

    public Mounter(Formatter formatter, FormatJournal journal, Grower grower) {
        this(formatter, journal, grower, FilesystemType.EXT4);
    }

    /** @param defaultType what a blank volume is formatted as when the request names no filesystem */
    public Mounter(Formatter formatter, FormatJournal journal, Grower grower, FilesystemType defaultType) {
        this.firstFormat = new FirstFormat(formatter, journal, defaultType);
        this.journal = journal;
        this.grower = grower;
        this.defaultType = defaultType;
    }

    /**
     * Drops the records this keeps of a volume (an unfinished format or growth, its read-only
     * views), for a volume that has been deleted: see {@link FormatJournal#forget}.
     */
    public void forget(VolumeId volume) {
        journal.forget(volume);
    }

    /** What a blank volume gets when the request names no filesystem. */
    public FilesystemType defaultType() {
        return defaultType;
    }

    /**
     * Mounts the device's filesystem at the staging path, first making one if (and only if) the
     * device is provably empty. {@code requested} empty means "whatever is there, else the default".
     */
    public void stageFilesystem(VolumeId volume, Path device, EmptyProof proof, Path staging,
            Optional<FilesystemType> requested, List<String> options) {
        stageFilesystem(MountTable.read(), volume, device, proof, staging, requested, options);
    }

    /** {@link #stageFilesystem} with the mount table as the caller read it: one read answers the whole stage. */
    void stageFilesystem(MountTable table, VolumeId volume, Path device, EmptyProof proof, Path staging,
            Optional<FilesystemType> requested, List<String> options) {
        MountFlags.Parsed flags = parseOptions(options);
        Optional<MountEntry> mounted = table.at(staging);
        if (mounted.isPresent()) {
            if (!device.toString().equals(mounted.get().source())) {
                throw new StorageException.Conflict("staging path " + staging + " already has "
                        + mounted.get().source() + " mounted, not " + device);
            }
            if (requested.isPresent() && !requested.get().kernelName().equals(mounted.get().fsType())) {
                throw new StorageException.Conflict("volume " + volume + " is already staged at " + staging + " as "
                        + mounted.get().fsType() + ", not " + requested.get().kernelName());
            }
            return;
        }
        table.blockPublication(device).ifPresent(target -> {
            throw new StorageException.Conflict("volume " + volume + " is published as a raw block device at "
                    + target + "; it cannot be staged as a filesystem too");
        });
        boolean readOnly = (flags.flags() & MountFlags.MS_RDONLY) != 0;
        table.mountsOf(device).stream().filter(m -> m.hasSuperOption("ro") != readOnly).findFirst().ifPresent(m -> {
            throw new StorageException.Conflict("volume " + volume + " is staged " + readWrite(!readOnly) + " at "
                    + m.mountPoint() + "; the kernel mounts a filesystem either read-only or read-write, so it cannot"
                    + " be staged " + readWrite(readOnly) + " at " + staging + " too");
        });
        table.requireNothingMountedBeneath(staging, "staging path"); // all refused before anything is formatted
        table.refuseKernelFilesystem(staging, "staging path");
        MountTable.makeMountPoint(staging, "staging path");
        FirstFormat.Prepared prepared = firstFormat.prepare(volume, device, proof, requested);
        FilesystemType type = prepared.type();
        // A restore or clone larger than its source; never one mounted elsewhere, which e2fsck refuses.
        if (type == FilesystemType.EXT4 && !prepared.madeNow() && !table.hasMounted(device)) {
            growOffline(volume, device);
        }
        try {
            Mounts.mount(device.toString(), staging, type.kernelName(), flags.flags(), flags.data());
        } catch (LinuxException e) {
            if (e.errno() == Errno.EINVAL && !options.isEmpty()) {
                throw new StorageException.InvalidArgument("mounting " + type.kernelName() + " with options "
                        + quoted(options) + " failed: " + e.getMessage());
            }
            if (e.errno() == Errno.EBUSY) {
                // What the check above cannot see: another holder of the device (a mount in another
                // namespace, an exclusive open), which is the node's state.
                throw new StorageException.Precondition("mounting " + device + " at " + staging + ": " + e.getMessage()
                        + "; the device is held elsewhere on this node");
            }
            if (Errno.damagedFilesystem(e.errno())) {
                // The volume's state, which hearth never repairs on its own.
                throw new StorageException.Precondition("volume " + volume + ": the " + type.kernelName()
                        + " filesystem on " + device + " does not mount (" + Errno.description(e.errno())
                        + "): it is damaged; repair it (" + type.repairTool() + ") before staging it");
            }
            throw new StorageException.Failed("mounting " + device + " at " + staging + ": " + e.getMessage(), e);
        }
        if (type != FilesystemType.EXT4 && !prepared.madeNow()) {
            grower.growMounted(device, staging, type); // xfs and btrfs grow only while mounted
        }
    }

    private static String readWrite(boolean readOnly) {
        return readOnly ? "read-only" : "read-write";
    }

    /**
     * Grows the unmounted ext4 to fill its device. The e2fsck -p before it and resize2fs run under a
     * record in the journal, written before the check and removed once the grow has finished; a
     * check that refuses the filesystem (damage that is not ours) removes the record, so that such
     * damage is never repaired by force. A stage that finds the record open (the driver killed in
     * the check or in resize2fs) repairs what the cut-short step left with e2fsck -y, then grows
     * again.
     */
    private void growOffline(VolumeId volume, Path device) {
        boolean cutShort = journal.isGrowing(volume);
        if (cutShort) {
            LOG.warning(() -> "volume " + volume + ": its last offline grow was cut short; repairing its ext4 on "
                    + device + " (e2fsck -y) before growing it again");
            grower.repairExt4(device);
        }
        boolean grows = grower.ext4FallsShort(device);
        if (grows) {
            // Open before e2fsck -p too: it rewrites the superblock's changed fields one write at a
            // time, and killed between two it leaves a superblock whose checksum does not match,
            // which -p then refuses for good (LvmCrashUmlIT found it). What -p refuses while it runs
            // uninterrupted is not ours, so the record goes with that refusal.
            journal.beginGrowth(volume, device);
            if (!cutShort) {
                try {
                    grower.checkExt4(device);
                } catch (RuntimeException e) {
                    journal.endGrowth(volume);
                    throw e;
                }
            }
            grower.resizeExt4(device);
        }
        if (grows || cutShort) {
            journal.endGrowth(volume);
        }
    }

    /**
     * Runs a stage's read-only steps on {@code blank}, a file of the caller's that reads as zeros:
     * the mount table read and asked about it, and the probe that decides whether a device may be
     * formatted (signatures, then zeros at both ends). Nothing is mounted, formatted or written; it
     * is for the JVM, which runs a path slowly the first few times. It launches no process: a
     * child holds, until it execs, whatever file its parent has open at that moment, and a file
     * open in a volume (the demo's, in the same JVM) would keep that volume busy meanwhile.
     */
    public void warmUp(Path blank) throws IOException {
        MountTable table = MountTable.read();
        table.at(blank);
        table.blockPublication(blank);
        table.hasMounted(blank);
        try (FileChannel channel = FileChannel.open(blank, StandardOpenOption.READ)) {
            SignatureProbe.probe(channel, channel.size());
        }
    }

    /**
     * Stages a block volume: nothing to mount, but the staging path must not hold this volume's
     * filesystem (staged before as a filesystem, it would be written underneath a mounted one).
     */
    public void stageBlock(VolumeId volume, Path device, Path staging) {
        stageBlock(MountTable.read(), volume, device, staging);
    }

    /** {@link #stageBlock} with the mount table as the caller read it. */
    void stageBlock(MountTable table, VolumeId volume, Path device, Path staging) {
        Optional<MountEntry> mounted = table.at(staging);
        if (mounted.isPresent()) {
            String what = device.toString().equals(mounted.get().source())
                    ? "volume " + volume + " is already staged there as a " + mounted.get().fsType() + " filesystem"
                    : mounted.get().source() + " is mounted there";
            throw new StorageException.Conflict("cannot stage a block volume at " + staging + ": " + what);
        }
    }

    /** Where the proof that a blank-looking device was never written comes from: its pool. */
    @FunctionalInterface
    public interface EmptyProof {
        Emptiness emptiness();
    }

    public boolean isMounted(Path path) {
        return MountTable.mountAt(path).isPresent();
    }

    /**
     * What a node expansion finds at {@code path} for the volume attached as {@code device}, from
     * one read of the mount table: another's mount, nothing but the backing to grow (a block
     * publish, or nothing mounted), or the device's filesystem, with a read-write mount of it to
     * grow it through.
     */
    public Growth growthAt(Optional<Path> device, Path path) {
        return Publisher.growthAt(path, device);
    }

    /** What a node expansion grows at the volume path: see {@link #growthAt}. */
    public sealed interface Growth {

        /** Something else is mounted at the volume path: the volume is not there. */
        record Other() implements Growth {}

        /** Nothing to grow beyond the backing: a block publish, or nothing mounted at the path. */
        record BackingOnly() implements Growth {}

        /**
         * The device's filesystem is mounted at {@code path}; {@code writable} is there if that mount
         * is read-write, else another read-write mount of the whole filesystem (the staging path of a
         * volume published read-only), since xfs and btrfs refuse to grow through a read-only mount.
         */
        record Filesystem(Path device, Path path, FilesystemType type, Optional<Path> writable) implements Growth {

            /** Where to grow it. */
            public Path writableMount() {
                return writable.orElseThrow(() -> new StorageException.Precondition("the filesystem on " + device
                        + " is mounted only read-only (at " + Quoted.of(path)
                        + "); it can grow once it is mounted read-write"));
            }
        }
    }

    /**
     * Gives the group {@code gid} the volume's root directory, with group read/write and the
     * setgid bit so new files inherit the group: what Kubernetes' fsGroup asks of a volume.
     */
    public void applyGroup(Path root, int gid) {
        try {
            if (Files.getFileStore(root).isReadOnly()) {
                return; // mounted read-only (a mount option): nothing can be written there, by any group
            }
            Files.setAttribute(root, "unix:gid", gid);
            int mode = (Integer) Files.getAttribute(root, "unix:mode");
            Files.setAttribute(root, "unix:mode", (mode & 07777) | 02070);
        } catch (IOException e) {
            throw new StorageException.Failed("giving " + root + " to group " + gid + ": " + e.getMessage(), e);
        }
    }

    /**
     * Unmounts everything stacked on the staging path; nothing mounted is fine. Refused when what
     * is mounted there is not the volume's {@code device}, and while the device is still published
     * as a raw block device (its node bound at a target); a filesystem left frozen is thawed first.
     */
    public void unstage(Path staging, Optional<Path> device) {
        Publisher.unstage(staging, device);
    }

    /**
     * Bind-mounts the staged filesystem onto the target directory. The staging path must hold
     * this volume's device: a request naming another volume's staging path gets nothing of it.
     */
    public void publishFilesystem(VolumeId volume, Path device, Path staging, Path target, boolean readOnly) {
        Publisher.publishFilesystem(volume, device, staging, target, readOnly);
    }

    /**
     * Bind-mounts the block device node (read-only: a read-only view of it) onto a file at the
     * target. A view is recorded before it is made, so that a publish killed before its bind leaves
     * a view the unstage will find and release.
     */
    public void publishBlock(VolumeId volume, Path device, Path target, boolean readOnly) {
        if (readOnly) {
            journal.markViews(volume);
        }
        Publisher.publishBlock(device, target, readOnly);
    }

    /**
     * Detaches the read-only views of the volume's device that nothing binds, if its record says a
     * view was made: a publish killed before its bind leaves one, which would hold the device open
     * (and the volume undeletable) for good. The record goes once no view of the device is bound.
     */
    public void releaseUnboundViews(VolumeId volume, Optional<Path> device) {
        if (!journal.hasViews(volume)) {
            return;
        }
        if (device.isPresent() && ReadOnlyViews.releaseUnbound(device.get(), MountTable.read())) {
            return; // still published read-only at another target: its unpublish releases that view
        }
        journal.clearViews(volume);
    }

    /**
     * Unmounts what a publish of the volume whose device is {@code device} put at the target and
     * removes what the publish made there; anything else is refused, never removed.
     */
    public void unpublish(Path target, Optional<Path> device) {
        Publisher.unpublish(target, device);
    }

    private static MountFlags.Parsed parseOptions(List<String> options) {
        try {
            return MountFlags.parse(options);
        } catch (MountFlags.InvalidOption e) {
            throw new StorageException.InvalidArgument("mount_flags " + Quoted.of(e.option()) + ": " + e.reason());
        }
    }

    private static String quoted(List<String> options) {
        return options.stream().map(Quoted::of).collect(Collectors.joining(", ", "[", "]"));
    }
}
