package dev.hearth.storage.file;

import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Where a file pool keeps a volume or a snapshot: {@code <id>.img} is the image, {@code <id>.meta}
 * says it is complete and what it was made for, {@code <id>.img.part} is an image being made.
 * Volumes live in the pool directory, snapshots in its {@code snapshots/} directory.
 */
record ImageFiles(Path image, Path partial, Path metadata) {

    static final String IMAGE = ".img";
    static final String PARTIAL = ".img.part";
    static final String METADATA = ".meta";
    static final String METADATA_TMP = ".meta.tmp";

    static ImageFiles of(Path directory, VolumeId id) {
        return of(directory, id.toString());
    }

    static ImageFiles of(Path directory, SnapshotId id) {
        return of(directory, id.toString());
    }

    private static ImageFiles of(Path directory, String base) {
        return new ImageFiles(directory.resolve(base + IMAGE), directory.resolve(base + PARTIAL),
                directory.resolve(base + METADATA));
    }

    /**
     * Whether the file is named as a file pool names a volume's or a snapshot's image, whole or
     * being made: {@code <pool>-<26 base32>.img} or {@code .img.part}. Such a file, served by a loop
     * device, is a volume of hearth's, never a disk a pool may take (the warm-up's scratch volume too).
     */
    static boolean isImageName(Path file) {
        return volumeOwner(file, IMAGE).isPresent() || volumeOwner(file, PARTIAL).isPresent()
                || snapshotOwner(file, IMAGE).isPresent() || snapshotOwner(file, PARTIAL).isPresent();
    }

    /** The volume a file of the pool directory belongs to, if its name is one the pool makes. */
    /**
     * Refuses, as the node's state, an image that is gone or that something other than a file stands
     * in place of (removed or replaced on the node): no retry brings it back.
     *
     * @param owner what the image is of ("volume X", "source snapshot Y")
     * @param consequence what that means for the call
     */
    static void requireImage(Path image, String owner, String consequence) {
        if (!Files.isRegularFile(image, LinkOption.NOFOLLOW_LINKS)) {
            throw new StorageException.Precondition(owner + " has lost its image file " + image
                    + (Files.exists(image, LinkOption.NOFOLLOW_LINKS) ? " (something that is not a file stands in"
                    + " its place)" : "") + ": " + consequence);
        }
    }

    static Optional<VolumeId> volumeOwner(Path file, String suffix) {
        return base(file, suffix).flatMap(VolumeId::parse);
    }

    /** The snapshot a file of the snapshot directory belongs to, if its name is one the pool makes. */
    static Optional<SnapshotId> snapshotOwner(Path file, String suffix) {
        return base(file, suffix).flatMap(SnapshotId::parse);
    }

    /** Whether the file is one the pool makes, of any kind: the only files it ever counts or removes. */
    static boolean ours(Path file) {
        for (String suffix : new String[] {IMAGE, PARTIAL, METADATA, METADATA_TMP}) {
            if (volumeOwner(file, suffix).isPresent() || snapshotOwner(file, suffix).isPresent()) {
                return true;
            }
        }
        return false;
    }

    private static Optional<String> base(Path file, String suffix) {
        String name = file.getFileName().toString();
        return name.endsWith(suffix) ? Optional.of(name.substring(0, name.length() - suffix.length()))
                : Optional.empty();
    }
}
