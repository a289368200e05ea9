package dev.hearth.storage.mount;

import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.Errno;
import dev.hearth.linux.Freeze;
import dev.hearth.linux.LinuxException;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountFlags;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.storage.Emptiness;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.fs.Formatter;
import dev.hearth.storage.fs.Grower;
import dev.hearth.storage.fs.NotBlankException;
import dev.hearth.storage.probe.ProbeResult;
import dev.hearth.storage.probe.SignatureProbe;
import dev.hearth.storage.tool.ToolException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Stages and publishes block devices on this node. It keeps no state: whether something is
 * staged or published is read from /proc/self/mountinfo every time, so a restarted driver
 * continues where the last one stopped.
 */
public final class Mounter {

    private static final System.Logger LOG = System.getLogger(Mounter.class.getName());

    private final Formatter formatter;
    private final FormatJournal journal;
    private final Grower grower;
    private final FilesystemType defaultType;

    public Mounter(Formatter formatter, FormatJournal journal, Grower grower) {
        this(formatter, journal, grower, FilesystemType.EXT4);
    }

    /** @param defaultType what a blank volume is formatted as when the request names no filesystem */
    public Mounter(Formatter formatter, FormatJournal journal, Grower grower, FilesystemType defaultType) {
        this.formatter = formatter;
        this.journal = journal;
        this.grower = grower;
        this.defaultType = defaultType;
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
        MountFlags.Parsed flags = parseOptions(options);
        Optional<MountEntry> mounted = mountAt(staging);
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
        blockPublication(device).ifPresent(target -> {
            throw new StorageException.Conflict("volume " + volume + " is published as a raw block device at "
                    + target + "; it cannot be staged as a filesystem too");
        });
        requireNothingMountedBeneath(staging, "staging path"); // both refused before anything is formatted
        makeDirectory(staging, "staging path", staging);
        FilesystemType type = prepareFilesystem(volume, device, proof, requested);
        // A restore or clone larger than its source; never one mounted elsewhere, which e2fsck refuses.
        if (type == FilesystemType.EXT4 && !mountedAnywhere(device)) {
            grower.growUnmountedExt4(device);
        }
        try {
            Mounts.mount(device.toString(), staging, type.kernelName(), flags.flags(), flags.data());
        } catch (LinuxException e) {
            if (e.errno() == Errno.EINVAL && !options.isEmpty()) {
                throw new StorageException.InvalidArgument("mounting " + type.kernelName() + " with options "
                        + quoted(options) + " failed: " + e.getMessage());
            }
            throw new StorageException.Failed("mounting " + device + " at " + staging + ": " + e.getMessage(), e);
        }
        if (type != FilesystemType.EXT4) {
            grower.growMounted(device, staging, type); // xfs and btrfs grow only while mounted
        }
    }

    /**
     * Stages a block volume: nothing to mount, but the staging path must not hold this volume's
     * filesystem (staged before as a filesystem, it would be written underneath a mounted one).
     */
    public void stageBlock(VolumeId volume, Path device, Path staging) {
        Optional<MountEntry> mounted = mountAt(staging);
        if (mounted.isPresent()) {
            String what = device.toString().equals(mounted.get().source())
                    ? "volume " + volume + " is already staged there as a " + mounted.get().fsType() + " filesystem"
                    : mounted.get().source() + " is mounted there";
            throw new StorageException.Conflict("cannot stage a block volume at " + staging + ": " + what);
        }
    }

    /** Where the device (or its read-only view) is bind-mounted as a block publish, if anywhere. */
    private static Optional<Path> blockPublication(Path device) {
        try {
            Optional<MountEntry> containing = MountInfo.containing(device);
            if (containing.isEmpty()) {
                return Optional.empty(); // no mount holds the device node: nothing can bind it either
            }
            MountEntry devices = containing.get();
            List<Path> views = ReadOnlyViews.of(device);
            return MountInfo.read().stream()
                    .filter(entry -> binds(entry, devices, device) || views.stream().anyMatch(v -> binds(entry, devices, v)))
                    .map(MountEntry::mountPoint)
                    .findFirst();
        } catch (IOException e) {
            throw new StorageException.Failed("reading mounts: " + e.getMessage(), e);
        }
    }

    private FilesystemType prepareFilesystem(VolumeId volume, Path device, EmptyProof proof,
            Optional<FilesystemType> requested) {
        ProbeResult probe;
        long size;
        try {
            flush(device); // what a raw user wrote and the page cache still holds must reach the backing store
            size = BlockDevices.size(device);
            probe = SignatureProbe.probe(device, size);
        } catch (IOException e) {
            throw new StorageException.Failed("reading " + device + ": " + e.getMessage(), e);
        }
        FilesystemType wanted = requested.orElse(defaultType);
        if (journal.isOpen(volume)) {
            // Our own mkfs on this empty volume was cut short; what it left is ours to replace.
            format(device, wanted, () -> formatter.reformatInterrupted(device, wanted, size));
            journal.end(volume);
            return wanted;
        }
        switch (probe) {
            case ProbeResult.Empty empty -> {
                Emptiness emptiness = proof.emptiness();
                if (!(emptiness instanceof Emptiness.Proven)) {
                    throw new StorageException.Precondition("refusing to format " + device + " of volume " + volume
                            + ": it has no signature, but it is not provably empty: " + emptiness.describe());
                }
                if (size < wanted.minimumBytes()) {
                    throw new StorageException.Precondition("volume " + volume + " is " + Quantity.format(size)
                            + ", smaller than the " + Quantity.format(wanted.minimumBytes()) + " that "
                            + wanted.kernelName() + " needs; stage it with another fs_type");
                }
                journal.begin(volume, device);
                try {
                    format(device, wanted, () -> formatter.format(device, wanted, size));
                } catch (StorageException.Precondition refused) {
                    journal.end(volume); // refused before writing anything: nothing of ours is there
                    throw refused;
                }
                journal.end(volume);
                return wanted;
            }
            case ProbeResult.Signed signed -> {
                Optional<FilesystemType> found = Formatter.detect(signed);
                if (found.isEmpty()) {
                    throw new StorageException.Precondition("refusing to format " + device + ": it holds "
                            + signed.found());
                }
                if (requested.isPresent() && requested.get() != found.get()) {
                    throw new StorageException.Precondition(device + " already holds a " + found.get().kernelName()
                            + " filesystem; it will not be reformatted as " + wanted.kernelName());
                }
                return found.get();
            }
            case ProbeResult.NotEmpty notEmpty -> throw new StorageException.Precondition(
                    "refusing to format " + device + ": it is not empty (" + notEmpty.reason() + ")");
        }
    }

    /**
     * The formatter speaks in its own exceptions; callers of the Mounter get storage ones, so a
     * signature only blkid knows is refused as foreign data and a failing mkfs is a failure, not
     * an unclassified error.
     */
    private static void format(Path device, FilesystemType type, Runnable mkfs) {
        try {
            mkfs.run();
        } catch (NotBlankException e) {
            throw new StorageException.Precondition(e.getMessage());
        } catch (ToolException e) {
            throw StorageException.Failed.byTool("making " + type.kernelName() + " on " + device + ": "
                    + e.getMessage(), e);
        } catch (UncheckedIOException | IllegalStateException e) {
            throw new StorageException.Failed("making " + type.kernelName() + " on " + device + ": "
                    + e.getMessage(), e);
        }
    }

    /** Where the proof that a blank-looking device was never written comes from: its pool. */
    @FunctionalInterface
    public interface EmptyProof {
        Emptiness emptiness();
    }

    private static void flush(Path device) throws IOException {
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.READ)) {
            channel.force(false);
        }
    }

    /**
     * Unmounts everything stacked on the staging path; nothing mounted is fine. A filesystem still
     * frozen (a driver killed inside a snapshot's freeze) is thawed first: unmounted while frozen, it
     * would stay alive and frozen with no path left to thaw it, holding its device for good.
     */
    public void unstage(Path staging, Optional<Path> device) {
        Optional<MountEntry> mounted = mountAt(staging);
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
        unmountAll(staging, entry -> isDevice(entry, device));
    }

    /** Whether the mount is of the volume's device, as a stage or a filesystem publish makes it. */
    private static boolean isDevice(MountEntry entry, Optional<Path> device) {
        return device.isPresent() && device.get().toString().equals(entry.source());
    }

    public boolean isMounted(Path path) {
        return mountAt(path).isPresent();
    }

    /** The type of the device's filesystem mounted at {@code path}; empty for a block publish or nothing. */
    public Optional<FilesystemType> filesystemAt(Path device, Path path) {
        return mountAt(path)
                .filter(m -> device.toString().equals(m.source()))
                .flatMap(m -> FilesystemType.fromKernelName(m.fsType()));
    }

    /**
     * Where the device's filesystem, mounted at {@code path}, can be grown: there if that mount is
     * read-write, else another read-write mount of the whole filesystem (the staging path of a
     * volume published read-only), since xfs and btrfs refuse to grow through a read-only mount.
     */
    public Path writableMount(Path device, Path path) {
        if (mountAt(path).filter(m -> !m.readOnly()).isPresent()) {
            return path;
        }
        try {
            return MountInfo.read().stream()
                    .filter(m -> device.toString().equals(m.source()) && !m.readOnly() && m.root().equals("/"))
                    .map(MountEntry::mountPoint)
                    .findFirst()
                    .orElseThrow(() -> new StorageException.Precondition("the filesystem on " + device
                            + " is mounted only read-only (at " + Quoted.of(path)
                            + "); it can grow once it is mounted read-write"));
        } catch (IOException e) {
            throw new StorageException.Failed("reading mounts: " + e.getMessage(), e);
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
     * Bind-mounts the staged filesystem onto the target directory. The staging path must hold
     * this volume's device: a request naming another volume's staging path gets nothing of it.
     */
    public void publishFilesystem(VolumeId volume, Path device, Path staging, Path target, boolean readOnly) {
        MountEntry staged = mountAt(staging).orElseThrow(() -> new StorageException.Precondition(
                "volume " + volume + " is not staged: nothing is mounted at " + staging));
        if (!device.toString().equals(staged.source())) {
            throw new StorageException.Precondition("staging path " + staging + " holds " + staged.source()
                    + ", not " + device + " of volume " + volume);
        }
        if (alreadyPublished(target, staged.major(), staged.minor(), staged.root(), readOnly)) {
            return;
        }
        requireNothingMountedBeneath(target, "target path");
        makeDirectory(target, "target path", target);
        bind(staging, target, readOnly);
    }

    /**
     * Bind-mounts the block device node onto a file at the target path. Read-only binds a
     * read-only view of the device (see {@link ReadOnlyViews}), since the kernel would let writes
     * through a read-only bind of the device node itself.
     */
    public void publishBlock(Path device, Path target, boolean readOnly) {
        Optional<MountEntry> existing = mountAt(target);
        if (existing.isPresent()) {
            checkBlockPublished(existing.get(), device, target, readOnly);
            return;
        }
        makeDirectory(target.getParent(), "target path", target);
        try {
            if (Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                Files.delete(target); // an empty directory left by a caller; a block target must be a file
            }
            if (!Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                Files.createFile(target);
            }
        } catch (DirectoryNotEmptyException e) {
            throw new StorageException.InvalidArgument("target path " + Quoted.of(target)
                    + " is a directory that holds files; a block volume is published on a file");
        } catch (IOException e) {
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

    private static void checkBlockPublished(MountEntry entry, Path device, Path target, boolean readOnly) {
        MountEntry devices = containing(device);
        boolean bindsDevice = binds(entry, devices, device);
        boolean bindsView = ReadOnlyViews.of(device).stream().anyMatch(view -> binds(entry, devices, view));
        if (!bindsDevice && !bindsView) {
            throw new StorageException.Conflict("target path " + target + " already has another device mounted ("
                    + entry.source() + entry.root() + ")");
        }
        if (readOnly != bindsView) {
            throw new StorageException.Conflict("target path " + target + " is already published "
                    + (bindsView ? "read-only" : "read-write"));
        }
    }

    private static boolean binds(MountEntry entry, MountEntry devices, Path device) {
        return entry.major() == devices.major() && entry.minor() == devices.minor()
                && entry.root().equals(joinRoot(devices, device));
    }

    /**
     * Unmounts what a publish of the volume whose device is {@code device} put at the target, and
     * removes the empty file or directory left there; idempotent. Anything else mounted there is
     * refused, and a file with content, a device node or a directory holding files is never
     * removed: whatever a request names, hearth takes away only what its publish made.
     */
    public void unpublish(Path target, Optional<Path> device) {
        Optional<MountEntry> mounted = mountAt(target);
        Optional<Path> boundDevice = mounted.flatMap(Mounter::boundDevice);
        if (mounted.isPresent() && !published(mounted.get(), device)) {
            throw new StorageException.Precondition("target path " + Quoted.of(target) + " has "
                    + Quoted.of(mounted.get().source() + mounted.get().root()) + " mounted, which is not this volume's"
                    + "; hearth unmounts only what it mounted");
        }
        unmountAll(target, entry -> published(entry, device));
        boundDevice.ifPresent(ReadOnlyViews::releaseIfView);
        removePublishTarget(target);
    }

    /** Whether the mount is a publish of the device: its filesystem, its device node, or its read-only view. */
    private static boolean published(MountEntry entry, Optional<Path> device) {
        if (isDevice(entry, device)) {
            return true;
        }
        Optional<Path> bound = boundDevice(entry);
        return device.isPresent() && bound.isPresent()
                && (bound.get().equals(device.get()) || ReadOnlyViews.of(device.get()).contains(bound.get()));
    }

    /** Removes an empty directory or an empty regular file (what a publish makes); refuses anything else. */
    private static void removePublishTarget(Path target) {
        try {
            // Not there, or under something that is no directory (ENOTDIR): nothing to remove either way.
            if (!Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                return;
            }
            boolean emptyFile = Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) && Files.size(target) == 0;
            if (!emptyFile && !Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                throw new StorageException.Precondition("target path " + Quoted.of(target) + " has nothing mounted and"
                        + " holds " + (Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) ? "a file with data"
                        : "something that is no file or directory") + "; hearth removes only the empty directory or"
                        + " the empty file a publish made, never data");
            }
            Files.deleteIfExists(target);
        } catch (DirectoryNotEmptyException e) {
            throw new StorageException.Precondition("target path " + Quoted.of(target) + " has nothing mounted but"
                    + " holds files; hearth removes only the empty directory or the file a publish made, never data");
        } catch (IOException e) {
            throw new StorageException.Failed("removing target path " + target + ": " + e.getMessage(), e);
        }
    }

    /** The device node a block publish bound at this mount, if it is a bind of something under /dev. */
    private static Optional<Path> boundDevice(MountEntry entry) {
        MountEntry devices = containing(Path.of("/dev"));
        if (entry.major() != devices.major() || entry.minor() != devices.minor() || !devices.root().equals("/")) {
            return Optional.empty();
        }
        return Optional.of(devices.mountPoint().resolve(entry.root().substring(1)));
    }

    private boolean alreadyPublished(Path target, int major, int minor, String root, boolean readOnly) {
        Optional<MountEntry> existing = mountAt(target);
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

    /** Unmounts the mounts stacked at {@code path}, top first, while each is {@code ours}. */
    private static void unmountAll(Path path, java.util.function.Predicate<MountEntry> ours) {
        try {
            for (Optional<MountEntry> top = MountInfo.at(path); top.isPresent() && ours.test(top.get());
                    top = MountInfo.at(path)) {
                Mounts.unmount(path);
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
        } catch (IOException e) {
            throw new StorageException.Failed("reading mounts: " + e.getMessage(), e);
        }
    }

    /**
     * Makes {@code directory} and its parents, for the request path {@code named}. A path that
     * something other than a directory occupies is the request's mistake, and one on a read-only
     * mount (inside a volume published read-only, say) cannot be made: neither is a failure of the node.
     */
    private static void makeDirectory(Path directory, String what, Path named) {
        try {
            Files.createDirectories(directory);
        } catch (IOException e) {
            for (Path step = directory; step != null; step = step.getParent()) {
                if (Files.exists(step, LinkOption.NOFOLLOW_LINKS)) {
                    if (!Files.isDirectory(step, LinkOption.NOFOLLOW_LINKS)) {
                        throw new StorageException.InvalidArgument(what + " " + Quoted.of(named)
                                + (step.equals(named) ? "" : " lies under " + Quoted.of(step) + ", which")
                                + " exists and is not a directory");
                    }
                    if (containing(step).readOnly()) {
                        throw new StorageException.Precondition(what + " " + Quoted.of(named)
                                + " cannot be made: " + Quoted.of(step) + " is on a read-only mount");
                    }
                    break;
                }
            }
            throw new StorageException.Failed("creating " + what + " " + Quoted.of(directory) + ": "
                    + e.getMessage(), e);
        }
    }

    /** A mount over a directory hides the mounts beneath it: they could be neither used nor unmounted. */
    private static void requireNothingMountedBeneath(Path path, String what) {
        try {
            Path wanted = path.toAbsolutePath().normalize();
            Optional<MountEntry> beneath = MountInfo.read().stream()
                    .filter(m -> m.mountPoint().startsWith(wanted) && !m.mountPoint().equals(wanted))
                    .findFirst();
            if (beneath.isPresent()) {
                throw new StorageException.Precondition(what + " " + Quoted.of(path) + " has "
                        + Quoted.of(beneath.get().mountPoint()) + " mounted beneath it, which a mount there would hide");
            }
        } catch (IOException e) {
            throw new StorageException.Failed("reading mounts: " + e.getMessage(), e);
        }
    }

    private static boolean mountedAnywhere(Path device) {
        try {
            return MountInfo.read().stream().anyMatch(m -> device.toString().equals(m.source()));
        } catch (IOException e) {
            throw new StorageException.Failed("reading mounts: " + e.getMessage(), e);
        }
    }

    private static Optional<MountEntry> mountAt(Path path) {
        try {
            return MountInfo.at(path);
        } catch (IOException e) {
            throw new StorageException.Failed("reading mounts: " + e.getMessage(), e);
        }
    }

    private static MountEntry containing(Path path) {
        try {
            return MountInfo.containing(path).orElseThrow(() -> new StorageException.Failed(
                    "no mount contains " + path));
        } catch (IOException e) {
            throw new StorageException.Failed("reading mounts: " + e.getMessage(), e);
        }
    }

    /** The root a bind mount of {@code path} shows in mountinfo: the mount's root plus the relative path. */
    private static String joinRoot(MountEntry mount, Path path) {
        String relative = mount.mountPoint().relativize(path).toString();
        return mount.root().equals("/") ? "/" + relative : mount.root() + "/" + relative;
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
