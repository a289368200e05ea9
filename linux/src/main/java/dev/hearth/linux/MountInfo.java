package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Reads {@code /proc/self/mountinfo} (proc(5)), the mount table as this process's namespace sees it.
 *
 * <p>The kernel writes the whole table out on every read: on a node with 2,000 mounts (the
 * kubelet's own for every pod, and a stage and a publish for each volume) that is 3-4 ms. A call
 * that decides what to mount or unmount reads it ({@link #read}); the kubelet's health and usage
 * calls, one per volume every minute, only report, and {@link #readWatched} answers them from the
 * table read last unless the kernel says it changed since.
 */
public final class MountInfo {

    private static final Path SELF = Path.of("/proc/self/mountinfo");
    /** The calling thread's table, for a thread in a namespace of its own ({@link MountNamespace}). */
    private static final Path THREAD_SELF = Path.of("/proc/thread-self/mountinfo");

    private MountInfo() {}

    /** The table {@link #read} parsed last, whose unchanged lines the next read takes as they are. */
    private static volatile Parsed lastRead = Parsed.NONE;

    /** The mount table, read now. */
    public static List<MountEntry> read() throws IOException {
        if (MountNamespace.isPrivate()) { // its own table; the node's next read keeps the node's last one
            return Parsed.of(new String(Files.readAllBytes(THREAD_SELF), StandardCharsets.UTF_8), Parsed.NONE).entries();
        }
        // Not Files.readString: a mount point with non-UTF-8 bytes must not make the whole table unreadable.
        Parsed parsed = Parsed.of(new String(Files.readAllBytes(SELF), StandardCharsets.UTF_8), lastRead);
        lastRead = parsed; // two reads at once: either one's is a fine start for the next
        return parsed.entries();
    }

    /**
     * The mount table read last, read again only if it changed since. An open descriptor of the file
     * reports a priority event ({@code POLLPRI}) after every mount, unmount, move and change of a
     * mount's flags in the namespace, and a poll with no wait asks for it. The event is taken before
     * the table is read, so a change in between is read at once and reported once more: the table
     * is never older than the call. No event follows a change the table shows only as it is
     * written out: a filesystem an error made read-only ({@code ro} in its super options), or a
     * directory above a mount point renamed. So this is for answers that report, never for a
     * decision to mount, unmount or remove.
     */
    public static List<MountEntry> readWatched() throws IOException {
        return MountNamespace.isPrivate() ? read() : Watched.TABLE.read(); // the watch is on the node's table
    }

    /** The table last read and a descriptor of the file that says when it changed. */
    private static final class Watched {

        static final Watched TABLE = new Watched();
        private static final short POLLPRI = 0x2;
        private static final short POLLERR = 0x8;
        /** The descriptor is not open (closed under us): read afresh every time rather than trust the last table. */
        private static final short POLLNVAL = 0x20;

        /** struct pollfd of the watching descriptor; its fd is -1 where the file could not be opened. */
        private final MemorySegment pollFd;
        private final MemorySegment state;
        private List<MountEntry> last;

        private Watched() {
            Arena arena = Arena.global(); // one for the life of the process, as the descriptor is
            int fd = Libc.open(arena, SELF.toString(), Libc.O_RDONLY | Libc.O_CLOEXEC);
            pollFd = arena.allocate(8);
            pollFd.set(JAVA_INT, 0, fd);
            pollFd.set(JAVA_SHORT, 4, POLLPRI);
            state = Libc.callState(arena);
        }

        synchronized List<MountEntry> read() throws IOException {
            if (pollFd.get(JAVA_INT, 0) < 0) {
                return MountInfo.read();
            }
            pollFd.set(JAVA_SHORT, 6, (short) 0);
            int ready = Libc.poll(state, pollFd, 1, 0);
            boolean changed = ready != 0 && (pollFd.get(JAVA_SHORT, 6) & (POLLPRI | POLLERR | POLLNVAL)) != 0;
            if (last == null || changed || ready < 0) {
                last = null; // a failed read leaves nothing stale behind
                last = MountInfo.read();
            }
            return last;
        }
    }

    /**
     * Parses mountinfo text, decoding the kernel's octal escapes ({@code \040} space, {@code \011}
     * tab, {@code \012} newline, {@code \134} backslash).
     *
     * @throws IllegalArgumentException for a line that is not mountinfo
     */
    public static List<MountEntry> parse(String content) {
        return Parsed.of(content, Parsed.NONE).entries();
    }

    /**
     * A table and the text it was parsed from, with each entry's line in that text by its mount ID.
     * An entry is a function of its line alone, so a line of the next read whose mount ID is here
     * and whose text is the same is this entry, taken without parsing: the kernel writes out the
     * whole table on every read, but between two node calls only their own few lines change (2,000
     * lines parse in about 1.1 ms, against 0.3 ms to find them unchanged). The ID only says which
     * line to compare; a line whose ID was reused for another mount differs, and is parsed.
     */
    record Parsed(String content, List<MountEntry> entries, Map<Integer, Line> byId) {

        static final Parsed NONE = new Parsed("", List.of(), Map.of());

        /** Where an entry's line lies in {@link #content}. */
        record Line(int start, int end, MountEntry entry) {}

        static Parsed of(String content, Parsed last) {
            List<MountEntry> entries = new ArrayList<>();
            Map<Integer, Line> byId = HashMap.newHashMap(Math.max(16, last.byId().size() + 16));
            int number = 0;
            for (int start = 0; start < content.length(); ) {
                int end = content.indexOf('\n', start);
                if (end < 0) {
                    end = content.length();
                }
                number++;
                if (end > start) {
                    Line before = last.byId().get(mountId(content, start, end));
                    MountEntry entry = before != null && before.end() - before.start() == end - start
                            && content.regionMatches(start, last.content(), before.start(), end - start)
                            ? before.entry()
                            : parseLine(content.substring(start, end), number);
                    entries.add(entry);
                    byId.put(entry.mountId(), new Line(start, end, entry));
                }
                start = end + 1;
            }
            return new Parsed(content, List.copyOf(entries), byId);
        }

        /** The line's first field, its mount ID; -1 where it is none (the parse then says what is wrong). */
        private static int mountId(String content, int start, int end) {
            int space = content.indexOf(' ', start);
            try {
                return space > start && space < end ? Integer.parseInt(content, start, space, 10) : -1;
            } catch (NumberFormatException e) {
                return -1;
            }
        }
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
    // Split by hand, field by field: a node with 2,000 mounts has this run 2,000 times per read.
    private static MountEntry parseLine(String line, int number) {
        List<String> f = new ArrayList<>(12);
        int separator = -1;
        for (int start = 0; ; ) {
            int space = line.indexOf(' ', start);
            String field = line.substring(start, space < 0 ? line.length() : space);
            if (separator < 0 && field.equals("-")) {
                separator = f.size();
            }
            f.add(field);
            if (space < 0) {
                break;
            }
            start = space + 1;
        }
        if (separator < 6 || f.size() < separator + 4) {
            throw new IllegalArgumentException("mountinfo line " + number + " is malformed: " + line);
        }
        try {
            String device = f.get(2);
            int colon = device.indexOf(':');
            List<String> optional = new ArrayList<>(separator - 6);
            for (int i = 6; i < separator; i++) {
                optional.add(unescape(f.get(i)));
            }
            return new MountEntry(
                    Integer.parseInt(f.get(0)), Integer.parseInt(f.get(1)),
                    Integer.parseInt(device, 0, colon, 10), Integer.parseInt(device, colon + 1, device.length(), 10),
                    unescape(f.get(3)), Path.of(unescape(f.get(4))), unescape(f.get(5)), optional,
                    unescape(f.get(separator + 1)), unescape(f.get(separator + 2)), unescape(f.get(separator + 3)));
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
