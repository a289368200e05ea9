package dev.hearth.storage.tool;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

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

    private final int outputLimit;

    public ToolRunner() {
        this(DEFAULT_OUTPUT_LIMIT);
    }

    /** {@code outputLimitBytes} bounds what is kept of each of stdout and stderr. */
    public ToolRunner(int outputLimitBytes) {
        if (outputLimitBytes <= 0) {
            throw new IllegalArgumentException("output limit must be positive: " + outputLimitBytes);
        }
        this.outputLimit = outputLimitBytes;
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

        ProcessBuilder builder = new ProcessBuilder(resolved)
                .directory(new File("/"))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Map<String, String> env = builder.environment();
        env.clear();
        env.put("PATH", String.join(":", SEARCH_PATH));
        env.put("LC_ALL", "C");

        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            throw ToolException.startFailed(command, e);
        }
        StreamCollector out = StreamCollector.start(process.getInputStream(), outputLimit, "stdout");
        StreamCollector err = StreamCollector.start(process.getErrorStream(), outputLimit, "stderr");
        try {
            // Draining the output shares the deadline: a tool that exits while a background child
            // still holds its pipes must not hang the caller.
            boolean finished = process.waitFor(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)
                    && out.await(deadline - System.nanoTime())
                    && err.await(deadline - System.nanoTime());
            if (!finished) {
                killTree(process);
                throw ToolException.timedOut(command, timeout, err.text());
            }
        } catch (InterruptedException e) {
            killTree(process);
            Thread.currentThread().interrupt();
            throw ToolException.interrupted(command, e);
        }
        Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
        if (out.overflowed()) {
            throw ToolException.outputTooLarge(command, process.exitValue(), outputLimit, err.text());
        }
        return new ToolResult(process.exitValue(), out.text(), err.text(), elapsed);
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
        descendants.forEach(ProcessHandle::destroyForcibly);
        long deadline = System.nanoTime() + REAP_GRACE.toNanos();
        try {
            process.waitFor(REAP_GRACE.toNanos(), TimeUnit.NANOSECONDS);
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
