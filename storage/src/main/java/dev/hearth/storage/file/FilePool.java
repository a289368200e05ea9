package dev.hearth.storage.file;

import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.Errno;
import dev.hearth.linux.FileOps;
import dev.hearth.linux.FileSystems;
import dev.hearth.linux.LinuxException;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.Attachment;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.Claim;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Emptiness;
import dev.hearth.storage.Expansion;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.Pool;
import dev.hearth.storage.PoolFeature;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Snapshots;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeCondition;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.VolumeSource;
import dev.hearth.storage.fs.FilesystemIdentity;
import dev.hearth.storage.mount.Freezer;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A pool whose volumes are image files in one directory, attached as loop devices; snapshots are
 * copies (reflinks where the filesystem can) in its {@code snapshots/} directory. The pool's truth
 * is the directory: an image plus its metadata file is a volume; an image without metadata is a
 * create that did not finish, which a retry of that create replaces.
 */
public final class FilePool implements Pool {

    public static final String PROVISIONING = "hearth.dev/provisioning";
    static final String LOCK_FILE = ".hearth.lock";
    static final String SNAPSHOTS = "snapshots";
    /** Records of filesystems frozen for a copy, so a crash inside the freeze is undone at the next start. */
    static final String FREEZES = ".frozen";
    static final long GRANULARITY = Allocation.GRANULARITY;

    private static final System.Logger LOG = System.getLogger(FilePool.class.getName());

    private final FilePoolConfig config;
    private final Path directory;
    private final FileImages volumes;
    private final FileImages snapshots;
    private final Allocation allocation;
    private volatile Ids lastIds;
    private final FrozenCopy copier;
    private final FileSnapshots snapshotStore;
    private final XfsClones xfsClones;
    private final LoopAttachments loops;
    /** Held while the pool is open: one driver per pool directory; null for a pool opened read-only. */
    private final FileChannel ownership;

    private FilePool(FilePoolConfig config, FileChannel ownership, ToolRunner tools, Freezer freezer,
            LoopTable loopTable) {
        this.config = config;
        this.copier = new FrozenCopy(freezer);
        this.directory = config.directory();
        RecordCache records = new RecordCache();
        this.allocation = new Allocation(config, List.of(directory, directory.resolve(SNAPSHOTS)), records);
        this.volumes = new FileImages(directory, records, allocation::records);
        this.snapshots = new FileImages(directory.resolve(SNAPSHOTS), records, allocation::records);
        this.snapshotStore = new FileSnapshots(config.name(), snapshots, allocation, copier, this::volumeContent,
                ownership == null);
        this.xfsClones = new XfsClones(new FilesystemIdentity(tools), directory);
        this.loops = new LoopAttachments(config.directIo(), ownership != null, loopTable);
        this.ownership = ownership;
    }

    /** See {@link ImageFiles#isImageName}: whether a loop device's backing file is a file pool's image. */
    public static boolean isImageFile(Path file) {
        return ImageFiles.isImageName(file);
    }

    public static FilePool open(FilePoolConfig config) throws IOException {
        return open(config, new ToolRunner());
    }

    /**
     * Opens (creating if needed) the pool directory, takes ownership of it, and clears what
     * unfinished creates left. Ownership comes first: a second driver pointed at the same
     * directory must not clear away a create the first one has in flight.
     */
    public static FilePool open(FilePoolConfig config, ToolRunner tools) throws IOException {
        return open(config, tools, LoopTable.SYSFS);
    }

    /** {@link #open(FilePoolConfig, ToolRunner)} reading and changing loop devices through {@code loopTable}. */
    static FilePool open(FilePoolConfig config, ToolRunner tools, LoopTable loopTable) throws IOException {
        var owner = PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"));
        Files.createDirectories(config.directory(), owner);
        Files.createDirectories(config.directory().resolve(SNAPSHOTS), owner);
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
        FilePool pool;
        try {
            Freezer freezer = new Freezer(config.directory().resolve(FREEZES), Freezer.DEFAULT_LIMIT);
            freezer.thawLeftovers();
            pool = new FilePool(config, ownership, tools, freezer, loopTable);
        } catch (IOException | RuntimeException e) {
            ownership.close();
            throw e;
        }
        try {
            XfsClones.releaseLeftovers(config.directory());
        } catch (IOException | RuntimeException e) {
            // Serving the pool's other volumes matters more; the next start tries again.
            LOG.log(System.Logger.Level.WARNING, "pool ''{0}'': could not release what an unfinished xfs log"
                    + " replay left: {1}", config.name(), e.toString());
        }
        pool.volumes.removeUnfinished();
        pool.snapshots.removeUnfinished();
        return pool;
    }

    /**
     * Opens the pool to look at it, beside a driver that may be serving it ({@code hearth volumes}):
     * nothing is made, locked, cleared or thawed, and every change (create, delete, attach, detach,
     * expand, snapshot) is refused. Reads see what the serving driver has written.
     *
     * @throws IOException if the pool's directory does not exist
     */
    public static FilePool openReadOnly(FilePoolConfig config) throws IOException {
        if (!Files.isDirectory(config.directory())) {
            throw new NoSuchFileException(config.directory().toString(), null, "no such directory");
        }
        return new FilePool(config, null, new ToolRunner(),
                new Freezer(config.directory().resolve(FREEZES), Freezer.DEFAULT_LIMIT), LoopTable.SYSFS);
    }

    /** Refuses a change to a pool opened read-only. */
    private void requireWritable(String change) {
        if (ownership == null) {
            throw new StorageException.Precondition("pool '" + name() + "' is open read-only here; it cannot "
                    + change);
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

    @Override
    public List<Path> ownDirectories() {
        return List.of(directory);
    }

    public FilePoolConfig config() {
        return config;
    }

    /** A file pool has every part, except those its config switches off. */
    @Override
    public Optional<Snapshots> snapshots() {
        return config.features().contains(PoolFeature.SNAPSHOTS) ? Optional.of(snapshotStore) : Optional.empty();
    }

    @Override
    public Optional<Expansion> expansion() {
        return config.features().contains(PoolFeature.EXPANSION) ? Optional.of(this::expand) : Optional.empty();
    }

    @Override
    public boolean clones() {
        return config.features().contains(PoolFeature.CLONES);
    }

    @Override
    public Set<String> parameterKeys() {
        return Set.of(PROVISIONING);
    }

    @Override
    public Map<String, String> validateParameters(Map<String, String> parameters) {
        Map<String, String> normalized = new TreeMap<>();
        for (var entry : parameters.entrySet()) {
            if (!parameterKeys().contains(entry.getKey())) {
                throw new StorageException.InvalidArgument("unknown parameter " + Quoted.of(entry.getKey())
                        + " for file pool '" + name() + "'; it accepts: " + String.join(", ",
                        new TreeSet<>(parameterKeys())));
            }
        }
        String provisioning = parameters.getOrDefault(PROVISIONING, config.provisioning().label());
        normalized.put(PROVISIONING, Provisioning.parse(provisioning).label());
        return normalized;
    }

    @Override
    public Capacity capacity() {
        return allocation.capacity();
    }

    /**
     * Learns which loop devices serve the pool's images (the scan of the node its first attach
     * would make), reads its capacity, and writes and reads back a volume's record in memory.
     */
    @Override
    public void warmUp() throws IOException {
        loops.learn();
        capacity();
        Volume sample = new Volume(VolumeId.mint(config.name(), "warm-up"), "warm-up", 1L << 30,
                Map.of("fsType", "ext4"), Optional.empty(), Instant.now(),
                Optional.of(new Claim("namespace", "claim", "pv")));
        Volume read = Metadata.decode(sample.id(), Metadata.encode(sample));
        read.id().equals(sample.id()); // IDs key the locks: a record's hashCode and equals link on first use
        read.id().hashCode();
    }

    @Override
    public Volume create(VolumeRequest request) {
        requireWritable("create volumes");
        VolumeId id = VolumeId.mint(name(), request.name());
        Map<String, String> parameters = validateParameters(request.parameters());
        Optional<Volume> existing = find(id);
        if (existing.isPresent()) {
            return request.sameRequestAgain(existing.get(), parameters);
        }
        Optional<Content> content = request.source().map(this::content);
        long minimum = content.map(Content::sizeBytes).orElse(GRANULARITY);
        long size = request.range().resolve(GRANULARITY, Math.max(minimum, config.defaultVolumeBytes()), minimum);
        if (content.isPresent() && request.range().requiredBytes() == 0 && request.range().limitBytes() == 0) {
            size = minimum; // a restore or clone that names no size gets its source's
        }
        ImageFiles files = ImageFiles.of(directory, id);
        try {
            // A create that crashed before writing metadata left these; they are ours and unacknowledged.
            Files.deleteIfExists(files.partial());
            Files.deleteIfExists(files.image());
            allocation.claim(files.partial(), size, "volume " + id);
            try {
                fill(files.partial(), size, content, Provisioning.parse(parameters.get(PROVISIONING)));
                allocation.complete(files.partial(), files.image());
            } finally {
                allocation.release(files.partial());
            }
            Volume volume = new Volume(id, request.name(), size, parameters, request.source(), Instant.now(),
                    request.claim());
            AtomicFiles.write(files.metadata(), Metadata.encode(volume));
            return volume;
        } catch (IOException e) {
            deleteQuietly(files.partial());
            deleteQuietly(files.image());
            throw new StorageException.Failed("creating volume " + id + " in pool '" + name() + "': " + e, e);
        } catch (RuntimeException e) {
            deleteQuietly(files.partial());
            throw e;
        }
    }

    /** Where a restore's or clone's bytes come from, and how many there are. */
    private Content content(VolumeSource source) {
        return switch (source) {
            case VolumeSource.FromSnapshot(SnapshotId snapshot) -> {
                Snapshot found = snapshotStore.find(snapshot).orElseThrow(() -> new StorageException.NotFound(
                        "source snapshot " + snapshot + " does not exist in pool '" + name() + "'"));
                Path image = snapshotStore.image(snapshot);
                ImageFiles.requireImage(image, "source snapshot " + snapshot, "there is nothing to restore");
                yield new Content("source snapshot " + snapshot, image, found.sizeBytes(), Optional.empty());
            }
            case VolumeSource.FromVolume(VolumeId volume) -> volumeContent(volume);
        };
    }

    private Content volumeContent(VolumeId volume) {
        Volume found = find(volume).orElseThrow(() -> new StorageException.NotFound(
                "source volume " + volume + " does not exist in pool '" + name() + "'"));
        Path image = ImageFiles.of(directory, volume).image();
        ImageFiles.requireImage(image, "source volume " + volume, "there is nothing to copy");
        return new Content("source volume " + volume, image, Math.max(found.sizeBytes(), imageLength(image)),
                attachedDevice(volume));
    }

    /**
     * The image's length; 0 if it cannot be read. Longer than its record says only after an
     * expansion killed between growing the image and writing the record, and never retried: a
     * stage since may have grown the filesystem into that length, so a copy takes all of it, and
     * an expansion never shrinks it.
     */
    private static long imageLength(Path image) {
        try {
            return Files.size(image);
        } catch (IOException e) {
            return 0;
        }
    }

    /** Writes a new image: zeros (sparse), or a source's content; then reserves its blocks if thick. */
    private void fill(Path image, long size, Optional<Content> content, Provisioning provisioning)
            throws IOException {
        if (content.isPresent()) {
            copier.copy(content.get().image(), content.get().device(), image, size);
            xfsClones.renewIdentity(image, content.get().what());
        } else {
            try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
                file.setLength(size);
            }
        }
        if (provisioning == Provisioning.THICK) {
            allocate(image, 0, size);
        }
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
            channel.force(true);
        }
    }

    private void allocate(Path image, long offset, long length) throws IOException {
        try {
            FileOps.fallocate(image, offset, length);
        } catch (LinuxException e) {
            if (e.errno() == Errno.ENOSPC) {
                throw new StorageException.Exhausted("pool '" + name() + "' ran out of space allocating "
                        + length + " bytes: " + e.getMessage());
            }
            throw e;
        }
    }

    @Override
    public Optional<Volume> find(VolumeId id) {
        if (!id.pool().equals(name())) {
            return Optional.empty();
        }
        return volumes.read(ImageFiles.of(directory, id).metadata(), Volume.class, text -> Metadata.decode(id, text));
    }

    /** {@link #find}, for a listing: a record that cannot be read is left out (and logged), not the listing's failure. */
    private Optional<Volume> findListed(VolumeId id) {
        if (!id.pool().equals(name())) {
            return Optional.empty();
        }
        return volumes.readListed(ImageFiles.of(directory, id).metadata(), Volume.class,
                text -> Metadata.decode(id, text));
    }

    /**
     * The volumes' IDs from one listing of the pool directory, no record read; the last listing
     * again while the pool's watch says no record has come or gone since (a ListVolumes of 1,000
     * volumes in pages of 100 listed the directory for every page).
     */
    @Override
    public List<VolumeId> ids() {
        long records = allocation.records(); // before the listing: a change during it makes the next call list
        Ids cached = lastIds;
        if (records >= 0 && cached != null && cached.records() == records) {
            return cached.ids();
        }
        List<String> bases = volumes.metadataBases();
        List<VolumeId> ids = new java.util.ArrayList<>(bases.size());
        for (String base : bases) {
            VolumeId.parse(base).filter(id -> id.pool().equals(name())).ifPresent(ids::add);
        }
        List<VolumeId> listed = List.copyOf(ids);
        if (records >= 0) {
            lastIds = new Ids(records, listed);
        }
        return listed;
    }

    /** The IDs listed while the records' count was {@code records}. */
    private record Ids(long records, List<VolumeId> ids) {}

    /**
     * Reads the records of these volumes alone; each one's condition is whether its image is there,
     * as the pool's watch has seen it (a page of 100 volumes asked each image file, 100 syscalls),
     * or as the file says where the watch cannot.
     */
    @Override
    public Listing listing(java.util.Collection<VolumeId> ids) {
        List<Volume> found = ids.stream().flatMap(id -> findListed(id).stream()).toList();
        Map<VolumeId, String> images = new java.util.HashMap<>();
        found.forEach(volume -> images.put(volume.id(), ImageFiles.of(directory, volume.id()).image().toString()));
        Optional<Set<String>> existing = allocation.existing(images.values());
        return new Listing(found, volume -> {
            String image = images.get(volume.id());
            if (image == null) {
                return imageCondition(volume.id()); // not one of this listing's
            }
            boolean there = existing.map(names -> names.contains(image)).orElseGet(() -> Files.exists(Path.of(image)));
            return there ? VolumeCondition.NORMAL : missingImage(Path.of(image));
        });
    }

    @Override
    public List<Volume> list() {
        return volumes.metadataFiles().stream()
                .flatMap(file -> ImageFiles.volumeOwner(file, ImageFiles.METADATA).stream())
                .flatMap(id -> findListed(id).stream())
                .sorted(java.util.Comparator.comparing(v -> v.id().toString()))
                .toList();
    }

    @Override
    public void delete(VolumeId id) {
        requireWritable("delete volumes");
        if (!id.pool().equals(name())) {
            return;
        }
        ImageFiles files = ImageFiles.of(directory, id);
        loops.attachment(files.image()).ifPresent(attached -> {
            throw new StorageException.Precondition("volume " + id + " is still attached as "
                    + attached.device().path() + " on this node; " + (attached.detaching()
                    ? "it was unstaged, but something still has it open (a mount, a bind of its filesystem, a"
                            + " process), and it goes at that last close"
                    : "unstage it before deleting"));
        });
        volumes.delete(files, "volume " + id);
    }

    /** The pool's {@link Expansion}: grows the image, reserves the new blocks if thick, tells the loop device. */
    private Volume expand(VolumeId id, CapacityRange range) {
        requireWritable("expand volumes");
        Volume volume = find(id).orElseThrow(() -> new StorageException.NotFound("volume " + id + " does not exist"));
        if (range.requiredBytes() <= volume.sizeBytes()) {
            resizeLoopDevice(id, volume.sizeBytes());
            return volume;
        }
        ImageFiles files = ImageFiles.of(directory, id);
        long length = imageLength(files.image()); // longer than the record after a cut-short expansion
        long size = Math.max(range.resolve(GRANULARITY, volume.sizeBytes(), volume.sizeBytes()), length);
        allocation.claim(files.image(), size, "expanding volume " + id);
        try {
            try (RandomAccessFile image = new RandomAccessFile(files.image().toFile(), "rw")) {
                image.setLength(size);
            }
            if (Provisioning.parse(volume.parameters().get(PROVISIONING)) == Provisioning.THICK) {
                allocate(files.image(), volume.sizeBytes(), size - volume.sizeBytes());
            }
            Volume grown = volume.withSize(size);
            AtomicFiles.write(files.metadata(), Metadata.encode(grown));
            Optional<Path> device = attachedDevice(id);
            Optional<LoopDevice> loop = device.flatMap(LoopDevice::fromPath);
            if (loop.isPresent()) {
                Loop.setCapacity(loop.get());
            }
            return grown;
        } catch (IOException | RuntimeException e) {
            shrinkBack(id, files.image(), Math.max(volume.sizeBytes(), length), e);
            if (e instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new StorageException.Failed("expanding volume " + id + " to " + size + " bytes: "
                    + e.getMessage(), e);
        } finally {
            allocation.release(files.image());
        }
    }

    /**
     * A retried expansion whose first try grew the image and its record but was cut short (the
     * driver killed) before the loop device was told: the device still shows the old size, and the
     * filesystem grown next would stay as it was. Tells the device now if it is smaller than the
     * volume; a device already at the size is left alone.
     */
    private void resizeLoopDevice(VolumeId id, long sizeBytes) {
        Optional<LoopDevice> loop = attachedDevice(id).flatMap(LoopDevice::fromPath);
        if (loop.isEmpty()) {
            return;
        }
        try {
            if (BlockDevices.size(loop.get().path()) < sizeBytes) {
                Loop.setCapacity(loop.get());
            }
        } catch (IOException e) {
            throw new StorageException.Failed("growing the loop device " + loop.get().path() + " of volume " + id
                    + " to its image's " + sizeBytes + " bytes: " + e.getMessage(), e);
        }
    }

    /**
     * Undoes a grow that failed before its metadata was written: the image goes back to {@code size},
     * its length before this expansion (never shorter: see {@link #imageLength}).
     */
    private void shrinkBack(VolumeId id, Path image, long size, Exception cause) {
        try {
            boolean metadataUnchanged = find(id).map(Volume::sizeBytes).orElse(size) <= size;
            if (metadataUnchanged && Files.size(image) > size) {
                try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
                    file.setLength(size);
                }
            }
        } catch (IOException | RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    @Override
    public Emptiness emptiness(VolumeId id) {
        try {
            return ImageEmptiness.of(ImageFiles.of(directory, ours(id)).image());
        } catch (IOException e) {
            return new Emptiness.Unknown("its image could not be read: " + e.getMessage());
        }
    }

    @Override
    public VolumeCondition condition(VolumeId id) {
        find(id).orElseThrow(() -> new StorageException.NotFound("volume " + id + " does not exist"));
        return imageCondition(id);
    }

    private VolumeCondition imageCondition(VolumeId id) {
        Path image = ImageFiles.of(directory, id).image();
        return Files.exists(image) ? VolumeCondition.NORMAL : missingImage(image);
    }

    private static VolumeCondition missingImage(Path image) {
        return VolumeCondition.abnormal("the volume's image file " + image + " is missing");
    }

    @Override
    public Attachment attach(VolumeId id) {
        requireWritable("attach volumes");
        ImageFiles files = ImageFiles.of(directory, ours(id));
        if (!Files.exists(files.image()) && !Files.exists(files.metadata())) {
            throw new StorageException.NotFound("volume " + id + " does not exist");
        }
        return loops.attach(id, files.image());
    }

    /** A volume of another pool is not one of this pool's, whatever its key. */
    private VolumeId ours(VolumeId id) {
        if (!id.pool().equals(name())) {
            throw new StorageException.NotFound("volume " + id + " does not exist in pool '" + name() + "'");
        }
        return id;
    }

    @Override
    public Optional<Path> attachedDevice(VolumeId id) {
        return loops.device(ImageFiles.of(directory, id).image());
    }

    @Override
    public void detach(VolumeId id) {
        requireWritable("detach volumes");
        loops.detach(id, ImageFiles.of(directory, id).image());
    }

    /** The volume's image file. */
    @Override
    public Optional<Path> backing(VolumeId id) {
        return id.pool().equals(name()) ? Optional.of(ImageFiles.of(directory, id).image()) : Optional.empty();
    }

    @Override
    public List<Orphan> orphans() {
        return FileOrphans.of(name(), directory, directory.resolve(SNAPSHOTS));
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

    /** The pool's space accounting; for tests in this package. */
    Allocation allocation() {
        return allocation;
    }

    /** Gives up ownership of the directory; the volumes stay. */
    @Override
    public void close() {
        allocation.close();
        if (ownership == null) {
            return;
        }
        try {
            ownership.close();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "closing the lock of pool '" + name() + "': " + e.getMessage());
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "could not remove " + file + ": " + e.getMessage());
        }
    }
}
