package dev.hearth.driver.inspect;

import dev.hearth.driver.inspect.Inspection.MountRow;
import dev.hearth.driver.inspect.Inspection.PoolRow;
import dev.hearth.driver.inspect.Inspection.VolumeRow;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.Pool;
import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeCondition;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.file.FilePoolConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Reads what this node's pools hold and where their volumes are attached and mounted, changing
 * nothing: the pools are opened read-only ({@link Opener}), the mounts come from one read of
 * /proc/self/mountinfo and the loop devices from one listing of sysfs. A mount belongs to a volume
 * when it is of the volume's device (its filesystem, or a bind of its device node or of a
 * read-only view of it); a mount of no volume's device is an orphan when it is hearth's by its
 * place (the kubelet's CSI paths for this driver, hearth's ephemeral staging) or by its device (a
 * loop device serving a file of a file pool).
 */
public final class Inspector {

    /** Opens one pool to be looked at, refusing every change. */
    @FunctionalInterface
    public interface Opener {
        Pool open(PoolConfig config) throws IOException;
    }

    private final Path stateDir;
    private final String driverName;
    private final Opener opener;

    public Inspector(Path stateDir, String driverName, Opener opener) {
        this.stateDir = stateDir;
        this.driverName = driverName;
        this.opener = opener;
    }

    /** A mount and the block device it is of, if it is of one. */
    private record Located(MountEntry entry, Optional<DeviceNumber> device) {}

    public Inspection inspect(List<? extends PoolConfig> configs, String defaultPool) {
        List<String> errors = new ArrayList<>();
        List<MountEntry> table = attempt(MountInfo::read, "reading /proc/self/mountinfo", errors).orElse(List.of());
        List<LoopAttachment> loops = attempt(Loop::list, "reading the loop devices in /sys/block", errors)
                .orElse(List.of());
        Optional<MountEntry> devices = MountInfo.containing(table, Path.of("/dev"));
        List<Located> mounts = table.stream().map(e -> new Located(e, deviceOf(e, devices))).toList();
        Set<Located> claimed = new HashSet<>();
        List<PoolRow> pools = new ArrayList<>();
        List<Orphan> orphans = new ArrayList<>();
        for (PoolConfig config : configs) {
            boolean isDefault = config.name().equals(defaultPool);
            Pool pool;
            try {
                pool = opener.open(config);
            } catch (IOException | RuntimeException e) {
                String why = "pool '" + config.name() + "': cannot open it: " + message(e);
                errors.add(why);
                pools.add(new PoolRow(config.name(), config.kind(), isDefault, Optional.empty(), Optional.of(why),
                        List.of()));
                continue;
            }
            try (pool) {
                pools.add(inspect(pool, isDefault, mounts, loops, claimed, errors));
                attempt(pool::orphans, "pool '" + pool.name() + "': looking for orphans", errors)
                        .ifPresent(orphans::addAll);
            }
        }
        Map<Path, String> fileDirectories = fileDirectories(configs);
        for (Located mount : mounts) {
            if (!claimed.contains(mount)) {
                strayMount(mount, loops, fileDirectories).ifPresent(orphans::add);
            }
        }
        return new Inspection(stateDir, driverName, pools, orphans, errors);
    }

    private PoolRow inspect(Pool pool, boolean isDefault, List<Located> mounts, List<LoopAttachment> loops,
            Set<Located> claimed, List<String> errors) {
        String where = "pool '" + pool.name() + "'";
        Optional<String> problem = attempt(pool::problem, where + ": checking it", errors);
        problem.ifPresent(errors::add);
        Optional<Capacity> capacity = attempt(pool::capacity, where + ": reading its capacity", errors);
        Optional<Pool.Listing> listing = attempt(pool::listing, where + ": listing its volumes", errors);
        List<VolumeRow> volumes = new ArrayList<>();
        for (Volume volume : listing.map(Pool.Listing::volumes).orElse(List.of())) {
            VolumeId id = volume.id();
            Optional<Path> device = attempt(() -> pool.attachedDevice(id).orElse(null),
                    "volume " + id + ": finding its device", errors);
            Set<DeviceNumber> numbers = device.map(d -> numbersOf(d, loops)).orElse(Set.of());
            List<MountRow> rows = new ArrayList<>();
            for (Located mount : mounts) {
                if (mount.device().filter(numbers::contains).isPresent()) {
                    claimed.add(mount);
                    Path path = mount.entry().mountPoint();
                    rows.add(new MountRow(path, KubeletPaths.of(path, ephemeral(), driverName).role(),
                            mount.entry().readOnly()));
                }
            }
            Optional<VolumeCondition> condition = attempt(() -> listing.get().condition().apply(volume),
                    "volume " + id + ": reading its condition", errors);
            volumes.add(new VolumeRow(volume, pool.backing(id), device, rows, condition));
        }
        return new PoolRow(pool.name(), pool.kind(), isDefault, capacity, problem, volumes);
    }

    /** The volume's device and the read-only views over it (what a read-only block publish binds). */
    private static Set<DeviceNumber> numbersOf(Path device, List<LoopAttachment> loops) {
        Set<DeviceNumber> numbers = new LinkedHashSet<>();
        DeviceNumber.of(device).ifPresent(numbers::add);
        for (LoopAttachment loop : loops) {
            if (loop.readOnly() && loop.backingFile().equals(device)) {
                DeviceNumber.of(loop.device().path()).ifPresent(numbers::add);
            }
        }
        return numbers;
    }

    /**
     * The block device a mount is of: a bind of a device node (a block publish) stands for that
     * device; any other mount for the device its filesystem is on, which mountinfo names, or for
     * a filesystem on an anonymous device number (btrfs), the device its source names.
     */
    private static Optional<DeviceNumber> deviceOf(MountEntry entry, Optional<MountEntry> devices) {
        if (devices.isPresent() && entry.major() == devices.get().major() && entry.minor() == devices.get().minor()
                && !entry.root().equals("/")) {
            Path node = devices.get().mountPoint().resolve(entry.root().substring(1));
            return DeviceNumber.of(node);
        }
        if (entry.major() != 0) {
            return Optional.of(new DeviceNumber(entry.major(), entry.minor()));
        }
        return entry.source().startsWith("/dev/") ? DeviceNumber.of(Path.of(entry.source())) : Optional.empty();
    }

    /** A mount of no volume, if it is hearth's by where it is or by what it mounts. */
    private Optional<Orphan> strayMount(Located mount, List<LoopAttachment> loops, Map<Path, String> fileDirectories) {
        MountEntry entry = mount.entry();
        KubeletPaths.Place place = KubeletPaths.of(entry.mountPoint(), ephemeral(), driverName);
        Optional<LoopAttachment> loop = mount.device().flatMap(number -> loops.stream()
                .filter(l -> DeviceNumber.of(l.device().path()).equals(Optional.of(number))).findFirst());
        Optional<String> pool = loop.map(l -> fileDirectories.get(l.backingFile().getParent()));
        boolean ours = place.driver().filter(driverName::equals).isPresent() || pool.isPresent();
        if (!ours) {
            return Optional.empty();
        }
        Optional<VolumeId> volume = loop.flatMap(l -> VolumeId.parse(
                l.backingFile().getFileName().toString().replaceFirst("\\.img$", "")));
        String what = loop.map(l -> l.device().path() + " (serving " + l.backingFile()
                        + (l.backingDeleted() ? ", which was deleted" : "") + ")")
                .orElse(entry.source() + " (" + entry.fsType() + mount.device().map(d -> ", " + d).orElse("") + ")");
        return Optional.of(new Orphan(pool.orElse(""), Orphan.Kind.MOUNT, entry.mountPoint().toString(), volume,
                "a " + place.role().label() + " mount of " + what + ", which belongs to no volume of the pools"));
    }

    /** Each file pool's directories (as configured and as sysfs names them, symlinks resolved) to its name. */
    private static Map<Path, String> fileDirectories(List<? extends PoolConfig> configs) {
        Map<Path, String> directories = new HashMap<>();
        for (PoolConfig config : configs) {
            if (config instanceof FilePoolConfig file) {
                for (Path directory : List.of(file.directory(), file.directory().resolve("snapshots"))) {
                    directories.put(directory, config.name());
                    directories.put(real(directory), config.name());
                }
            }
        }
        return directories;
    }

    private static Path real(Path path) {
        try {
            return path.toRealPath();
        } catch (IOException e) {
            return path;
        }
    }

    private Path ephemeral() {
        return stateDir.resolve("ephemeral");
    }

    /** A read that may fail: its failure is recorded, naming what was being read, and the rest goes on. */
    private static <T> Optional<T> attempt(Read<T> read, String what, List<String> errors) {
        try {
            return Optional.ofNullable(read.get());
        } catch (IOException | RuntimeException e) {
            errors.add(what + ": " + message(e));
            return Optional.empty();
        }
    }

    @FunctionalInterface
    private interface Read<T> {
        T get() throws IOException;
    }

    private static String message(Exception e) {
        return e.getMessage() == null ? e.toString() : e.getMessage();
    }
}
