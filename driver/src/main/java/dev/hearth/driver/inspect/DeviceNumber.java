package dev.hearth.driver.inspect;

import dev.hearth.linux.BlockDevices;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** A block device's major:minor, as mountinfo shows it and as {@code stat} gives a device node's st_rdev. */
record DeviceNumber(int major, int minor) {

    /** The device a node (or a symlink to one, as /dev/mapper's may be) stands for; empty if it is not one. */
    static Optional<DeviceNumber> of(Path node) {
        try {
            if (!Files.exists(node) || Files.isDirectory(node) || Files.isRegularFile(node)) {
                return Optional.empty();
            }
            return Optional.of(decode((Long) Files.getAttribute(node, "unix:rdev")));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** glibc's gnu_dev_major and gnu_dev_minor. */
    static DeviceNumber decode(long rdev) {
        return new DeviceNumber(BlockDevices.major(rdev), BlockDevices.minor(rdev));
    }

    @Override
    public String toString() {
        return major + ":" + minor;
    }
}
