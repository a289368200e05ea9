package dev.hearth.storage.fs;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * What a mounted ext4 has recorded about its own errors, from {@code /sys/fs/ext4/<device>/}. The
 * kernel counts every ext4_error (a corrupt block found, a failed journal write) there, also when
 * the mount is set to carry on after errors and nothing else shows it.
 */
public final class Ext4Health {

    private static final Path SYSFS = Path.of("/sys/fs/ext4");

    private Ext4Health() {}

    /**
     * The number of errors the ext4 mounted from {@code device} has recorded, 0 for a healthy one;
     * empty when the device holds no mounted ext4 (or does not exist). Symlinks such as
     * {@code /dev/disk/by-id/...} or {@code /dev/mapper/...} are followed to the kernel's name.
     */
    public static OptionalLong errorCount(Path device) throws IOException {
        Path name;
        try {
            name = device.toRealPath().getFileName();
        } catch (NoSuchFileException e) {
            return OptionalLong.empty();
        }
        if (name == null) {
            return OptionalLong.empty();
        }
        String count;
        try {
            count = new String(Files.readAllBytes(SYSFS.resolve(name.toString()).resolve("errors_count")),
                    StandardCharsets.US_ASCII).strip();
        } catch (NoSuchFileException e) {
            return OptionalLong.empty();
        }
        try {
            return OptionalLong.of(Long.parseLong(count));
        } catch (NumberFormatException e) {
            throw new IOException("unexpected errors_count for " + device + ": \"" + count + "\"", e);
        }
    }
}
