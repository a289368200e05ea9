package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.locks.LockSupport;

/**
 * A program started by posix_spawn, its stdout and stderr on pipes that the caller's own thread
 * reads: no helper process, no reaper or reader threads (the JDK's {@code ProcessBuilder} runs its
 * {@code jspawnhelper} between the JVM and the program, and takes three threads per child).
 *
 * <p>The child gets stdin from /dev/null, the working directory /, no descriptor of the daemon's
 * beyond its stdout and stderr, and every signal at its default disposition with none blocked.
 * It is used from the thread that started it; {@link #close} frees its pipes, and
 * {@link #killAndReap} ends one that must not finish.
 */
public final class ChildProcess implements AutoCloseable {

    /** Receives a child's output as it is read: {@code length} bytes of {@code chunk}. */
    @FunctionalInterface
    public interface Output {
        void accept(byte[] chunk, int length);
    }

    private static final int POLLIN = 0x1;
    private static final int WNOHANG = 1;
    private static final int SIGKILL = 9;
    private static final int CHUNK = 8192;

    private final Arena arena;
    private final int pid;
    private final int[] fds; // read ends of stdout and stderr; -1 once at end of file and closed
    private final MemorySegment state;
    private final MemorySegment polled;
    private final MemorySegment buffer;
    private final MemorySegment status;
    private final byte[] chunk = new byte[CHUNK];
    private Integer exitStatus;

    private ChildProcess(Arena arena, int pid, int stdout, int stderr) {
        this.arena = arena;
        this.pid = pid;
        this.fds = new int[] {stdout, stderr};
        this.state = Libc.callState(arena);
        this.polled = arena.allocate(16, 8); // two struct pollfd {int fd; short events; short revents;}
        this.buffer = arena.allocate(CHUNK);
        this.status = arena.allocate(JAVA_INT);
    }

    /** Whether this libc can start children so (glibc 2.34 and later); where not, use ProcessBuilder. */
    public static boolean supported() {
        return Libc.spawnSupported();
    }

    /**
     * Starts {@code executable} (an absolute path; no search) with {@code argv} (its first element
     * is the name the program sees) and exactly the {@code environment} given ({@code NAME=value}).
     * Throws with ENOENT, EACCES and the like when the program cannot be run.
     */
    public static ChildProcess start(String executable, List<String> argv, List<String> environment)
            throws LinuxException {
        Arena arena = Arena.ofConfined();
        int[] ends = {-1, -1, -1, -1}; // stdout read, write; stderr read, write
        try {
            MemorySegment pair = arena.allocate(JAVA_INT, 2);
            for (int i = 0; i < 4; i += 2) {
                int rc = Libc.pipe2(arena, pair, Libc.O_CLOEXEC);
                if (rc < 0) {
                    throw new LinuxException("pipe2", executable, -rc);
                }
                ends[i] = pair.getAtIndex(JAVA_INT, 0);
                ends[i + 1] = pair.getAtIndex(JAVA_INT, 1);
            }
            int pid = Libc.spawn(arena, executable, argv, environment, ends[1], ends[3]);
            if (pid < 0) {
                throw new LinuxException("posix_spawn", executable, -pid);
            }
            Libc.close(ends[1]);
            Libc.close(ends[3]);
            ChildProcess child = new ChildProcess(arena, pid, ends[0], ends[2]);
            ends[0] = ends[2] = -1;
            return child;
        } catch (LinuxException | RuntimeException | Error e) {
            for (int fd : ends) {
                if (fd >= 0) {
                    Libc.close(fd);
                }
            }
            arena.close();
            throw e;
        }
    }

    public int pid() {
        return pid;
    }

    /**
     * Waits at most {@code timeoutMillis} for output and passes on what there is; returns false once
     * both stdout and stderr have reached end of file (the child and anything it started that
     * kept them open have closed them), true while either is still open.
     */
    public boolean readOutput(int timeoutMillis, Output stdout, Output stderr) throws LinuxException {
        int count = 0;
        for (int fd : fds) {
            if (fd >= 0) {
                polled.set(JAVA_INT, count * 8L, fd);
                polled.set(JAVA_SHORT, count * 8L + 4, (short) POLLIN);
                polled.set(JAVA_SHORT, count * 8L + 6, (short) 0);
                count++;
            }
        }
        if (count == 0) {
            return false;
        }
        int ready = Libc.poll(state, polled, count, timeoutMillis);
        if (ready < 0) {
            throw new LinuxException("poll", "the output of pid " + pid, -ready);
        }
        for (int i = 0; i < count && ready > 0; i++) {
            if (polled.get(JAVA_SHORT, i * 8L + 6) == 0) {
                continue;
            }
            int fd = polled.get(JAVA_INT, i * 8L);
            int stream = fd == fds[0] ? 0 : 1;
            // One read per wake-up: a flood on one stream cannot starve the other.
            long n = Libc.read(state, fd, buffer);
            if (n > 0) {
                MemorySegment.copy(buffer, JAVA_BYTE, 0, chunk, 0, (int) n);
                (stream == 0 ? stdout : stderr).accept(chunk, (int) n);
            } else {
                // End of file, or an error reading a pipe (which only a closed pipe gives): done with it.
                Libc.close(fd);
                fds[stream] = -1;
            }
        }
        return fds[0] >= 0 || fds[1] >= 0;
    }

    /**
     * The child's exit status if it has ended (and is now reaped): its exit code, or 128 plus the
     * signal that killed it, as a shell reports it; empty while it runs.
     */
    public OptionalInt exitStatus() throws LinuxException {
        if (exitStatus == null) {
            int rc = Libc.waitpid(state, pid, status, WNOHANG);
            if (rc < 0) {
                throw new LinuxException("waitpid", Integer.toString(pid), -rc);
            }
            if (rc == 0) {
                return OptionalInt.empty();
            }
            exitStatus = decode(status.get(JAVA_INT, 0));
        }
        return OptionalInt.of(exitStatus);
    }

    /** WIFEXITED: WEXITSTATUS; otherwise 128 + WTERMSIG. */
    static int decode(int waitStatus) {
        int signal = waitStatus & 0x7f;
        return signal == 0 ? (waitStatus >> 8) & 0xff : 128 + signal;
    }

    /**
     * Kills the child (SIGKILL) unless it has already been reaped, and reaps it, waiting at most
     * {@code graceMillis}; one that outlasts that (stuck in the kernel) is reaped by a thread of its
     * own whenever it does end. Its descendants are the caller's to find first, while it still
     * has them.
     */
    public void killAndReap(long graceMillis) {
        if (exitStatus != null) {
            return;
        }
        Libc.kill(arena, pid, SIGKILL);
        long deadline = System.nanoTime() + graceMillis * 1_000_000;
        long pause = 50_000;
        try {
            while (exitStatus().isEmpty()) {
                if (System.nanoTime() > deadline) {
                    reapLater(pid);
                    exitStatus = 128 + SIGKILL;
                    return;
                }
                LockSupport.parkNanos(pause);
                pause = Math.min(pause * 2, 10_000_000);
            }
        } catch (LinuxException e) {
            exitStatus = 128 + SIGKILL; // ECHILD: someone else reaped it; nothing is left to wait for
        }
    }

    private static void reapLater(int pid) {
        Thread.ofPlatform().daemon().name("reap-" + pid).start(() -> {
            try (Arena arena = Arena.ofConfined()) {
                Libc.waitpid(Libc.callState(arena), pid, arena.allocate(JAVA_INT), 0);
            }
        });
    }

    /** Closes the pipes still open. The child itself is not touched: reap or kill it first. */
    @Override
    public void close() {
        for (int i = 0; i < fds.length; i++) {
            if (fds[i] >= 0) {
                Libc.close(fds[i]);
                fds[i] = -1;
            }
        }
        arena.close();
    }
}
