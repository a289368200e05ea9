package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ProbeRequest;
import io.grpc.Channel;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The built program, {@code java -jar hearth.jar ...}, as a child process whose output goes to
 * files (a full pipe would stall it). Closing it kills what is still running.
 */
final class HearthProcess implements AutoCloseable {

    private final Process process;
    private final Path stdout;
    private final Path stderr;

    private HearthProcess(Process process, Path stdout, Path stderr) {
        this.process = process;
        this.stdout = stdout;
        this.stderr = stderr;
    }

    /** The jar failsafe hands over; an IT without it would test nothing. */
    static Path jar() {
        String jar = System.getProperty("hearth.jar");
        assertThat(jar).as("system property hearth.jar (set by failsafe)").isNotBlank();
        assertThat(Path.of(jar)).as("the shaded jar").isRegularFile();
        return Path.of(jar);
    }

    /**
     * Starts {@code hearth args...} with output in {@code logDir}; {@code jvmOptions} go before
     * {@code -jar}. NODE_ID is removed from the environment so only flags decide.
     */
    static HearthProcess start(Path logDir, List<String> jvmOptions, String... args) throws IOException {
        return start(List.of(), logDir, jvmOptions, args);
    }

    /**
     * As {@link #start(Path, List, String...)}, with {@code prefix} in front of java: a wrapper
     * such as {@code setpriv --reuid=65534 ...} that changes how it runs.
     */
    static HearthProcess start(List<String> prefix, Path logDir, List<String> jvmOptions, String... args)
            throws IOException {
        List<String> command = new ArrayList<>(prefix);
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--enable-native-access=ALL-UNNAMED");
        command.addAll(jvmOptions);
        command.add("-jar");
        command.add(jar().toString());
        command.addAll(List.of(args));
        Files.createDirectories(logDir);
        Path out = Files.createTempFile(logDir, "stdout-", ".txt");
        Path err = Files.createTempFile(logDir, "stderr-", ".txt");
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectOutput(out.toFile())
                .redirectError(err.toFile());
        builder.environment().remove("NODE_ID");
        return new HearthProcess(builder.start(), out, err);
    }

    static HearthProcess start(Path logDir, String... args) throws IOException {
        return start(logDir, List.of(), args);
    }

    Process process() {
        return process;
    }

    /** Sends SIGINT, as Ctrl-C in a terminal would (Process.destroy sends SIGTERM). */
    void interrupt() throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-INT", Long.toString(process.pid())).inheritIO().start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -INT").isTrue();
    }

    /**
     * Waits until the driver answers Probe ready on {@code channel}; fails the test if it exits or
     * takes longer than {@code timeout}. Until then the socket may be missing, or a killed driver's stale one.
     */
    void awaitReady(Channel channel, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            assertThat(process.isAlive()).as("hearth serve is running; stderr:%n%s", stderr()).isTrue();
            try {
                if (IdentityGrpc.newBlockingStub(channel).withDeadlineAfter(2, TimeUnit.SECONDS)
                        .probe(ProbeRequest.getDefaultInstance()).getReady().getValue()) {
                    return;
                }
            } catch (StatusRuntimeException notYet) {
                // no socket yet, or the killed driver's stale one
            }
            assertThat(System.nanoTime()).as("ready within %s; stderr:%n%s", timeout, stderr()).isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    /** Waits for the exit and returns the exit code; fails the test if it takes longer than {@code timeout}. */
    int waitFor(Duration timeout) throws InterruptedException, IOException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("hearth did not exit within " + timeout + "; stderr:\n" + stderr());
        }
        return process.exitValue();
    }

    String stdout() throws IOException {
        return Files.readString(stdout);
    }

    String stderr() throws IOException {
        return Files.readString(stderr);
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
