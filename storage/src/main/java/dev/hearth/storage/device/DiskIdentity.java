package dev.hearth.storage.device;

import dev.hearth.linux.Disk;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What makes a disk the same disk after a reboot, when its {@code /dev} name may have changed: the
 * world-wide name it reports, else its model and serial number, and its size in both cases (a
 * disk whose size changed is not the disk a volume was given). A loop device (tests, and admins
 * who make "disks" of files) is known by its backing file. A disk with none of these cannot be
 * recognised again and is never taken.
 *
 * @param source {@code wwn}, {@code serial} or {@code loop}
 * @param value the WWN, {@code model:serial}, or the loop device's backing file
 */
public record DiskIdentity(String source, String value, long sizeBytes) {

    private static final List<String> SOURCES = List.of("wwn", "serial", "loop");

    public DiskIdentity {
        Objects.requireNonNull(value, "value");
        if (!SOURCES.contains(source)) {
            throw new IllegalArgumentException("identity source must be one of " + SOURCES + ", got " + source);
        }
        if (value.isBlank() || sizeBytes <= 0) {
            throw new IllegalArgumentException("an identity needs a value and a size");
        }
    }

    /** The disk's identity, or empty when it reports nothing stable. */
    public static Optional<DiskIdentity> of(Disk disk) {
        if (!disk.wwn().isEmpty()) {
            return Optional.of(new DiskIdentity("wwn", disk.wwn(), disk.sizeBytes()));
        }
        if (!disk.serial().isEmpty()) {
            return Optional.of(new DiskIdentity("serial", disk.model() + ":" + disk.serial(), disk.sizeBytes()));
        }
        return disk.backingFile().map(file -> new DiskIdentity("loop", file.toString(), disk.sizeBytes()));
    }

    /** Whether {@code disk} is this disk. */
    public boolean matches(Disk disk) {
        return of(disk).map(this::equals).orElse(false);
    }

    /**
     * A name for files about this disk: readable where the value allows, and unique (a hash of the
     * whole identity), since values may hold any character and serials of two vendors may look alike.
     */
    public String key() {
        StringBuilder readable = new StringBuilder();
        for (char c : value.toCharArray()) {
            if (readable.length() >= 48) {
                break;
            }
            readable.append(Character.isLetterOrDigit(c) && c < 128 || c == '.' || c == '-' ? c : '_');
        }
        return source + "-" + readable + "-" + hash();
    }

    private String hash() {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256")
                    .digest((source + "\0" + value + "\0" + sizeBytes).getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 6);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    @Override
    public String toString() {
        return source + " " + value + ", " + sizeBytes + " bytes";
    }
}
