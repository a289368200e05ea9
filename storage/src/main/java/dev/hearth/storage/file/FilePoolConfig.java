package dev.hearth.storage.file;

import dev.hearth.storage.Provisioning;
import dev.hearth.storage.VolumeId;
import java.nio.file.Path;

/**
 * How a file pool is set up on this node.
 *
 * @param capacityBytes the most its volumes may add up to; 0 means the size of the filesystem
 *     the directory lives on
 * @param directIo attach loop devices with direct I/O, so the page cache holds data once, not twice
 */
public record FilePoolConfig(String name, Path directory, long capacityBytes, Provisioning provisioning,
        boolean directIo, long defaultVolumeBytes) {

    public static final long DEFAULT_VOLUME_BYTES = 1L << 30;

    public FilePoolConfig {
        if (!VolumeId.isPoolName(name)) {
            throw new IllegalArgumentException("pool name '" + name
                    + "' must be 1-32 characters of a-z, 0-9 and '-', starting and ending with a letter or digit");
        }
        if (!directory.isAbsolute()) {
            throw new IllegalArgumentException("pool '" + name + "': directory must be absolute: " + directory);
        }
        if (capacityBytes < 0 || defaultVolumeBytes <= 0) {
            throw new IllegalArgumentException("pool '" + name + "': sizes must be positive");
        }
        directory = directory.normalize();
    }

    public FilePoolConfig(String name, Path directory, long capacityBytes) {
        this(name, directory, capacityBytes, Provisioning.THICK, true, DEFAULT_VOLUME_BYTES);
    }
}
