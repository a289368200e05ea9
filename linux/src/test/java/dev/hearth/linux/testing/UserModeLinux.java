package dev.hearth.linux.testing;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs commands, or a static method of a test, as root inside a user-mode Linux guest through
 * {@code test/uml/run}. For what the host kernel refuses this process (online ext4 growth needs
 * CAP_SYS_RESOURCE, which the test hosts' root lacks). The guest sees the host's files, tools and
 * JDK at the same paths, so a test's {@code @TempDir} works unchanged; whatever it mounts or
 * attaches dies with the guest and never touches the host's kernel.
 *
 * <p>A test typically does:
 * <pre>{@code
 * if (!canDoItHere()) {
 *     UserModeLinux.assumeAvailable("why the host cannot");
 *     UserModeLinux.runInGuest(MyTest.class, "scenario", dir, Duration.ofMinutes(3));
 *     return;
 * }
 * scenario(dir);
 * }</pre>
 * where {@code static void scenario(Path dir)} holds the real steps and assertions.
 */
public final class UserModeLinux {

    /** Set to {@code 1} in the guest's environment. */
    public static final String IN_GUEST_ENV = "HEARTH_IN_UML";
    /** Printed by {@link #main} when the guest's method returned normally. */
    public static final String PASS = "HEARTH-UML-PASS";
    /** Overrides where the repository (holding {@code test/uml/run}) is; else found above {@code user.dir}. */
    public static final String ROOT_PROPERTY = "hearth.root";

    private static final String SCRIPT = "test/uml/run";
    // Past the script's own timeout: it kills the guest itself and says so, which beats our kill.
    private static final Duration SCRIPT_GRACE = Duration.ofSeconds(30);
    private static final Duration KILL_GRACE = Duration.ofSeconds(10);

    /**
     * @param exitCode    the command's; 124 when the guest timed out, 125 when it died without
     *                    reporting one, 127 without linux.uml
     * @param output      the command's stdout and stderr, interleaved
     * @param diagnostics the script's own lines (boot time, timeout, console tail)
     */
    public record Result(int exitCode, String output, String diagnostics, Duration elapsed) {

        /** Everything a failure message needs. */
        public String describe() {
            return "exit " + exitCode + " after " + elapsed.toMillis() + " ms\n--- guest output ---\n" + output
                    + "--- " + SCRIPT + " ---\n" + diagnostics;
        }
    }

    private UserModeLinux() {}

    /** Whether this process runs inside the guest. */
    public static boolean insideGuest() {
        return "1".equals(System.getenv(IN_GUEST_ENV));
    }

    /** What this host lacks to boot a guest; empty when it can. */
    public static List<String> missing() {
        List<String> missing = new ArrayList<>();
        String kernel = System.getenv("HEARTH_UML_KERNEL");
        if (kernel != null ? !Files.isExecutable(Path.of(kernel)) : !Requirements.onPath("linux.uml")) {
            missing.add("linux.uml (package user-mode-linux)");
        }
        if (!Requirements.onPath("modprobe")) {
            missing.add("modprobe (package kmod)");
        }
        if (findScript().isEmpty()) {
            missing.add(SCRIPT + " above " + System.getProperty("user.dir") + " (or -D" + ROOT_PROPERTY + "=)");
        }
        return missing;
    }

    /**
     * Skips the test, saying why it wanted a guest and what is missing, when no guest can boot;
     * under {@code CI=true} fails it instead, as {@link RequiresTools} does.
     */
    public static void assumeAvailable(String why) {
        List<String> missing = missing();
        if (missing.isEmpty()) {
            return;
        }
        String reason = why + "; running it in user-mode Linux needs " + String.join(", ", missing);
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            throw new IllegalStateException("CI=true but the test environment lacks: " + reason
                    + " (.ci/run must install it)");
        }
        Assumptions.abort("skipped: " + reason);
    }

    /**
     * Runs {@code command} in {@code workDir} as root in a fresh guest and waits for it. The guest's
     * environment is PATH, HOME, {@value #IN_GUEST_ENV} and {@code env}; its stdin is empty.
     */
    public static Result run(Path workDir, Duration timeout, List<String> command, Map<String, String> env)
            throws IOException {
        return run(workDir, timeout, command, env, List.of());
    }

    /**
     * {@link #run(Path, Duration, List, Map)} with more of {@code test/uml/run}'s options, such as
     * {@code -k dm-thin-pool} (load a module) or {@code -d FILE} (attach a disk image as /dev/ubdX).
     */
    public static Result run(Path workDir, Duration timeout, List<String> command, Map<String, String> env,
            List<String> options) throws IOException {
        Path script = findScript().orElseThrow(() -> new IllegalStateException("no " + SCRIPT + " found; "
                + missing()));
        List<String> argv = new ArrayList<>(List.of(script.toString(), "-C", workDir.toString(),
                "-t", Long.toString(Math.max(1, timeout.toSeconds()))));
        argv.addAll(options);
        env.forEach((name, value) -> argv.addAll(List.of("-e", name + "=" + value)));
        argv.add("--");
        argv.addAll(command);

        long start = System.nanoTime();
        Process process = new ProcessBuilder(argv)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        CompletableFuture<String> out = drain(process.getInputStream());
        CompletableFuture<String> err = drain(process.getErrorStream());
        try {
            if (!process.waitFor(timeout.plus(SCRIPT_GRACE).toMillis(), TimeUnit.MILLISECONDS)) {
                stop(process);
                return new Result(124, text(out), text(err) + "\nno exit after " + timeout.plus(SCRIPT_GRACE)
                        + "; killed", Duration.ofNanos(System.nanoTime() - start));
            }
            return new Result(process.exitValue(), out.join(), err.join(), Duration.ofNanos(System.nanoTime() - start));
        } catch (InterruptedException e) {
            stop(process);
            Thread.currentThread().interrupt();
            throw new IOException("interrupted waiting for " + argv, e);
        }
    }

    /**
     * Runs {@code type.method(workDir)} (static; or with no parameters) in a JVM in a fresh guest,
     * with this JVM's class path, and fails with the guest's output unless it returned normally.
     */
    public static Result runInGuest(Class<?> type, String method, Path workDir, Duration timeout) throws IOException {
        return runInGuest(type, method, workDir, timeout, List.of());
    }

    /** {@link #runInGuest(Class, String, Path, Duration)} with more {@code test/uml/run} options (modules, disks). */
    public static Result runInGuest(Class<?> type, String method, Path workDir, Duration timeout, List<String> options)
            throws IOException {
        List<String> command = List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED",
                // The guest has one CPU: C1 only and the serial collector start fastest there.
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx512m", "-Xshare:auto",
                // hsperfdata would land in the host's /tmp under the guest's pid, which a host JVM may own.
                "-XX:-UsePerfData",
                "-cp", System.getProperty("java.class.path"),
                UserModeLinux.class.getName(), type.getName(), method, workDir.toString());
        Result result = run(workDir, timeout, command, Map.of(), options);
        if (result.exitCode() != 0 || !result.output().contains(PASS + " " + type.getName() + "#" + method)) {
            throw new AssertionError(type.getSimpleName() + "." + method + " failed in user-mode Linux: "
                    + result.describe());
        }
        return result;
    }

    /**
     * The guest's entry point: {@code <class> <static method> <work dir>}. Prints {@value #PASS}
     * when the method returns; a stack trace and exit 1 when it throws.
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: " + UserModeLinux.class.getName() + " <class> <static method> <work dir>");
            System.exit(2);
        }
        Class<?> type = Class.forName(args[0]);
        Method method;
        Object[] arguments;
        try {
            method = type.getDeclaredMethod(args[1], Path.class);
            arguments = new Object[] {Path.of(args[2])};
        } catch (NoSuchMethodException e) {
            method = type.getDeclaredMethod(args[1]);
            arguments = new Object[0];
        }
        method.setAccessible(true);
        try {
            method.invoke(null, arguments);
        } catch (InvocationTargetException e) {
            e.getCause().printStackTrace(System.out); // one stream: keeps the trace next to what led to it
            System.out.println("HEARTH-UML-FAIL " + type.getName() + "#" + args[1]);
            System.out.flush();
            System.exit(1);
        }
        System.out.println(PASS + " " + type.getName() + "#" + args[1]);
        System.out.flush();
        System.exit(0); // a stray non-daemon thread must not keep the guest up until its timeout
    }

    static Optional<Path> findScript() {
        String root = System.getProperty(ROOT_PROPERTY);
        if (root != null) {
            return Optional.of(Path.of(root, SCRIPT)).filter(Files::isExecutable);
        }
        for (Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path script = dir.resolve(SCRIPT);
            if (Files.isExecutable(script)) {
                return Optional.of(script);
            }
        }
        return Optional.empty();
    }

    private static CompletableFuture<String> drain(InputStream stream) {
        return CompletableFuture.supplyAsync(() -> {
            try (stream) {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Thread::startVirtualThread);
    }

    private static String text(CompletableFuture<String> stream) {
        return stream.completeOnTimeout("(not closed after the kill)\n", KILL_GRACE.toMillis(), TimeUnit.MILLISECONDS)
                .join();
    }

    /** SIGTERM first: the script then shuts the guest down; whatever survives gets SIGKILL. */
    private static void stop(Process process) {
        List<ProcessHandle> tree = new ArrayList<>(process.descendants().toList());
        process.destroy();
        try {
            process.waitFor(KILL_GRACE.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        tree.forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
    }
}
