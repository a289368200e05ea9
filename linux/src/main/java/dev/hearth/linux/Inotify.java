package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * An inotify instance, read without blocking: {@link #drain} returns the events queued so far. The
 * kernel queues an event in the very call that changes a watched directory, so a drain sees every
 * change that completed before it, by any process. Drains and the close are serialised, so
 * threads may take turns.
 */
public final class Inotify implements AutoCloseable {

    /** A file opened for writing was closed (an edit in place, done). */
    public static final int IN_CLOSE_WRITE = 0x8;
    public static final int IN_MOVED_FROM = 0x40;
    public static final int IN_MOVED_TO = 0x80;
    public static final int IN_CREATE = 0x100;
    public static final int IN_DELETE = 0x200;
    public static final int IN_DELETE_SELF = 0x400;
    public static final int IN_MOVE_SELF = 0x800;
    /** The queue overflowed: events were lost. */
    public static final int IN_Q_OVERFLOW = 0x4000;
    /** The watch is gone (its directory was removed, or its filesystem unmounted). */
    public static final int IN_IGNORED = 0x8000;
    public static final int IN_ONLYDIR = 0x1000000;

    private static final int IN_NONBLOCK = 0x800;
    /** Room for hundreds of events; a drain reads until the queue is empty. */
    private static final int BUFFER_BYTES = 64 * 1024;
    private static final int EVENT_HEADER = 16; // int wd; uint32 mask; uint32 cookie; uint32 len

    /** One event: the watch it came from, what happened, and the entry's name (empty for the directory itself). */
    public record Event(int watch, int mask, String name) {

        public boolean is(int bits) {
            return (mask & bits) != 0;
        }
    }

    private final Arena arena;
    private final int fd;
    private final MemorySegment buffer;
    private final MemorySegment state;

    private Inotify(Arena arena, int fd) {
        this.arena = arena;
        this.fd = fd;
        this.buffer = arena.allocate(BUFFER_BYTES, 8);
        this.state = Libc.callState(arena);
    }

    /** A new instance; EMFILE when the user's instances ({@code fs.inotify.max_user_instances}) are used up. */
    public static Inotify open() throws LinuxException {
        Arena arena = Arena.ofShared();
        int fd = Libc.inotifyInit(arena, IN_NONBLOCK | Libc.O_CLOEXEC);
        if (fd < 0) {
            arena.close();
            throw new LinuxException("inotify_init1", "", -fd);
        }
        return new Inotify(arena, fd);
    }

    /** Watches {@code directory} for {@code mask}; returns the watch, the same one again for the same directory. */
    public int watch(Path directory, int mask) throws LinuxException {
        try (Arena call = Arena.ofConfined()) {
            int wd = Libc.inotifyAddWatch(call, fd, directory.toString(), mask | IN_ONLYDIR);
            if (wd < 0) {
                throw new LinuxException("inotify_add_watch", directory.toString(), -wd);
            }
            return wd;
        }
    }

    /** The events queued since the last drain; none if nothing happened. */
    public synchronized List<Event> drain() throws LinuxException {
        List<Event> events = new ArrayList<>();
        while (true) {
            long n = Libc.read(state, fd, buffer);
            if (n == -Errno.EAGAIN) {
                return events;
            }
            if (n < 0) {
                throw new LinuxException("read", "inotify", (int) -n);
            }
            long offset = 0;
            while (offset + EVENT_HEADER <= n) {
                int watch = buffer.get(JAVA_INT, offset);
                int mask = buffer.get(JAVA_INT, offset + 4);
                int length = buffer.get(JAVA_INT, offset + 12);
                events.add(new Event(watch, mask, name(offset + EVENT_HEADER, length)));
                offset += EVENT_HEADER + length;
            }
        }
    }

    /** The NUL-padded name of {@code length} bytes at {@code offset}. */
    private String name(long offset, int length) {
        int end = 0;
        while (end < length && buffer.get(JAVA_BYTE, offset + end) != 0) {
            end++;
        }
        byte[] bytes = new byte[end];
        MemorySegment.copy(buffer, JAVA_BYTE, offset, bytes, 0, end);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Override
    public synchronized void close() {
        Libc.close(fd);
        arena.close();
    }
}
