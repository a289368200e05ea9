package dev.hearth.linux;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.StringJoiner;

/** The {@code mount(2)} and {@code umount2(2)} flags, and the split of option strings into the two. */
public final class MountFlags {

    public static final long MS_RDONLY = 1L;
    public static final long MS_NOSUID = 1L << 1;
    public static final long MS_NODEV = 1L << 2;
    public static final long MS_NOEXEC = 1L << 3;
    public static final long MS_SYNCHRONOUS = 1L << 4;
    public static final long MS_REMOUNT = 1L << 5;
    public static final long MS_MANDLOCK = 1L << 6;
    public static final long MS_DIRSYNC = 1L << 7;
    public static final long MS_NOSYMFOLLOW = 1L << 8;
    public static final long MS_NOATIME = 1L << 10;
    public static final long MS_NODIRATIME = 1L << 11;
    public static final long MS_BIND = 1L << 12;
    public static final long MS_MOVE = 1L << 13;
    public static final long MS_REC = 1L << 14;
    public static final long MS_SILENT = 1L << 15;
    public static final long MS_POSIXACL = 1L << 16;
    public static final long MS_UNBINDABLE = 1L << 17;
    public static final long MS_PRIVATE = 1L << 18;
    public static final long MS_SLAVE = 1L << 19;
    public static final long MS_SHARED = 1L << 20;
    public static final long MS_RELATIME = 1L << 21;
    public static final long MS_STRICTATIME = 1L << 24;
    public static final long MS_LAZYTIME = 1L << 25;

    public static final int MNT_FORCE = 1;
    public static final int MNT_DETACH = 2;
    public static final int MNT_EXPIRE = 4;
    public static final int UMOUNT_NOFOLLOW = 8;

    /** Kernel flags plus the comma-joined filesystem-specific rest ({@code ""} when there is none). */
    public record Parsed(long flags, String data) {
        public Parsed {
            Objects.requireNonNull(data, "data");
        }
    }

    /** An option that cannot be passed on, and why: callers quote the option as they see fit. */
    public static final class InvalidOption extends IllegalArgumentException {

        private final String option;
        private final String reason;

        InvalidOption(String option, String reason) {
            super(reason + ": " + String.valueOf(option).replace("\0", "\\0"));
            this.option = option;
            this.reason = reason;
        }

        /** The option as the caller gave it (null for a missing one). */
        public String option() {
            return option;
        }

        public String reason() {
            return reason;
        }
    }

    private record Effect(long flag, boolean set) {}

    // The same vocabulary mount(8) translates into flags; each option sets or clears one bit.
    private static final Map<String, Effect> VFS_OPTIONS = Map.ofEntries(
            Map.entry("ro", new Effect(MS_RDONLY, true)),
            Map.entry("rw", new Effect(MS_RDONLY, false)),
            Map.entry("nosuid", new Effect(MS_NOSUID, true)),
            Map.entry("suid", new Effect(MS_NOSUID, false)),
            Map.entry("nodev", new Effect(MS_NODEV, true)),
            Map.entry("dev", new Effect(MS_NODEV, false)),
            Map.entry("noexec", new Effect(MS_NOEXEC, true)),
            Map.entry("exec", new Effect(MS_NOEXEC, false)),
            Map.entry("sync", new Effect(MS_SYNCHRONOUS, true)),
            Map.entry("async", new Effect(MS_SYNCHRONOUS, false)),
            Map.entry("dirsync", new Effect(MS_DIRSYNC, true)),
            Map.entry("mand", new Effect(MS_MANDLOCK, true)),
            Map.entry("nomand", new Effect(MS_MANDLOCK, false)),
            Map.entry("noatime", new Effect(MS_NOATIME, true)),
            Map.entry("atime", new Effect(MS_NOATIME, false)),
            Map.entry("nodiratime", new Effect(MS_NODIRATIME, true)),
            Map.entry("diratime", new Effect(MS_NODIRATIME, false)),
            Map.entry("relatime", new Effect(MS_RELATIME, true)),
            Map.entry("norelatime", new Effect(MS_RELATIME, false)),
            Map.entry("strictatime", new Effect(MS_STRICTATIME, true)),
            Map.entry("nostrictatime", new Effect(MS_STRICTATIME, false)),
            Map.entry("lazytime", new Effect(MS_LAZYTIME, true)),
            Map.entry("nolazytime", new Effect(MS_LAZYTIME, false)),
            Map.entry("nosymfollow", new Effect(MS_NOSYMFOLLOW, true)),
            Map.entry("symfollow", new Effect(MS_NOSYMFOLLOW, false)),
            Map.entry("silent", new Effect(MS_SILENT, true)),
            Map.entry("loud", new Effect(MS_SILENT, false)));

    // Options a CSI volume request must not smuggle in: they turn a fresh mount into a bind, a
    // remount or a propagation change of something that is already mounted.
    private static final Set<String> FORBIDDEN = Set.of(
            "bind", "rbind", "remount", "move", "rmove",
            "shared", "rshared", "private", "rprivate", "slave", "rslave", "unbindable", "runbindable");

    // mount(8) consumes these itself and never hands them to the kernel; passed on as data they
    // would make ext4 or xfs refuse the mount, so drop them as mount(8) does.
    private static final Set<String> USERSPACE_ONLY = Set.of("defaults", "auto", "noauto", "nofail", "_netdev");

    private static final List<String> NAMES_IN_ORDER = List.of(
            "ro", "nosuid", "nodev", "noexec", "sync", "remount", "mand", "dirsync", "nosymfollow",
            "", "noatime", "nodiratime", "bind", "move", "rec", "silent", "posixacl", "unbindable",
            "private", "slave", "shared", "relatime", "", "", "strictatime", "lazytime");

    private MountFlags() {}

    /**
     * Splits CSI-style mount options into {@code mount(2)} flags and the filesystem's data string.
     * Later options win ({@code ro} then {@code rw} is read-write), as with mount(8).
     *
     * @throws InvalidOption for an empty option, one containing ',' or NUL, or one that would bind,
     *     remount, move or change propagation
     */
    public static Parsed parse(List<String> options) {
        long flags = 0;
        List<String> data = new ArrayList<>();
        for (String option : options) {
            if (option == null || option.isEmpty()) {
                throw new InvalidOption(option, "empty mount option");
            }
            if (option.indexOf(',') >= 0 || option.indexOf('\0') >= 0) {
                throw new InvalidOption(option, "mount option must not contain ',' or NUL");
            }
            if (FORBIDDEN.contains(option)) {
                throw new InvalidOption(option, "mount option not allowed");
            }
            Effect effect = VFS_OPTIONS.get(option);
            if (effect != null) {
                flags = effect.set() ? flags | effect.flag() : flags & ~effect.flag();
            } else if (!USERSPACE_ONLY.contains(option) && !option.startsWith("x-")) {
                data.add(option);
            }
        }
        return new Parsed(flags, String.join(",", data));
    }

    /** The flags as mount(8) would spell them, e.g. {@code "ro,nodev"}; for messages and logs. */
    public static String describe(long flags) {
        StringJoiner names = new StringJoiner(",");
        for (int bit = 0; bit < 64; bit++) {
            if ((flags & (1L << bit)) != 0) {
                String name = bit < NAMES_IN_ORDER.size() ? NAMES_IN_ORDER.get(bit) : "";
                names.add(name.isEmpty() ? "0x" + Long.toHexString(1L << bit) : name);
            }
        }
        return names.toString();
    }
}
