package dev.hearth.linux;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * One line of {@code /proc/self/mountinfo}. {@code mountOptions} are the per-mount flags
 * ({@code rw,nodev,noatime}); {@code superOptions} belong to the filesystem and are shared by every
 * bind of it. {@code optionalFields} carry propagation such as {@code shared:1} or {@code master:2}.
 */
public record MountEntry(int mountId, int parentId, int major, int minor, String root, Path mountPoint,
                         String mountOptions, List<String> optionalFields, String fsType, String source,
                         String superOptions) {

    public MountEntry {
        optionalFields = List.copyOf(optionalFields);
    }

    public boolean readOnly() {
        return hasMountOption("ro");
    }

    /** Whether {@code option} is one of the comma-separated per-mount options, e.g. {@code "nodev"}. */
    public boolean hasMountOption(String option) {
        return Arrays.asList(mountOptions.split(",")).contains(option);
    }

    /** Whether {@code option} is one of the filesystem's options, e.g. {@code "discard"} or {@code "size=16384k"}. */
    public boolean hasSuperOption(String option) {
        return Arrays.asList(superOptions.split(",")).contains(option);
    }
}
