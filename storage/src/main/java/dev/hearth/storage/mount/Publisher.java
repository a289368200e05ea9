package dev.hearth.storage.mount;

import dev.hearth.linux.Errno;
import dev.hearth.linux.FileOps;
import dev.hearth.linux.Freeze;
import dev.hearth.linux.LinuxException;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.fs.FilesystemType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Binding a staged volume into pods (its filesystem, its device node or a read-only view of it)
 * and taking binds and stages down again, with the ownership checks that keep hearth from
 * unmounting or removing anything a publish or stage of that very volume did not make.
 */
final class Publisher {

    // Under the Mounter's name, where these lines were logged before the Mounter was split.
    private static final System.Logger LOG = System.getLogger(Mounter.class.getName());

    private Publisher() {}

    /**
     * Unmounts everything stacked on the staging path; nothing mounted is fine. A filesystem still
     * frozen (a driver killed inside a snapshot's freeze) is thawed first: unmounted while frozen, it
     * would stay alive and frozen with no path left to thaw it, holding its device for good.
     */
    static void unstage(Path staging, Optional<Path> device) {
        MountTable table = MountTable.read(); // one read, unless several mounts are stacked there
        // A bind of the device node does not hold the device open: a loop device detached under it
        // is free at once, and the next volume staged may get it, and with it this pod's device file.
        device.flatMap(table::blockPublication).ifPresent(target -> {
            throw new StorageException.Precondition("the volume is still published as a raw block device at "
                    + Quoted.of(target) + "; unpublish it there (NodeUnpublishVolume) before unstaging it");
        });
        Optional<MountEntry> mounted = table.at(staging);
        if (mounted.isPresent() && !isDevice(mounted.get(), device)) {
            throw new StorageException.Precondition("staging path " + Quoted.of(staging) + " has "
                    + Quoted.of(mounted.get().source()) + " mounted, which is not this volume's"
                    + device.map(d -> " (" + d + ")").orElse(" (it is not attached on this node)")
                    + "; hearth unmounts only what it mounted");
        }
        if (mounted.isPresent()) {
            try {
                if (Freeze.thaw(staging)) {
                    LOG.log(System.Logger.Level.WARNING, "thawed " + staging + " before unstaging it: it was left frozen");
                }
            } catch (IOException | IllegalArgumentException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> "thaw before unstaging " + staging + ": " + e.getMessage());
            }
        }
        unmountAll(staging, table, (entry, now) -> isDevice(entry, device));
    }

    /** Whether the mount is of the volume's device, as a stage or a filesystem publish makes it. */
    private static boolean isDevice(MountEntry entry, Optional<Path> device) {
        return device.isPresent() && device.get().toString().equals(entry.source());
    }

    /**
     * Bind-mounts the staged filesystem onto the target directory. The staging path must hold
     * this volume's device: a request naming another volume's staging path gets nothing of it.
     */
    static void publishFilesystem(VolumeId volume, Path device, Path staging, Path target, boolean readOnly) {
        MountTable table = MountTable.read(); // one read answers every question of this publish
        MountEntry staged = table.at(staging).orElseThrow(() -> new StorageException.Precondition(
                "volume " + volume + " is not staged: nothing is mounted at " + staging));
        if (!device.toString().equals(staged.source())) {
            throw new StorageException.Precondition("staging path " + staging + " holds " + staged.source()
                    + ", not " + device + " of volume " + volume);
        }
        if (alreadyPublished(table.at(target), target, staged.major(), staged.minor(), staged.root(), readOnly)) {
            return;
        }
        table.requireNothingMountedBeneath(target, "target path");
        table.refuseKernelFilesystem(target, "target path");
        MountTable.makeMountPoint(target, "target path");
        bind(staging, target, readOnly);
    }

    /**
     * Bind-mounts the block device node onto a file at the target path. Read-only binds a
     * read-only view of the device (see {@link ReadOnlyViews}), since the kernel would let writes
     * through a read-only bind of the device node itself.
     */
    static void publishBlock(Path device, Path target, boolean readOnly) {
        MountTable table = MountTable.read();
        Optional<MountEntry> existing = table.at(target);
        if (existing.isPresent()) {
            checkBlockPublished(table, existing.get(), device, target, readOnly);
            return;
        }
        table.refuseKernelFilesystem(target, "target path");
        refuseDetaching(device);
        MountTable.makeDirectory(target.getParent(), "target path", target);
        try {
            if (Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                FileOps.remove(target, true); // an empty directory left by a caller; a block target must be a file
            }
            if (!Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                Files.createFile(target);
            } else if (!Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) || Files.size(target) != 0) {
                // A bind over it would hide it on the node: a file's data, or a device node (a disk's
                // /dev/sda, which every later open would find to be this volume).
                throw new StorageException.InvalidArgument("target path " + Quoted.of(target) + " holds "
                        + (Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) ? "a file with data"
                        : "something that is no file or directory") + "; a block volume is published onto a new"
                        + " or empty file, never over what the bind would hide");
            }
        } catch (LinuxException e) {
            if (e.errno() == Errno.ENOTEMPTY || e.errno() == Errno.EEXIST) {
                throw new StorageException.InvalidArgument("target path " + Quoted.of(target)
                        + " is a directory that holds files; a block volume is published on a file");
            }
            throw removalRefused(target, e); // ENOENT too: something else took the directory away meanwhile
        } catch (IOException e) {
            MountTable.refuseUnwritable(target.getParent(), "target path", target);
            throw new StorageException.Failed("creating block target " + target + ": " + e.getMessage(), e);
        }
        Path source = readOnly ? ReadOnlyViews.create(device) : device;
        try {
            bind(source, target, readOnly);
        } catch (RuntimeException e) {
            if (readOnly) {
                ReadOnlyViews.releaseIfView(source);
            }
            throw e;
        }
    }

    /**
     * A bind of a device node does not hold the device open: a loop device that goes at its last
     * close (an unstage detached it while someone still had it open) would go under the pod's bind,
     * and the next volume attached on the node could get it, and with it this pod. A stage takes
     * such a detach back; without one, the volume is not staged.
     */
    private static void refuseDetaching(Path device) {
        Optional<LoopDevice> loop = LoopDevice.fromPath(device);
        if (loop.isEmpty()) {
            return;
        }
        try {
            if (Loop.detaching(loop.get())) {
                throw new StorageException.Precondition("the volume's device " + device + " is being detached (it was"
                        + " unstaged while something still had it open, and goes at that last close); stage the"
                        + " volume again (NodeStageVolume) before publishing it");
            }
        } catch (IOException e) {
            throw new StorageException.Failed("reading loop device " + device + ": " + e.getMessage(), e);
        }
    }

    private static void checkBlockPublished(MountTable table, MountEntry entry, Path device, Path target,
            boolean readOnly) {
        MountEntry devices = table.mountContaining(device);
        boolean bindsDevice = MountTable.binds(entry, devices, device);
        boolean bindsView = !bindsDevice && table.boundDevice(entry).filter(bound -> MountTable.binds(entry, devices, bound)
                && ReadOnlyViews.isViewOf(bound, device)).isPresent();
        if (!bindsDevice && !bindsView) {
            throw new StorageException.Conflict("target path " + target + " already has another device mounted ("
                    + entry.source() + entry.root() + ")");
        }
        if (readOnly != bindsView) {
            throw new StorageException.Conflict("target path " + target + " is already published "
                    + (bindsView ? "read-only" : "read-write"));
        }
    }

    /**
     * Unmounts what a publish of the volume whose device is {@code device} put at the target, and
     * removes the empty file or directory left there; idempotent. Anything else mounted there is
     * refused, and a file with content, a device node or a directory holding files is never
     * removed: whatever a request names, hearth takes away only what its publish made.
     */
    static void unpublish(Path target, Optional<Path> device) {
        MountTable table = MountTable.read(); // one read, unless several mounts are stacked there
        Optional<MountEntry> mounted = table.at(target);
        Optional<Path> boundDevice = mounted.flatMap(table::boundDevice);
        if (mounted.isPresent() && !published(mounted.get(), device, table)) {
            throw new StorageException.Precondition("target path " + Quoted.of(target) + " has "
                    + Quoted.of(mounted.get().source() + mounted.get().root()) + " mounted, which is not this volume's"
                    + device.map(d -> " (" + d + ")").orElse(" (it is not attached on this node)")
                    + "; hearth unmounts only what it mounted");
        }
        unmountAll(target, table, (entry, now) -> published(entry, device, now));
        boundDevice.ifPresent(ReadOnlyViews::releaseIfView);
        removePublishTarget(target);
    }

    /**
     * What the mount table shows at {@code path} for the volume whose device is {@code device}: the
     * volume (its stage, a publish of its filesystem, a bind of its device node or of its read-only
     * view), nothing, or something else. For the kubelet's health and usage calls, which report and
     * change nothing: from the table as last read unless it changed since ({@link MountTable#readWatched}).
     */
    static VolumeHealth.AtPath at(Path path, Path device) {
        MountTable table = MountTable.readWatched();
        Optional<MountEntry> mounted = table.at(path);
        if (mounted.isEmpty()) {
            return VolumeHealth.AtPath.NOTHING;
        }
        return published(mounted.get(), Optional.of(device), table) ? VolumeHealth.AtPath.VOLUME
                : VolumeHealth.AtPath.OTHER;
    }

    /**
     * Whether something is mounted at {@code path} that is not the volume whose device is {@code
     * device}: with no device (the volume not attached here), anything mounted there.
     */
    static boolean holdsOther(Path path, Optional<Path> device) {
        MountTable table = MountTable.read();
        return table.at(path).filter(mounted -> !published(mounted, device, table)).isPresent();
    }

    /** See {@link Mounter#growthAt}: one read of the table answers whether the volume is there and what grows. */
    static Mounter.Growth growthAt(Path path, Optional<Path> device) {
        MountTable table = MountTable.read();
        Optional<MountEntry> mounted = table.at(path);
        if (mounted.isEmpty()) {
            return new Mounter.Growth.BackingOnly();
        }
        MountEntry entry = mounted.get();
        if (!published(entry, device, table)) {
            return new Mounter.Growth.Other();
        }
        if (device.isEmpty() || !device.get().toString().equals(entry.source())) {
            return new Mounter.Growth.BackingOnly(); // a bind of the device node or of its read-only view
        }
        Optional<FilesystemType> type = FilesystemType.fromKernelName(entry.fsType());
        if (type.isEmpty()) {
            return new Mounter.Growth.BackingOnly();
        }
        Optional<Path> writable = !entry.readOnly() ? Optional.of(path)
                : table.mountsOf(device.get()).stream()
                        .filter(m -> !m.readOnly() && m.root().equals("/"))
                        .map(MountEntry::mountPoint)
                        .findFirst();
        return new Mounter.Growth.Filesystem(device.get(), path, type.get(), writable);
    }

    /** Whether the mount is a publish of the device: its filesystem, its device node, or its read-only view. */
    private static boolean published(MountEntry entry, Optional<Path> device, MountTable table) {
        if (isDevice(entry, device)) {
            return true;
        }
        Optional<Path> bound = table.boundDevice(entry);
        return device.isPresent() && bound.isPresent()
                && (MountInfo.sameNode(bound.get(), device.get()) || ReadOnlyViews.isViewOf(bound.get(), device.get()));
    }

    /** Removes an empty directory or an empty regular file (what a publish makes); refuses anything else. */
    private static void removePublishTarget(Path target) {
        boolean directory;
        try {
            // Not there, or under something that is no directory (ENOTDIR): nothing to remove either way.
            if (!Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                return;
            }
            boolean emptyFile = Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) && Files.size(target) == 0;
            directory = Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS);
            if (!emptyFile && !directory) {
                throw new StorageException.Precondition("target path " + Quoted.of(target) + " has nothing mounted and"
                        + " holds " + (Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) ? "a file with data"
                        : "something that is no file or directory") + "; hearth removes only the empty directory or"
                        + " the empty file a publish made, never data");
            }
        } catch (IOException e) {
            throw new StorageException.Failed("looking at target path " + target + ": " + e.getMessage(), e);
        }
        try {
            FileOps.remove(target, directory); // rmdir fails on a directory that holds files: never data
        } catch (LinuxException e) {
            if (e.errno() != Errno.ENOENT) { // gone meanwhile: removed either way
                throw removalRefused(target, e);
            }
        }
    }

    /**
     * Why the kernel would not remove a target (an unpublished one, or an empty directory where a
     * block volume's file goes): the node's state, where the request's path lies, or a failure of the
     * node (an I/O error, say).
     */
    static StorageException removalRefused(Path target, LinuxException e) {
        String path = "target path " + Quoted.of(target);
        return switch (e.errno()) {
            case Errno.ENOTEMPTY, Errno.EEXIST -> new StorageException.Precondition(path + " has nothing mounted but"
                    + " holds files; hearth removes only the empty directory or the empty file a publish made, never data");
            case Errno.EBUSY -> new StorageException.Precondition(path + " is a mount point through another path on"
                    + " this node (" + e.errnoName() + "), though nothing is mounted on it here; the kernel lets"
                    + " nothing remove it until that is unmounted");
            case Errno.EROFS -> new StorageException.Precondition(path + " lies on a read-only mount ("
                    + e.errnoName() + "), where hearth can neither make nor remove a target");
            case Errno.EPERM, Errno.EACCES -> new StorageException.Precondition(path + " cannot be removed ("
                    + e.errnoName() + "): an immutable or append-only attribute, or a sticky directory that another"
                    + " user owns");
            default -> new StorageException.Failed("removing " + path + ": " + e.getMessage(), e);
        };
    }

    private static boolean alreadyPublished(Optional<MountEntry> existing, Path target, int major, int minor,
            String root, boolean readOnly) {
        if (existing.isEmpty()) {
            return false;
        }
        MountEntry entry = existing.get();
        if (entry.major() != major || entry.minor() != minor || !entry.root().equals(root)) {
            throw new StorageException.Conflict("target path " + target + " already has another volume mounted ("
                    + entry.source() + entry.root() + ")");
        }
        if (entry.readOnly() != readOnly) {
            throw new StorageException.Conflict("target path " + target + " is already published "
                    + (entry.readOnly() ? "read-only" : "read-write"));
        }
        return true;
    }

    private static void bind(Path source, Path target, boolean readOnly) {
        try {
            Mounts.bind(source, target, readOnly);
        } catch (LinuxException e) {
            throw new StorageException.Failed("bind-mounting " + source + " at " + target + ": " + e.getMessage(), e);
        }
    }

    /**
     * umount2, tried again for a moment while it answers EBUSY. A mount is busy for a moment after
     * its last user has gone: a container's processes still exiting when the kubelet unpublishes, or
     * a process forked elsewhere that holds a copy of a file descriptor until its exec closes it.
     * Still busy after about 300 ms, it is busy for a reason: the caller's retry comes back later.
     */
    private static void unmountPatiently(Path path) throws LinuxException {
        for (int pause = 10; ; pause *= 2) {
            try {
                Mounts.unmount(path);
                return;
            } catch (LinuxException e) {
                if (e.errno() != Errno.EBUSY || pause > 160) {
                    throw e;
                }
            }
            try {
                Thread.sleep(pause);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
                throw new StorageException.Failed("unmounting " + path + ": interrupted", interrupted);
            }
        }
    }

    /**
     * Unmounts the mounts stacked at {@code path}, top first, while each is {@code ours} (asked with
     * the table it was found in). The table read before answers for a path with one mount or none;
     * after an unmount where more were stacked, the table is read again to see what is on top now.
     */
    private static void unmountAll(Path path, MountTable table,
            java.util.function.BiPredicate<MountEntry, MountTable> ours) {
        try {
            MountTable now = table;
            List<MountEntry> stack = now.stackAt(path);
            while (!stack.isEmpty() && ours.test(stack.getLast(), now)) {
                unmountPatiently(path);
                if (stack.size() == 1) {
                    return;
                }
                now = MountTable.read();
                stack = now.stackAt(path);
            }
        } catch (LinuxException e) {
            if (e.errno() == Errno.EBUSY) {
                throw new StorageException.Precondition(path + " is busy: " + e.getMessage());
            }
            if (e.errno() == Errno.ENOENT) {
                throw new StorageException.Precondition(Quoted.of(path) + " is in the mount table but cannot be"
                        + " reached: a mount over a directory above it hides it; unmount that first");
            }
            throw new StorageException.Failed("unmounting " + path + ": " + e.getMessage(), e);
        }
    }
}
