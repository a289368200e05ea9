package dev.hearth.driver.inspect;

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

    /** glibc's gnu_dev_major and gnu_dev_minor: 12 bits of major and 20 of minor, split across the word. */
    static DeviceNumber decode(long rdev) {
        long major = ((rdev >>> 8) & 0xfffL) | ((rdev >>> 32) & 0xfffff000L);
        long minor = (rdev & 0xffL) | ((rdev >>> 12) & 0xffffff00L);
        return new DeviceNumber((int) major, (int) minor);
    }

    @Override
    public String toString() {
        return major + ":" + minor;
    }
}
