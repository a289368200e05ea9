package dev.hearth.storage.file;

import dev.hearth.linux.FileOps;
import dev.hearth.linux.FileSystems;
import dev.hearth.linux.FsStats;
import dev.hearth.linux.LinuxException;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.Pool;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A pool whose volumes are image files in one directory, attached as loop devices. The pool's
 * truth is the directory: an image plus its metadata file is a volume; an image without
 * metadata is a create that did not finish, which a retry of that create replaces.
 */
public final class FilePool implements Pool {

    public static final String PROVISIONING = "hearth.dev/provisioning";
    static final String LOCK_FILE = ".hearth.lock";
    /** Loop devices and filesystems want whole sectors; a MiB keeps sizes readable. */
    static final long GRANULARITY = 1L << 20;

    private static final System.Logger LOG = System.getLogger(FilePool.class.getName());

    private final FilePoolConfig config;
    private final Path directory;
    /** Serializes the capacity check with the reservation it guards; held only for metadata-speed work. */
    private final Object allocation = new Object();
    private final StripedLocks attachLocks = new StripedLocks();

    /** Held while the pool is open: one driver per pool directory. */
    private final FileChannel ownership;

    private FilePool(FilePoolConfig config, FileChannel ownership) {
        this.config = config;
        this.directory = config.directory();
        this.ownership = ownership;
    }

    /**
     * Opens (creating if needed) the pool directory, takes ownership of it, and clears what
     * unfinished creates left. Ownership comes first: a second driver pointed at the same
     * directory must not clear away a create the first one has in flight.
     */
    public static FilePool open(FilePoolConfig config) throws IOException {
        Files.createDirectories(config.directory(), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwx------")));
        FileChannel ownership = FileChannel.open(config.directory().resolve(LOCK_FILE), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE);
        try {
            if (ownership.tryLock() == null) {
                throw new OverlappingFileLockException();
            }
        } catch (OverlappingFileLockException e) {
            ownership.close();
            throw new IOException("pool '" + config.name() + "': directory " + config.directory()
                    + " is in use by another hearth driver");
        }
        FilePool pool = new FilePool(config, ownership);
        pool.removeUnfinished();
        return pool;
    }

    /** Gives up ownership of the directory; the volumes stay. */
    @Override
    public void close() {
        try {
            ownership.close();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "closing the lock of pool '" + name() + "': " + e.getMessage());
        }
    }

    @Override
    public String name() {
        return config.name();
    }

    @Override
    public String kind() {
        return "file";
    }

    public FilePoolConfig config() {
        return config;
    }

    @Override
    public Map<String, String> validateParameters(Map<String, String> parameters) {
        Map<String, String> normalized = new TreeMap<>();
        for (var entry : parameters.entrySet()) {
            if (!entry.getKey().equals(PROVISIONING)) {
                throw new StorageException.InvalidArgument("unknown parameter '" + entry.getKey()
                        + "' for file pool '" + name() + "'; it accepts: " + PROVISIONING);
            }
        }
        String provisioning = parameters.getOrDefault(PROVISIONING, config.provisioning().label());
        normalized.put(PROVISIONING, Provisioning.parse(provisioning).label());
        return normalized;
    }

    @Override
    public Capacity capacity() {
        FsStats fs = statvfs();
        long total = config.capacityBytes() > 0 ? config.capacityBytes() : fs.totalBytes();
        long allocated = allocatedBytes();
        long available = Math.max(0, Math.min(total - allocated, fs.availableBytes()));
        available = available / GRANULARITY * GRANULARITY;
        return new Capacity(total, allocated, available, available, GRANULARITY);
    }

    @Override
    public Volume create(VolumeRequest request) {
        VolumeId id = VolumeId.mint(name(), request.name());
        Map<String, String> parameters = validateParameters(request.parameters());
        Optional<Volume> existing = find(id);
        if (existing.isPresent()) {
            return sameRequestAgain(existing.get(), request, parameters);
        }
        long size = request.range().resolve(GRANULARITY, config.defaultVolumeBytes(), GRANULARITY);
        VolumeFiles files = VolumeFiles.of(directory, id);
        try {
            reserve(files, size);
            if (Provisioning.parse(parameters.get(PROVISIONING)) == Provisioning.THICK) {
                allocate(files.partial(), size);
            }
            Files.move(files.partial(), files.image(), StandardCopyOption.ATOMIC_MOVE);
            Volume volume = new Volume(id, request.name(), size, parameters, Instant.now());
            AtomicFiles.write(files.metadata(), VolumeMetadata.encode(volume));
            return volume;
        } catch (IOException e) {
            deleteQuietly(files.partial());
            deleteQuietly(files.image());
            throw new StorageException.Failed("creating volume " + id + " in pool '" + name() + "': " + e, e);
        } catch (StorageException e) {
            deleteQuietly(files.partial());
            throw e;
        }
    }

    /** An existing volume answers a repeated request only if it is what that request asks for. */
    private static Volume sameRequestAgain(Volume volume, VolumeRequest request, Map<String, String> parameters) {
        if (!volume.name().equals(request.name())) {
            throw new StorageException.Conflict("volume " + volume.id() + " was made for name '" + volume.name()
                    + "', which shares its key with '" + request.name() + "'");
        }
        if (!volume.parameters().equals(parameters)) {
            throw new StorageException.Conflict("volume '" + request.name() + "' exists with parameters "
                    + volume.parameters() + ", not " + parameters);
        }
        if (!request.range().admits(volume.sizeBytes())) {
            throw new StorageException.Conflict("volume '" + request.name() + "' exists with " + volume.sizeBytes()
                    + " bytes, outside the requested range " + request.range());
        }
        return volume;
    }

    /** Claims {@code size} bytes of the pool as a sparse partial image, or says there is no room. */
    private void reserve(VolumeFiles files, long size) throws IOException {
        synchronized (allocation) {
            // A create that crashed before writing metadata left these; they are ours and unacknowledged.
            Files.deleteIfExists(files.partial());
            Files.deleteIfExists(files.image());
            long available = capacity().availableBytes();
            if (size > available) {
                throw new StorageException.Exhausted("pool '" + name() + "' has " + available
                        + " bytes available; the volume needs " + size);
            }
            try (RandomAccessFile file = new RandomAccessFile(files.partial().toFile(), "rw")) {
                file.setLength(size);
            }
        }
    }

    private void allocate(Path image, long size) throws IOException {
        try {
            FileOps.fallocate(image, 0, size);
        } catch (LinuxException e) {
            if (e.errno() == dev.hearth.linux.Errno.ENOSPC) {
                throw new StorageException.Exhausted("pool '" + name() + "' ran out of space allocating "
                        + size + " bytes: " + e.getMessage());
            }
            throw e;
        }
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
            channel.force(true);
        }
    }

    @Override
    public Optional<Volume> find(VolumeId id) {
        if (!id.pool().equals(name())) {
            return Optional.empty();
        }
        Path metadata = VolumeFiles.of(directory, id).metadata();
        try {
            return Optional.of(VolumeMetadata.decode(id, Files.readString(metadata)));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new StorageException.Failed("reading " + metadata + ": " + e.getMessage(), e);
        }
    }

    @Override
    public List<Volume> list() {
        List<Volume> volumes = new ArrayList<>();
        for (Path file : files()) {
            VolumeFiles.owner(file, VolumeFiles.METADATA).flatMap(this::find).ifPresent(volumes::add);
        }
        volumes.sort(Comparator.comparing(v -> v.id().toString()));
        return volumes;
    }

    @Override
    public void delete(VolumeId id) {
        if (!id.pool().equals(name())) {
            return;
        }
        attachedDevice(id).ifPresent(device -> {
            throw new StorageException.Precondition("volume " + id + " is still attached as " + device
                    + " on this node; unstage it before deleting");
        });
        VolumeFiles files = VolumeFiles.of(directory, id);
        try {
            // The image goes first: a crash in between leaves metadata that a retried delete clears.
            Files.deleteIfExists(files.image());
            Files.deleteIfExists(files.partial());
            Files.deleteIfExists(files.metadata());
            AtomicFiles.syncDirectory(directory);
        } catch (IOException e) {
            throw new StorageException.Failed("deleting volume " + id + ": " + e.getMessage(), e);
        }
    }

    @Override
    public Path attach(VolumeId id) {
        Volume volume = find(id).orElseThrow(() -> new StorageException.NotFound("volume " + id + " does not exist"));
        Path image = VolumeFiles.of(directory, volume.id()).image();
        synchronized (attachLocks.of(id)) {
            try {
                Optional<LoopAttachment> attached = Loop.findByBackingFile(image);
                if (attached.isPresent()) {
                    return attached.get().device().path();
                }
                if (!Files.exists(image)) {
                    throw new StorageException.Failed("volume " + id + " has lost its image file " + image);
                }
                return Loop.attach(image, false, config.directIo()).path();
            } catch (IOException e) {
                throw new StorageException.Failed("attaching " + image + " as a loop device: " + e.getMessage(), e);
            }
        }
    }

    @Override
    public Optional<Path> attachedDevice(VolumeId id) {
        try {
            return Loop.findByBackingFile(VolumeFiles.of(directory, id).image()).map(a -> a.device().path());
        } catch (IOException e) {
            throw new StorageException.Failed("reading loop devices: " + e.getMessage(), e);
        }
    }

    @Override
    public void detach(VolumeId id) {
        Path image = VolumeFiles.of(directory, id).image();
        synchronized (attachLocks.of(id)) {
            try {
                Optional<LoopAttachment> attached = Loop.findByBackingFile(image);
                if (attached.isPresent()) {
                    Loop.detach(attached.get().device());
                }
            } catch (IOException e) {
                throw new StorageException.Failed("detaching the loop device of " + image + ": " + e.getMessage(), e);
            }
        }
    }

    @Override
    public String problem() {
        if (!Files.isDirectory(directory) || !Files.isWritable(directory)) {
            return "pool '" + name() + "': directory " + directory + " is missing or not writable";
        }
        try {
            FileSystems.statvfs(directory);
            return null;
        } catch (LinuxException e) {
            return "pool '" + name() + "': " + e.getMessage();
        }
    }

    private long allocatedBytes() {
        long total = 0;
        for (Path file : files()) {
            if (VolumeFiles.owner(file, VolumeFiles.IMAGE).isPresent()
                    || VolumeFiles.owner(file, VolumeFiles.PARTIAL).isPresent()) {
                try {
                    total += Files.size(file);
                } catch (IOException e) {
                    // deleted between listing and sizing: it holds no space any more
                }
            }
        }
        return total;
    }

    /** Deletes partial images and images without metadata: creates that were never acknowledged. */
    private void removeUnfinished() throws IOException {
        for (Path file : files()) {
            boolean partial = VolumeFiles.owner(file, VolumeFiles.PARTIAL).isPresent();
            boolean orphan = VolumeFiles.owner(file, VolumeFiles.IMAGE)
                    .filter(id -> !Files.exists(VolumeFiles.of(directory, id).metadata())).isPresent();
            boolean tmp = VolumeFiles.owner(file, VolumeFiles.METADATA + ".tmp").isPresent();
            if (partial || orphan || tmp) {
                LOG.log(System.Logger.Level.INFO, "pool ''{0}'': removing {1} left by an unfinished create",
                        name(), file);
                Files.deleteIfExists(file);
            }
        }
    }

    private List<Path> files() {
        try (Stream<Path> entries = Files.list(directory)) {
            return entries.toList();
        } catch (IOException e) {
            throw new StorageException.Failed("listing pool directory " + directory + ": " + e.getMessage(), e);
        }
    }

    private FsStats statvfs() {
        try {
            return FileSystems.statvfs(directory);
        } catch (LinuxException e) {
            throw new StorageException.Failed("statvfs of pool '" + name() + "': " + e.getMessage(), e);
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "could not remove " + file + ": " + e.getMessage());
        }
    }

    static final class StripedLocks {
        private final Object[] stripes = new Object[64];

        StripedLocks() {
            for (int i = 0; i < stripes.length; i++) {
                stripes[i] = new Object();
            }
        }

        Object of(VolumeId id) {
            return stripes[Math.floorMod(id.hashCode(), stripes.length)];
        }
    }
}
