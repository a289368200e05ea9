package dev.hearth.storage.file;

import dev.hearth.storage.VolumeId;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Where a file pool keeps a volume: {@code <id>.img} is the image, {@code <id>.meta} says the
 * volume is complete and what it was made for, {@code <id>.img.part} is an image being made.
 */
record VolumeFiles(Path image, Path partial, Path metadata) {

    static final String IMAGE = ".img";
    static final String PARTIAL = ".img.part";
    static final String METADATA = ".meta";

    static VolumeFiles of(Path directory, VolumeId id) {
        String base = id.toString();
        return new VolumeFiles(directory.resolve(base + IMAGE), directory.resolve(base + PARTIAL),
                directory.resolve(base + METADATA));
    }

    /** The volume a file of the pool directory belongs to, if its name is one the pool makes. */
    static Optional<VolumeId> owner(Path file, String suffix) {
        String name = file.getFileName().toString();
        if (!name.endsWith(suffix)) {
            return Optional.empty();
        }
        return VolumeId.parse(name.substring(0, name.length() - suffix.length()));
    }
}
