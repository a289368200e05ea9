package dev.hearth.storage.tool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.hearth.linux.ChildProcess;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

// /bin/sh stands in for real tools here, and only here: production code never runs a shell.
// These run on posix_spawn (ChildProcess), what the driver uses on glibc 2.34 and later;
// ToolRunnerProcessBuilderTest runs them all again on the ProcessBuilder it falls back to.
@Timeout(60)
class ToolRunnerTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private final ToolRunner runner = runner(ToolRunner.DEFAULT_OUTPUT_LIMIT);

    /** The runner under test, keeping {@code limit} bytes of each stream. */
    ToolRunner runner(int limit) {
        assertThat(ChildProcess.supported()).as("posix_spawn with closefrom (glibc 2.34 or later)").isTrue();
        return new ToolRunner(limit, true);
    }

    private static List<String> sh(String script) {
        return List.of("/bin/sh", "-c", script);
    }

    @Test
    void capturesStdoutStderrAndExitCode() {
        ToolResult result = runner.run(sh("echo out; echo err >&2"), TIMEOUT);

        assertThat(result.exitCode()).isZero();
        assertThat(result.stdout()).isEqualTo("out\n");
        assertThat(result.stderr()).isEqualTo("err\n");
        assertThat(result.elapsed()).isPositive();
    }

    @Test
    void nonZeroExitThrowsWithCommandCodeAndTrimmedStderr() {
        ToolException e = catchThrowableOfType(ToolException.class,
                () -> runner.run(sh("echo '  disk on fire  ' >&2; exit 3"), TIMEOUT));

        assertThat(e.reason()).isEqualTo(ToolException.Reason.EXITED_NON_ZERO);
        assertThat(e.exitCode()).hasValue(3);
        assertThat(e.command()).containsExactly("/bin/sh", "-c", "echo '  disk on fire  ' >&2; exit 3");
        assertThat(e.stderr()).isEqualTo("  disk on fire  \n");
        assertThat(e.getMessage())
                .startsWith("/bin/sh -c ")
                .endsWith(" exited with status 3: disk on fire");
    }

    @Test
    void nonZeroExitWithOnlyStdoutReportsStdout() {
        assertThatThrownBy(() -> runner.run(sh("echo complaint; exit 1"), TIMEOUT))
                .hasMessageEndingWith("exited with status 1: complaint");
    }

    @Test
    void runAllowingFailureReturnsTheResult() {
        ToolResult result = runner.runAllowingFailure(sh("echo partial; exit 2"), TIMEOUT);

        assertThat(result.exitCode()).isEqualTo(2);
        assertThat(result.succeeded()).isFalse();
        assertThat(result.stdout()).isEqualTo("partial\n");
    }

    @Test
    void missingToolIsReportedByName() {
        ToolException e = catchThrowableOfType(ToolException.class,
                () -> runner.run(List.of("hearth-no-such-tool", "-q"), TIMEOUT));

        assertThat(e.reason()).isEqualTo(ToolException.Reason.NOT_FOUND);
        assertThat(e).hasMessage("hearth-no-such-tool: not found on PATH");
        assertThat(e.exitCode()).isEmpty();
    }

    @Test
    void missingAbsolutePathIsNotFound() {
        assertThatThrownBy(() -> runner.run(List.of("/nonexistent/mkfs.xfs"), TIMEOUT))
                .isInstanceOf(ToolException.class)
                .hasMessage("/nonexistent/mkfs.xfs: not found");
    }

    @Test
    void toolsAreFoundOnTheFixedPath() {
        assertThat(runner.run(List.of("true"), TIMEOUT).exitCode()).isZero();
    }

    @Test
    void environmentIsCleanAndFixed() {
        String env = runner.run(List.of("env"), TIMEOUT).stdout();

        assertThat(env.lines().sorted().toList())
                .containsExactly("LC_ALL=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin");
    }

    @Test
    void argumentsReachTheToolVerbatimWithoutAShell() {
        String tricky = "$HOME; rm -rf / `id` 'quoted' \"double\" *";

        ToolResult result = runner.run(List.of("printf", "%s", tricky), TIMEOUT);

        assertThat(result.stdout()).isEqualTo(tricky);
    }

    @Test
    void stdinIsAtEndOfFile() {
        // cat would wait forever if stdin were an open pipe.
        ToolResult result = runner.run(List.of("cat"), Duration.ofSeconds(5));

        assertThat(result.stdout()).isEmpty();
    }

    @Test
    void workingDirectoryIsRoot() {
        assertThat(runner.run(List.of("pwd"), TIMEOUT).stdout()).isEqualTo("/\n");
    }

    @Test
    void theToolGetsNoDescriptorOfTheDaemonsBeyondItsThree(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("held"), "x");
        try (FileChannel held = FileChannel.open(file)) {
            // $$ is the shell itself: ls's own descriptor of the directory it lists is not in it.
            String fds = runner.run(sh("ls /proc/$$/fd"), TIMEOUT).stdout();

            assertThat(fds.lines().toList()).containsExactly("0", "1", "2");
        }
    }

    @Test
    void theToolStartsWithNoSignalBlockedOrIgnored() {
        String status = runner.run(List.of("grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"), TIMEOUT).stdout();

        assertThat(status).contains("SigBlk:\t0000000000000000");
        // The standard signals, 1 to 31. glibc's posix_spawn leaves its own two (32 and 33, for
        // thread cancellation and set*id) ignored across the exec; the tool's glibc takes them back.
        long ignored = Long.parseLong(status.lines().filter(l -> l.startsWith("SigIgn:")).findFirst().orElseThrow()
                .substring("SigIgn:".length()).strip(), 16);
        assertThat(ignored & 0x7fffffffL & ~ignoredByTheJvm()).as("SigIgn %x", ignored).isZero();
    }

    /** The standard signals a tool may find ignored because the JVM itself was started with them ignored: none. */
    long ignoredByTheJvm() {
        return 0;
    }

    /** The standard signals this JVM ignores (SIGINT and SIGQUIT for a job started in a script's background). */
    static long jvmIgnoredSignals() {
        try {
            String line = Files.readAllLines(Path.of("/proc/self/status")).stream()
                    .filter(l -> l.startsWith("SigIgn:")).findFirst().orElseThrow();
            return Long.parseLong(line.substring("SigIgn:".length()).strip(), 16) & 0x7fffffffL;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void anInterruptedCallerKillsTheToolAndIsToldSo(@TempDir Path dir) throws Exception {
        Path pidFile = dir.resolve("tool.pid");
        var failure = new java.util.concurrent.atomic.AtomicReference<Throwable>();
        Thread caller = Thread.ofPlatform().start(() -> {
            try {
                runner.run(sh("echo $$ > " + pidFile + "; exec sleep 300"), TIMEOUT);
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!Files.exists(pidFile) || Files.readString(pidFile).isBlank()) {
            assertThat(System.nanoTime()).as("the tool started").isLessThan(deadline);
            Thread.sleep(10);
        }
        long started = System.nanoTime();
        caller.interrupt();
        caller.join(Duration.ofSeconds(10));

        assertThat(caller.isAlive()).isFalse();
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(5));
        assertThat(failure.get()).isInstanceOf(ToolException.class);
        assertThat(((ToolException) failure.get()).reason()).isEqualTo(ToolException.Reason.INTERRUPTED);
        long pid = Long.parseLong(Files.readString(pidFile).strip());
        assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
    }

    @Test
    void aToolKilledByASignalReportsTheShellsStatus() {
        ToolResult result = runner.runAllowingFailure(sh("kill -TERM $$"), TIMEOUT);

        assertThat(result.exitCode()).isEqualTo(128 + 15);
    }

    @Test
    void timeoutKillsTheWholeProcessTree(@TempDir Path dir) throws Exception {
        Path pidFile = dir.resolve("child.pid");
        long start = System.nanoTime();

        ToolException e = catchThrowableOfType(ToolException.class, () -> runner.run(
                sh("sleep 300 & echo $! > " + pidFile + "; wait"), Duration.ofMillis(700)));

        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
        assertThat(e.reason()).isEqualTo(ToolException.Reason.TIMED_OUT);
        assertThat(e).hasMessageContaining("timed out after PT0.7S");
        long child = Long.parseLong(Files.readString(pidFile).strip());
        assertThat(ProcessHandle.of(child).filter(ProcessHandle::isAlive)).isEmpty();
    }

    @Test
    void timeoutCarriesWhatTheToolSaidOnStderr() {
        assertThatThrownBy(() -> runner.run(sh("echo 'waiting for lock' >&2; sleep 300"), Duration.ofMillis(500)))
                .isInstanceOf(ToolException.class)
                .hasMessageEndingWith(": waiting for lock");
    }

    @Test
    void largeOutputOnBothStreamsDoesNotDeadlock() {
        ToolRunner roomy = runner(8 << 20);

        // 4 MiB on each stream, written alternately: a reader draining only one would stall the tool.
        ToolResult result = roomy.run(sh("i=0; while [ $i -lt 64 ]; do "
                + "head -c 65536 /dev/zero | tr '\\0' o; head -c 65536 /dev/zero | tr '\\0' e >&2; "
                + "i=$((i+1)); done"), TIMEOUT);

        assertThat(result.stdout()).hasSize(4 << 20).matches("o+");
        assertThat(result.stderr()).hasSize(4 << 20).matches("e+");
    }

    @Test
    void stderrBeyondTheLimitIsCutButTheToolCompletes() {
        ToolResult result = runner.run(sh("head -c 3000000 /dev/zero | tr '\\0' x >&2; echo done"), TIMEOUT);

        assertThat(result.stdout()).isEqualTo("done\n");
        assertThat(result.stderr()).hasSize(ToolRunner.DEFAULT_OUTPUT_LIMIT);
    }

    @Test
    void stdoutBeyondTheLimitIsRefusedRatherThanCut() {
        ToolException e = catchThrowableOfType(ToolException.class,
                () -> runner.run(sh("head -c 3000000 /dev/zero"), TIMEOUT));

        assertThat(e.reason()).isEqualTo(ToolException.Reason.OUTPUT_TOO_LARGE);
        assertThat(e.exitCode()).hasValue(0);
        assertThat(e).hasMessageContaining("more than 65536 bytes");
    }

    @Test
    void rejectsEmptyCommandsAndNonPositiveTimeouts() {
        assertThatThrownBy(() -> runner.run(List.of(), TIMEOUT)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> runner.run(List.of("true"), Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ToolRunner(0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void renderQuotesOnlyWhereAShellWouldNeedIt() {
        assertThat(ToolException.render(List.of("mkfs.ext4", "-E", "a=1,b", "/dev/my disk", "it's", "")))
                .isEqualTo("mkfs.ext4 -E a=1,b '/dev/my disk' 'it'\\''s' ''");
    }
}
