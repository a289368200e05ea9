package dev.hearth.linux;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** Reads {@code /proc/self/mountinfo} (proc(5)), the mount table as this process's namespace sees it. */
public final class MountInfo {

    private static final Path SELF = Path.of("/proc/self/mountinfo");

    private MountInfo() {}

    public static List<MountEntry> read() throws IOException {
        // Not Files.readString: a mount point with non-UTF-8 bytes must not make the whole table unreadable.
        return parse(new String(Files.readAllBytes(SELF), StandardCharsets.UTF_8));
    }

    /**
     * Parses mountinfo text, decoding the kernel's octal escapes ({@code \040} space, {@code \011}
     * tab, {@code \012} newline, {@code \134} backslash).
     *
     * @throws IllegalArgumentException for a line that is not mountinfo
     */
    public static List<MountEntry> parse(String content) {
        List<MountEntry> entries = new ArrayList<>();
        String[] lines = content.split("\n");
        for (int i = 0; i < lines.length; i++) {
            if (!lines[i].isEmpty()) {
                entries.add(parseLine(lines[i], i + 1));
            }
        }
        return List.copyOf(entries);
    }

    /**
     * The top-most mount exactly at {@code mountPoint}: when several are stacked there, the last one
     * listed is the one a path lookup sees. Symlinks in {@code mountPoint} are resolved first, as the
     * kernel did when it was mounted.
     */
    public static Optional<MountEntry> at(Path mountPoint) throws IOException {
        return at(read(), mountPoint);
    }

    /** {@link #at(Path)} in a table read before, so several questions can share one read. */
    public static Optional<MountEntry> at(List<MountEntry> table, Path mountPoint) {
        Path wanted = canonical(mountPoint);
        return table.stream().filter(e -> e.mountPoint().equals(wanted)).reduce((first, second) -> second);
    }

    /** The mount {@code path} lives on: the longest mount point that is a prefix of it, last listed winning ties. */
    public static Optional<MountEntry> containing(Path path) throws IOException {
        return containing(read(), path);
    }

    /** {@link #containing(Path)} in a table read before. */
    public static Optional<MountEntry> containing(List<MountEntry> table, Path path) {
        return deepest(table, canonical(path));
    }

    /** The mount a path with no link left in it lives on. */
    private static Optional<MountEntry> deepest(List<MountEntry> table, Path wanted) {
        MountEntry best = null;
        for (MountEntry e : table) {
            if (wanted.startsWith(e.mountPoint())
                    && (best == null || e.mountPoint().getNameCount() >= best.mountPoint().getNameCount())) {
                best = e;
            }
        }
        return Optional.ofNullable(best);
    }

    /**
     * Where the device node {@code node} is bound (a raw block volume's stage or publish): the mount
     * points of every bind of it, or of the node a link of that name leads to. A bind of a device
     * node does not open the device, so neither the device's open count nor an exclusive open shows it.
     */
    public static List<Path> bindsOf(List<MountEntry> table, Path node) {
        List<Path> binds = new ArrayList<>();
        Path real = canonical(node); // resolved once: each resolution is a system call per name in the path
        Optional<MountEntry> devices = deepest(table, real);
        if (devices.isEmpty()) {
            return binds;
        }
        MountEntry fs = devices.get();
        Set<String> roots = bindRoots(fs, node, real);
        for (MountEntry entry : table) {
            if (entry.major() == fs.major() && entry.minor() == fs.minor() && roots.contains(entry.root())) {
                binds.add(entry.mountPoint());
            }
        }
        return binds;
    }

    /**
     * The roots a bind of the device node {@code node}, which lies inside {@code fs}, can show: the
     * node's own name, and the node a link of that name leads to. The kernel resolves a link when it
     * binds, so a bind made through udev's /dev/mapper/vg-lv shows /dm-3.
     */
    public static Set<String> bindRoots(MountEntry fs, Path node) {
        return bindRoots(fs, node, canonical(node));
    }

    private static Set<String> bindRoots(MountEntry fs, Path node, Path real) {
        Set<String> roots = new HashSet<>();
        for (Path path : List.of(node.toAbsolutePath().normalize(), real)) {
            if (path.startsWith(fs.mountPoint())) {
                roots.add(bindRoot(fs, path));
            }
        }
        return roots;
    }

    /** Whether {@code a} and {@code b} name the same node: equal, or {@code b} is a link that leads to {@code a}. */
    public static boolean sameNode(Path a, Path b) {
        return a.equals(b) || a.equals(canonical(b));
    }

    /** The root a bind mount of {@code path}, which lies inside {@code mount}, shows: the mount's root plus the relative path. */
    public static String bindRoot(MountEntry mount, Path path) {
        String relative = mount.mountPoint().relativize(path).toString();
        return mount.root().equals("/") ? "/" + relative : mount.root() + "/" + relative;
    }

    /** The path with every link resolved; the path as given (absolute, normalized) if it cannot be. */
    public static Path canonical(Path path) {
        try {
            return path.toRealPath();
        } catch (IOException e) { // gone or unreachable: compare the path as given
            return path.toAbsolutePath().normalize();
        }
    }

    // 36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue
    private static MountEntry parseLine(String line, int number) {
        String[] f = line.split(" ", -1);
        int separator = Arrays.asList(f).indexOf("-");
        if (separator < 6 || f.length < separator + 4) {
            throw new IllegalArgumentException("mountinfo line " + number + " is malformed: " + line);
        }
        try {
            String[] device = f[2].split(":");
            return new MountEntry(
                    Integer.parseInt(f[0]), Integer.parseInt(f[1]),
                    Integer.parseInt(device[0]), Integer.parseInt(device[1]),
                    unescape(f[3]), Path.of(unescape(f[4])), unescape(f[5]),
                    Arrays.stream(f, 6, separator).map(MountInfo::unescape).toList(),
                    unescape(f[separator + 1]), unescape(f[separator + 2]), unescape(f[separator + 3]));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("mountinfo line " + number + " is malformed: " + line, e);
        }
    }

    static String unescape(String s) {
        if (s.indexOf('\\') < 0) {
            return s;
        }
        StringBuilder out = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && isOctal(s, i + 1) && isOctal(s, i + 2) && isOctal(s, i + 3)) {
                out.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static boolean isOctal(String s, int i) {
        return i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '7';
    }
}
