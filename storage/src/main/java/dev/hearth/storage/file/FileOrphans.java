package dev.hearth.storage.file;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * What a file pool's directories, and the node's loop devices, hold that belongs to no volume or
 * snapshot of the pool: read from the files and sysfs, changing nothing. Only files whose names
 * the pool gives are looked at ({@link ImageFiles#ours}); anything else in the directory is not
 * the pool's business.
 */
final class FileOrphans {

    private FileOrphans() {}

    /** @param volumes the pool's directory; {@code snapshots} its snapshots' */
    static List<Orphan> of(String pool, Path volumes, Path snapshots) {
        List<Orphan> found = new ArrayList<>();
        files(pool, volumes, true, found);
        files(pool, snapshots, false, found);
        loops(pool, List.of(volumes, snapshots), found);
        return found;
    }

    private static void files(String pool, Path directory, boolean volumes, List<Orphan> found) {
        for (Path file : list(directory)) {
            if (!ImageFiles.ours(file)) {
                continue;
            }
            String name = file.getFileName().toString();
            String what = volumes ? "volume" : "snapshot";
            if (name.endsWith(ImageFiles.PARTIAL)) {
                found.add(orphan(pool, Orphan.Kind.UNFINISHED, file, volumes, ImageFiles.PARTIAL,
                        "a partial " + what + " image: a create in progress, or one cut short (the driver removes "
                                + "it when it next starts)"));
            } else if (name.endsWith(ImageFiles.METADATA_TMP)) {
                found.add(orphan(pool, Orphan.Kind.UNFINISHED, file, volumes, ImageFiles.METADATA_TMP,
                        "a " + what + " record being written, or left by a crash (the driver removes it when it "
                                + "next starts)"));
            } else if (name.endsWith(ImageFiles.IMAGE) && !Files.exists(sibling(file, ImageFiles.IMAGE,
                    ImageFiles.METADATA))) {
                found.add(orphan(pool, Orphan.Kind.BACKING_WITHOUT_RECORD, file, volumes, ImageFiles.IMAGE,
                        "a " + what + " image without its metadata file: a create cut short, or in its last step, or a "
                                + "delete cut short (the driver removes such an image when it next starts)"));
            } else if (name.endsWith(ImageFiles.METADATA) && !Files.exists(sibling(file, ImageFiles.METADATA,
                    ImageFiles.IMAGE))) {
                found.add(orphan(pool, Orphan.Kind.RECORD_WITHOUT_BACKING, file, volumes, ImageFiles.METADATA,
                        "the " + what + "'s metadata without its image file: its data is gone"));
            }
        }
    }

    /** Loop devices serving an image of these directories whose volume is gone. */
    private static void loops(String pool, List<Path> directories, List<Orphan> found) {
        Set<Path> places = new HashSet<>();
        for (Path directory : directories) {
            places.add(directory);
            try {
                places.add(directory.toRealPath()); // sysfs names the backing file by its real path
            } catch (IOException e) {
                // gone: only the configured path can match
            }
        }
        List<LoopAttachment> loops;
        try {
            loops = Loop.list();
        } catch (IOException e) {
            throw new StorageException.Failed("reading loop devices: " + e.getMessage(), e);
        }
        for (LoopAttachment loop : loops) {
            Path image = loop.backingFile();
            if (!places.contains(image.getParent()) || !image.getFileName().toString().endsWith(ImageFiles.IMAGE)
                    || !ImageFiles.ours(image)) {
                continue;
            }
            Optional<VolumeId> volume = ImageFiles.volumeOwner(image, ImageFiles.IMAGE);
            String device = loop.device().path().toString();
            if (loop.backingDeleted()) {
                found.add(new Orphan(pool, Orphan.Kind.LOOP_DEVICE, device, volume, "serves " + image
                        + ", which was deleted: its volume is gone, but the device keeps the old data alive for "
                        + "whatever still mounts or holds it"));
            } else if (!Files.exists(sibling(image, ImageFiles.IMAGE, ImageFiles.METADATA))) {
                found.add(new Orphan(pool, Orphan.Kind.LOOP_DEVICE, device, volume, "serves " + image
                        + ", an image without a record"));
            }
        }
    }

    private static Orphan orphan(String pool, Orphan.Kind kind, Path file, boolean volumes, String suffix,
            String detail) {
        Optional<VolumeId> volume = volumes ? ImageFiles.volumeOwner(file, suffix) : Optional.empty();
        return new Orphan(pool, kind, file.toString(), volume, detail);
    }

    private static Path sibling(Path file, String suffix, String otherSuffix) {
        String name = file.getFileName().toString();
        return file.resolveSibling(name.substring(0, name.length() - suffix.length()) + otherSuffix);
    }

    private static List<Path> list(Path directory) {
        try (Stream<Path> entries = Files.list(directory)) {
            return entries.sorted().toList();
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new StorageException.Failed("listing " + directory + ": " + e.getMessage(), e);
        }
    }
}
