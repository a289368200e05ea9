package dev.hearth.storage.tool;

import dev.hearth.linux.ChildProcess;
import dev.hearth.linux.LinuxException;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * The one way hearth runs external programs (mkfs, blkid, ...). Arguments are passed as a list,
 * never through a shell; the child gets a fixed PATH and the C locale so its output parses the
 * same on every node; stdin is /dev/null so no tool can stop to ask a question.
 */
public final class ToolRunner {

    public static final int DEFAULT_OUTPUT_LIMIT = 64 * 1024;

    /** Where tools are looked for, whatever the daemon's own PATH says. */
    public static final List<String> SEARCH_PATH = List.of("/usr/sbin", "/usr/bin", "/sbin", "/bin");

    // How long to wait for a killed process to be reaped before giving up on it.
    private static final Duration REAP_GRACE = Duration.ofSeconds(5);

    /** The child's whole environment: the fixed PATH, and the C locale so that its output parses alike everywhere. */
    private static final Map<String, String> ENVIRONMENT = Map.of("PATH", String.join(":", SEARCH_PATH), "LC_ALL", "C");
    /** {@link #ENVIRONMENT} as posix_spawn takes it: {@code NAME=value}. */
    private static final List<String> ENVIRONMENT_ENTRIES = ENVIRONMENT.entrySet().stream()
            .map(entry -> entry.getKey() + "=" + entry.getValue()).toList();

    // The longest a wait for a spawned tool blocks before it looks at the deadline and the interrupt flag.
    private static final Duration SLICE = Duration.ofMillis(50);

    private final int outputLimit;
    private final boolean spawn;

    public ToolRunner() {
        this(DEFAULT_OUTPUT_LIMIT);
    }

    /** {@code outputLimitBytes} bounds what is kept of each of stdout and stderr. */
    public ToolRunner(int outputLimitBytes) {
        this(outputLimitBytes, ChildProcess.supported());
    }

    /** {@code spawn}: through {@link ChildProcess} (where the libc allows), or else {@link ProcessBuilder}. */
    ToolRunner(int outputLimitBytes, boolean spawn) {
        if (outputLimitBytes <= 0) {
            throw new IllegalArgumentException("output limit must be positive: " + outputLimitBytes);
        }
        this.outputLimit = outputLimitBytes;
        this.spawn = spawn && ChildProcess.supported();
    }

    /** Runs the tool and throws {@link ToolException} unless it exits 0. */
    public ToolResult run(List<String> argv, Duration timeout) {
        ToolResult result = runAllowingFailure(argv, timeout);
        if (!result.succeeded()) {
            throw ToolException.exited(argv, result);
        }
        return result;
    }

    /**
     * Runs the tool and returns whatever exit status it gave; for tools whose exit code is an
     * answer (blkid exits 2 for "nothing found"). Still throws when the tool is missing, cannot
     * start, times out or floods stdout.
     */
    public ToolResult runAllowingFailure(List<String> argv, Duration timeout) {
        List<String> command = List.copyOf(argv);
        if (command.isEmpty()) {
            throw new IllegalArgumentException("empty command");
        }
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        List<String> resolved = new ArrayList<>(command);
        resolved.set(0, resolve(command).toString());
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        Captured out = new Captured(outputLimit);
        Captured err = new Captured(outputLimit);
        int exitCode = spawn
                ? runSpawned(command, resolved, timeout, deadline, out, err)
                : runBuilt(command, resolved, timeout, deadline, out, err);
        Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
        if (out.overflowed()) {
            throw ToolException.outputTooLarge(command, exitCode, outputLimit, err.text());
        }
        return new ToolResult(exitCode, out.text(), err.text(), elapsed);
    }

    /**
     * posix_spawn ({@link ChildProcess}): the tool is exec'd straight from the JVM, and this thread
     * reads its output and reaps it. The wait runs in slices so that an interrupt is seen within one.
     */
    private static int runSpawned(List<String> command, List<String> resolved, Duration timeout, long deadline,
            Captured out, Captured err) {
        ChildProcess child;
        try {
            child = ChildProcess.start(resolved.getFirst(), resolved, ENVIRONMENT_ENTRIES);
        } catch (LinuxException e) {
            throw ToolException.startFailed(command, e);
        }
        try (child) {
            try {
                // Draining the output shares the deadline: a tool that exits while a background
                // child still holds its pipes must not hang the caller.
                while (child.readOutput(slice(deadline), out, err)) {
                    checkStillWanted(command, child, timeout, deadline, err);
                }
                long pause = 20_000;
                OptionalInt status;
                while ((status = child.exitStatus()).isEmpty()) {
                    checkStillWanted(command, child, timeout, deadline, err);
                    LockSupport.parkNanos(pause); // its pipes are closed: it is exiting, or has daemonized
                    pause = Math.min(pause * 2, SLICE.toNanos());
                }
                return status.getAsInt();
            } catch (LinuxException e) {
                killTree(child);
                throw ToolException.lost(command, e);
            }
        }
    }

    /** Throws, with the child and all it started killed, once the deadline passed or the caller was interrupted. */
    private static void checkStillWanted(List<String> command, ChildProcess child, Duration timeout, long deadline,
            Captured err) {
        if (Thread.interrupted()) {
            killTree(child);
            Thread.currentThread().interrupt();
            throw ToolException.interrupted(command, new InterruptedException("interrupted while " + command.getFirst()
                    + " ran"));
        }
        if (System.nanoTime() - deadline >= 0) {
            killTree(child);
            throw ToolException.timedOut(command, timeout, err.text());
        }
    }

    /** How long one wait for output may block: the time left, at most {@link #SLICE}. */
    private static int slice(long deadline) {
        long left = deadline - System.nanoTime();
        return (int) Math.max(0, Math.min(SLICE.toMillis(), TimeUnit.NANOSECONDS.toMillis(left) + 1));
    }

    private static void killTree(ChildProcess child) {
        List<ProcessHandle> descendants = ProcessHandle.of(child.pid()).map(h -> h.descendants().toList())
                .orElse(List.of());
        child.killAndReap(REAP_GRACE.toMillis());
        killAll(descendants, System.nanoTime() + REAP_GRACE.toNanos());
    }

    /** {@link ProcessBuilder}, where this libc cannot spawn as {@link ChildProcess} does (before glibc 2.34). */
    private static int runBuilt(List<String> command, List<String> resolved, Duration timeout, long deadline, Captured out,
            Captured err) {
        ProcessBuilder builder = new ProcessBuilder(resolved)
                .directory(new File("/"))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Map<String, String> env = builder.environment();
        env.clear();
        env.putAll(ENVIRONMENT);
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            throw ToolException.startFailed(command, e);
        }
        StreamCollector outDone = StreamCollector.start(process.getInputStream(), out, "stdout");
        StreamCollector errDone = StreamCollector.start(process.getErrorStream(), err, "stderr");
        try {
            boolean finished = process.waitFor(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)
                    && outDone.await(deadline - System.nanoTime())
                    && errDone.await(deadline - System.nanoTime());
            if (!finished) {
                killTree(process);
                throw ToolException.timedOut(command, timeout, err.text());
            }
        } catch (InterruptedException e) {
            killTree(process);
            Thread.currentThread().interrupt();
            throw ToolException.interrupted(command, e);
        }
        return process.exitValue();
    }

    /**
     * Finds the executable ourselves: ProcessBuilder would search the daemon's own PATH, not the
     * fixed one the child gets.
     */
    private static Path resolve(List<String> command) {
        String name = command.getFirst();
        if (name.contains("/")) {
            Path path = Path.of(name);
            if (Files.isRegularFile(path) && Files.isExecutable(path)) {
                return path;
            }
            throw ToolException.notFound(command, name + ": not found");
        }
        for (String dir : SEARCH_PATH) {
            Path candidate = Path.of(dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw ToolException.notFound(command, name + ": not found on PATH");
    }

    /**
     * Kills the process and everything it started, and waits (briefly) until they are gone, so
     * a retry never races the remains of the previous attempt on the same device. Descendants
     * are listed first: once the parent dies they are re-parented and cannot be found from it.
     */
    private static void killTree(Process process) {
        List<ProcessHandle> descendants = process.descendants().toList();
        process.destroyForcibly();
        long deadline = System.nanoTime() + REAP_GRACE.toNanos();
        try {
            process.waitFor(REAP_GRACE.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        killAll(descendants, deadline);
    }

    private static void killAll(List<ProcessHandle> descendants, long deadline) {
        descendants.forEach(ProcessHandle::destroyForcibly);
        try {
            for (ProcessHandle descendant : descendants) {
                descendant.onExit().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // Unkillable (stuck in the kernel, e.g. on a dead disk); nothing more can be done here.
        }
    }
}
