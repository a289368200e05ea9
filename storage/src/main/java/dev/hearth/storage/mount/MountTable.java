package dev.hearth.storage.mount;

import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What /proc/self/mountinfo says about paths and devices, with its read errors as storage
 * failures: the record the stage and publish decisions are made from. A {@link #read()} is one
 * read of the table that several questions of one request share; the static helpers read afresh.
 */
final class MountTable {

    /**
     * The kernel's own filesystems: their directories are the kernel's objects (a process, a device,
     * a control group), made and removed by it or by a mkdir that means something else entirely.
     */
    private static final Set<String> KERNEL_FILESYSTEMS = Set.of("proc", "sysfs", "devtmpfs", "devpts", "cgroup",
            "cgroup2", "debugfs", "tracefs", "securityfs", "bpf", "configfs", "pstore", "efivarfs", "fusectl",
            "mqueue", "binfmt_misc", "nsfs", "selinuxfs", "rpc_pipefs");

    private final List<MountEntry> entries;

    private MountTable(List<MountEntry> entries) {
        this.entries = entries;
    }

    static MountTable read() {
        try {
            return new MountTable(MountInfo.read());
        } catch (IOException e) {
            throw new StorageException.Failed("reading mounts: " + e.getMessage(), e);
        }
    }

    /** The table as {@link MountInfo#readWatched} keeps it: for answers that report, never for a decision to change. */
    static MountTable readWatched() {
        try {
            return new MountTable(MountInfo.readWatched());
        } catch (IOException e) {
            throw new StorageException.Failed("reading mounts: " + e.getMessage(), e);
        }
    }

    static Optional<MountEntry> mountAt(Path path) {
        return read().at(path);
    }

    static MountEntry containing(Path path) {
        return read().mountContaining(path);
    }

    static boolean mountedAnywhere(Path device) {
        return read().hasMounted(device);
    }

    Optional<MountEntry> at(Path path) {
        return MountInfo.at(entries, path);
    }

    MountEntry mountContaining(Path path) {
        return MountInfo.containing(entries, path).orElseThrow(() -> new StorageException.Failed(
                "no mount contains " + path));
    }

    /** Whether the device's filesystem is mounted anywhere. */
    boolean hasMounted(Path device) {
        return !mountsOf(device).isEmpty();
    }

    /** Where the device's filesystem is mounted (each bind of it too). */
    List<MountEntry> mountsOf(Path device) {
        return entries.stream().filter(m -> device.toString().equals(m.source())).toList();
    }

    /** A mount over a directory hides the mounts beneath it: they could be neither used nor unmounted. */
    void requireNothingMountedBeneath(Path path, String what) {
        Path wanted = path.toAbsolutePath().normalize();
        Optional<MountEntry> beneath = entries.stream()
                .filter(m -> m.mountPoint().startsWith(wanted) && !m.mountPoint().equals(wanted))
                .findFirst();
        if (beneath.isPresent()) {
            throw new StorageException.Precondition(what + " " + Quoted.of(path) + " has "
                    + Quoted.of(beneath.get().mountPoint()) + " mounted beneath it, which a mount there would hide");
        }
    }

    /**
     * Where the device (or its read-only view) is bind-mounted as a block publish, if anywhere. A bind
     * made through a link's name (udev's /dev/mapper/vg-lv) shows the node the link leads to, and is found too.
     */
    Optional<Path> blockPublication(Path device) {
        List<Path> binds = MountInfo.bindsOf(entries, device);
        if (!binds.isEmpty()) {
            return Optional.of(binds.getFirst());
        }
        Optional<MountEntry> containing = MountInfo.containing(entries, device);
        if (containing.isEmpty()) {
            return Optional.empty(); // no mount holds the device node: nothing can bind it either
        }
        MountEntry devices = containing.get();
        // A view is a loop device: only binds of a loop device's node can be one, and each such node
        // is asked alone (not every loop device on the node, of which a file pool has one per volume).
        String loopNodes = MountInfo.bindRoot(devices, Path.of("/dev/loop"));
        return entries.stream()
                .filter(entry -> entry.major() == devices.major() && entry.minor() == devices.minor()
                        && entry.root().startsWith(loopNodes)
                        && ReadOnlyViews.isViewOf(devices.mountPoint().resolve(relativeRoot(devices, entry)), device))
                .map(MountEntry::mountPoint)
                .findFirst();
    }

    /** The path below the mount's own root that a bind mount of something inside it shows. */
    private static String relativeRoot(MountEntry mount, MountEntry bind) {
        String prefix = mount.root().equals("/") ? "/" : mount.root() + "/";
        return bind.root().substring(prefix.length());
    }

    /** The mounts stacked exactly at {@code path}, bottom first: the last is the one a lookup sees. */
    List<MountEntry> stackAt(Path path) {
        Optional<MountEntry> top = at(path);
        return top.isEmpty() ? List.of()
                : entries.stream().filter(e -> e.mountPoint().equals(top.get().mountPoint())).toList();
    }

    /** The device node a block publish bound at this mount, if it is a bind of something under /dev. */
    Optional<Path> boundDevice(MountEntry entry) {
        MountEntry devices = mountContaining(Path.of("/dev"));
        if (entry.major() != devices.major() || entry.minor() != devices.minor() || !devices.root().equals("/")) {
            return Optional.empty();
        }
        return Optional.of(devices.mountPoint().resolve(entry.root().substring(1)));
    }

    /** Whether any mount is a bind of the device node {@code node}. */
    boolean bindsNode(Path node) {
        return !MountInfo.bindsOf(entries, node).isEmpty();
    }

    static boolean binds(MountEntry entry, MountEntry devices, Path device) {
        return entry.major() == devices.major() && entry.minor() == devices.minor()
                && MountInfo.bindRoots(devices, device).contains(entry.root());
    }

    /**
     * Refuses a staging or target path on one of the kernel's own filesystems (/proc, /sys, /dev,
     * a cgroup tree): a mount there would hide a device node or a kernel file from the whole node,
     * and a directory made there is not a directory. The kubelet's paths are on a filesystem of
     * files (/var/lib/kubelet); tmpfs is one.
     */
    void refuseKernelFilesystem(Path path, String what) {
        MountEntry on = mountContaining(path);
        if (KERNEL_FILESYSTEMS.contains(on.fsType())) {
            throw new StorageException.InvalidArgument(what + " " + Quoted.of(path) + " is on " + Quoted.of(on.mountPoint())
                    + ", the kernel's " + on.fsType() + " filesystem; a volume is mounted only on a filesystem of files"
                    + " (the kubelet's are under /var/lib/kubelet)");
        }
    }

    /**
     * Makes the directory a mount goes onto, with its parents, or takes the empty one found there. One
     * that holds files is the request's mistake: the mount would hide them from everyone on the node,
     * and the kubelet never leaves files where a volume is to be mounted.
     */
    static void makeMountPoint(Path path, String what) {
        if (Files.isDirectory(path, LinkOption.NOFOLLOW_LINKS)) {
            try (DirectoryStream<Path> children = Files.newDirectoryStream(path)) {
                if (children.iterator().hasNext()) {
                    throw new StorageException.InvalidArgument(what + " " + Quoted.of(path) + " is a directory that"
                            + " holds files; hearth mounts a volume only onto an empty directory, never over files"
                            + " the mount would hide");
                }
            } catch (IOException | DirectoryIteratorException e) {
                throw new StorageException.Failed("reading " + what + " " + Quoted.of(path) + ": " + e.getMessage(), e);
            }
            return;
        }
        makeDirectory(path, what, path);
    }

    /**
     * Makes {@code directory} and its parents, for the request path {@code named}. A path that
     * something other than a directory occupies is the request's mistake, and one on a read-only
     * mount (inside a volume published read-only, say) cannot be made: neither is a failure of the node.
     */
    static void makeDirectory(Path directory, String what, Path named) {
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
                    refuseUnwritable(step, what, named);
                    break;
                }
            }
            throw new StorageException.Failed("creating " + what + " " + Quoted.of(directory) + ": "
                    + e.getMessage(), e);
        }
    }

    /**
     * Refuses, as the node's state rather than a failure, the making of {@code named} (the request's
     * {@code what}) when the existing directory {@code existing} it goes into is on a read-only mount,
     * or is not writable by the driver: made immutable (chattr +i), or on a mount that squashes root.
     */
    static void refuseUnwritable(Path existing, String what, Path named) {
        if (containing(existing).readOnly()) {
            throw new StorageException.Precondition(what + " " + Quoted.of(named) + " cannot be made: "
                    + Quoted.of(existing) + " is on a read-only mount");
        }
        if (!Files.isWritable(existing)) {
            throw new StorageException.Precondition(what + " " + Quoted.of(named) + " cannot be made: "
                    + Quoted.of(existing) + " is not writable by the driver on this node");
        }
    }
}
