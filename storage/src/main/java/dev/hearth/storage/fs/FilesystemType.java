package dev.hearth.storage.fs;

import dev.hearth.storage.Quoted;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/** The filesystems hearth makes on volumes. */
public enum FilesystemType {
    EXT4("ext4", 0),
    /** mkfs.xfs refuses anything below 300 MiB (xfsprogs 5.19 and later). */
    XFS("xfs", 300L << 20),
    /** mkfs.btrfs 6.2 needs 109 MiB for its default profiles; later versions a little more. */
    BTRFS("btrfs", 128L << 20);

    /** What a request that names no filesystem gets (CSI leaves fsType empty to mean "default"). */
    public static final FilesystemType DEFAULT = EXT4;

    private final String kernelName;
    private final long minimumBytes;

    FilesystemType(String kernelName, long minimumBytes) {
        this.kernelName = kernelName;
        this.minimumBytes = minimumBytes;
    }

    /** The smallest volume mkfs makes this filesystem on; a smaller one could be created but never staged. */
    public long minimumBytes() {
        return minimumBytes;
    }

    /** The command that repairs this filesystem, for messages that ask a person to run it. */
    public String repairTool() {
        return switch (this) {
            case EXT4 -> "e2fsck -f";
            case XFS -> "xfs_repair";
            case BTRFS -> "btrfs check --repair";
        };
    }

    /** The name mount(2) and blkid use. */
    public String kernelName() {
        return kernelName;
    }

    /** Case-insensitive; null or blank means {@link #DEFAULT}. */
    public static FilesystemType parse(String name) {
        if (name == null || name.isBlank()) {
            return DEFAULT;
        }
        return fromKernelName(name.strip().toLowerCase(Locale.ROOT)).orElseThrow(() -> new IllegalArgumentException(
                "unsupported filesystem type " + Quoted.of(name) + "; supported: "
                + Arrays.stream(values()).map(FilesystemType::kernelName).collect(Collectors.joining(", "))));
    }

    /** The type mount(2) or blkid calls exactly {@code kernelName}; empty for any other filesystem. */
    public static Optional<FilesystemType> fromKernelName(String kernelName) {
        return Arrays.stream(values()).filter(type -> type.kernelName.equals(kernelName)).findFirst();
    }
}
