package dev.hearth.storage.file;

import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/** One directory of images with their metadata files: the file pool's volumes, or its snapshots. */
final class FileImages {

    private static final System.Logger LOG = System.getLogger(FileImages.class.getName());

    interface Decoder<T> {
        T decode(String text) throws IOException;
    }

    private final Path directory;
    private final RecordCache cache;
    /** Catches the pool's watch up and gives the cache's count of changes; -1 when the cache must not be used. */
    private final java.util.function.LongSupplier watched;

    /** Keeps decoded records in {@code cache}, which is told of every change when {@code watched} returns 0 or more. */
    FileImages(Path directory, RecordCache cache, java.util.function.LongSupplier watched) {
        this.directory = directory;
        this.cache = cache;
        this.watched = watched;
    }

    Path directory() {
        return directory;
    }

    /**
     * The record in this metadata file, as decoded when the file was last read if the pool's watch
     * says it has not changed since; empty if there is no such file. A file that cannot be decoded
     * is the node's state (FAILED_PRECONDITION), not a failure of the call.
     */
    <T> Optional<T> read(Path metadata, Class<T> type, Decoder<T> decoder) {
        return read(metadata, type, decoder, false);
    }

    /**
     * {@link #read}, for a listing: a record that cannot be decoded is left out and logged, so that
     * one damaged file does not hide every other volume or snapshot of the pool.
     */
    <T> Optional<T> readListed(Path metadata, Class<T> type, Decoder<T> decoder) {
        return read(metadata, type, decoder, true);
    }

    private <T> Optional<T> read(Path metadata, Class<T> type, Decoder<T> decoder, boolean leaveOutUnreadable) {
        long changes = watched.getAsLong(); // the cache's count of changes, or -1: not to be used
        String key = metadata.toString();
        Object kept = changes >= 0 ? cache.get(key) : null;
        if (type.isInstance(kept)) {
            return Optional.of(type.cast(kept));
        }
        String text;
        try {
            text = Files.readString(metadata);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (CharacterCodingException e) {
            return unreadable(metadata, "it is not UTF-8 text", leaveOutUnreadable);
        } catch (IOException e) {
            throw new StorageException.Failed("reading " + metadata + ": " + e.getMessage(), e);
        }
        T record;
        try {
            record = decoder.decode(text);
        } catch (IOException | RuntimeException e) {
            return unreadable(metadata, e.getMessage(), leaveOutUnreadable);
        }
        if (changes >= 0) {
            cache.put(key, record, changes);
        }
        return Optional.of(record);
    }

    private static <T> Optional<T> unreadable(Path metadata, String why, boolean leaveOut) {
        String message = "the record " + metadata + " cannot be read (" + why + "); hearth writes it whole, so it"
                + " was changed or damaged on the node, and hearth does not guess what it said: restore the file,"
                + " or delete the volume or snapshot";
        if (leaveOut) {
            LOG.log(System.Logger.Level.WARNING, message + "; it is left out of this listing");
            return Optional.empty();
        }
        throw new StorageException.Precondition(message);
    }

    List<Path> metadataFiles() {
        return metadataBases().stream().map(base -> directory.resolve(base + ImageFiles.METADATA)).toList();
    }

    /**
     * The names of the metadata files less their suffix (an ID's string, for a file the pool made),
     * from one listing of the directory's names: no {@link Path} is made per entry, which made up
     * most of a ListVolumes page of 1,000 volumes.
     */
    List<String> metadataBases() {
        String[] names = directory.toFile().list();
        if (names == null) {
            files(); // not a readable directory: throws what NIO says it is
            throw new StorageException.Failed("listing " + directory + ": not a readable directory");
        }
        List<String> bases = new ArrayList<>(names.length / 2 + 1);
        for (String name : names) {
            if (name.endsWith(ImageFiles.METADATA)) {
                bases.add(name.substring(0, name.length() - ImageFiles.METADATA.length()));
            }
        }
        return bases;
    }

    /**
     * Removes an image and its metadata. The metadata goes first: from then on the volume or snapshot
     * does not exist for any call, and a crash before the image goes leaves an image without metadata,
     * which {@link #removeUnfinished} removes as the pool opens (a retried delete finds nothing and
     * succeeds). The other order left, after a crash, a volume that was listed and could be staged,
     * snapshotted or cloned with no image behind it.
     */
    void delete(ImageFiles files, String what) {
        try {
            Files.deleteIfExists(files.metadata());
            Files.deleteIfExists(files.image());
            Files.deleteIfExists(files.partial());
            AtomicFiles.syncDirectory(directory);
        } catch (IOException e) {
            throw new StorageException.Failed("deleting " + what + ": " + e.getMessage(), e);
        }
    }

    /** Deletes partial images, images without metadata and metadata temp files: work never acknowledged. */
    void removeUnfinished() throws IOException {
        for (Path file : files()) {
            String name = file.getFileName().toString();
            boolean unfinished = ImageFiles.ours(file) && (name.endsWith(ImageFiles.PARTIAL)
                    || name.endsWith(ImageFiles.METADATA_TMP)
                    || (name.endsWith(ImageFiles.IMAGE) && !Files.exists(metadataOf(file))));
            if (unfinished) {
                LOG.log(System.Logger.Level.INFO, "removing {0}, left by an operation that did not finish", file);
                Files.deleteIfExists(file);
            }
        }
    }

    private static Path metadataOf(Path image) {
        String name = image.getFileName().toString();
        return image.resolveSibling(name.substring(0, name.length() - ImageFiles.IMAGE.length())
                + ImageFiles.METADATA);
    }

    private List<Path> files() {
        try (Stream<Path> entries = Files.list(directory)) {
            return entries.toList();
        } catch (IOException e) {
            throw new StorageException.Failed("listing " + directory + ": " + e.getMessage(), e);
        }
    }
}
