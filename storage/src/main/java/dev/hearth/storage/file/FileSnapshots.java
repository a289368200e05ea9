package dev.hearth.storage.file;

import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Snapshots;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/** A file pool's snapshots: whole-image copies in its {@code snapshots/} directory. */
final class FileSnapshots implements Snapshots {

    private final String pool;
    private final FileImages images;
    private final Allocation allocation;
    private final FrozenCopy copier;
    /** A volume of the pool as a copy's source; not found if it does not exist. */
    private final Function<VolumeId, Content> volumes;
    /** The pool is open only to be looked at: snapshots are neither taken nor deleted. */
    private final boolean readOnly;

    FileSnapshots(String pool, FileImages images, Allocation allocation, FrozenCopy copier,
            Function<VolumeId, Content> volumes, boolean readOnly) {
        this.pool = pool;
        this.readOnly = readOnly;
        this.images = images;
        this.allocation = allocation;
        this.copier = copier;
        this.volumes = volumes;
    }

    /** Copies the source's image (frozen if mounted), or returns the snapshot this name already made. */
    @Override
    public Snapshot create(String name, VolumeId source) {
        requireWritable("take snapshots");
        Content content = volumes.apply(source);
        long sourceSize = content.sizeBytes();
        SnapshotId id = SnapshotId.mint(pool, name);
        Optional<Snapshot> existing = find(id);
        if (existing.isPresent()) {
            if (!existing.get().source().equals(source) || !existing.get().name().equals(name)) {
                throw new StorageException.Conflict("snapshot '" + name + "' exists already, of volume "
                        + existing.get().source() + ", not " + source);
            }
            return existing.get();
        }
        ImageFiles files = ImageFiles.of(images.directory(), id);
        try {
            Files.deleteIfExists(files.partial());
            allocation.claim(files.partial(), sourceSize, "snapshot " + id);
            Instant taken = Instant.now();
            try {
                copier.copy(content.image(), content.device(), files.partial(), sourceSize);
                allocation.complete(files.partial(), files.image());
            } finally {
                allocation.release(files.partial());
            }
            Snapshot snapshot = new Snapshot(id, name, source, sourceSize, taken);
            AtomicFiles.write(files.metadata(), Metadata.encode(snapshot));
            return snapshot;
        } catch (IOException e) {
            files.partial().toFile().delete();
            files.image().toFile().delete();
            throw new StorageException.Failed("snapshotting volume " + source + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            files.partial().toFile().delete(); // a copy refused or cut short: nothing half-made stays
            throw e;
        }
    }

    @Override
    public Optional<Snapshot> find(SnapshotId id) {
        if (!id.pool().equals(pool)) {
            return Optional.empty();
        }
        return images.read(ImageFiles.of(images.directory(), id).metadata(), Snapshot.class,
                text -> Metadata.decode(id, text));
    }

    /** {@link #find}, for a listing: a record that cannot be read is left out (and logged), not the listing's failure. */
    private Optional<Snapshot> findListed(SnapshotId id) {
        if (!id.pool().equals(pool)) {
            return Optional.empty();
        }
        return images.readListed(ImageFiles.of(images.directory(), id).metadata(), Snapshot.class,
                text -> Metadata.decode(id, text));
    }

    Path image(SnapshotId id) {
        return ImageFiles.of(images.directory(), id).image();
    }

    @Override
    public List<Snapshot> list() {
        return images.metadataFiles().stream()
                .flatMap(file -> ImageFiles.snapshotOwner(file, ImageFiles.METADATA).stream())
                .flatMap(id -> findListed(id).stream())
                .sorted(Comparator.comparing(s -> s.id().toString()))
                .toList();
    }

    @Override
    public void delete(SnapshotId id) {
        requireWritable("delete snapshots");
        if (id.pool().equals(pool)) {
            images.delete(ImageFiles.of(images.directory(), id), "snapshot " + id);
        }
    }

    private void requireWritable(String change) {
        if (readOnly) {
            throw new StorageException.Precondition("pool '" + pool + "' is open read-only here; it cannot " + change);
        }
    }
}
