package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code hearth serve} as a crash test needs it: started, killed with SIGKILL together with the
 * tools it runs (as the end of its container kills every process in it), started again on the
 * same state, and called through a fresh channel each time.
 */
final class KillableHearth implements AutoCloseable {

    /** The crash tests' JVM options: small, and quick to start, since each kill is a start. */
    static final List<String> JVM = List.of("-XX:+UseSerialGC", "-Xmx256m", "-XX:TieredStopAtLevel=1",
            "-XX:CompileThresholdScaling=0.02", "-XX:-UsePerfData");

    private final Path logs;
    private final Path socket;
    private final List<String> jvmOptions;
    private final Path classArchive;
    private final String[] args;
    private HearthProcess process;
    private volatile ManagedChannel channel;
    private Duration lastStart = Duration.ZERO;

    /**
     * @param classArchive a CDS archive of the classes the driver loads: written when a driver
     *     started without it stops normally ({@link #stop}), used by every start after that
     */
    KillableHearth(Path logs, Path socket, List<String> jvmOptions, Path classArchive, List<String> flags) {
        this.logs = logs;
        this.socket = socket;
        this.jvmOptions = jvmOptions;
        this.classArchive = classArchive;
        List<String> all = new ArrayList<>(List.of("serve", "--endpoint", "unix://" + socket));
        all.addAll(flags);
        this.args = all.toArray(String[]::new);
    }

    /** Starts the driver and waits until Probe says it is ready. */
    KillableHearth start() throws IOException, InterruptedException {
        long started = System.nanoTime();
        process = HearthProcess.start(logs, options(), args);
        if (channel != null) {
            channel.shutdownNow();
        }
        channel = Channels.channelTo(Endpoint.parse("unix://" + socket));
        process.awaitReady(channel, Duration.ofSeconds(90));
        lastStart = Duration.ofNanos(System.nanoTime() - started);
        return this;
    }

    /**
     * Starts the driver and kills it (with what it runs) {@code delay} later, whether it is ready
     * by then or not: a kill in the middle of a start, while it opens its pools, thaws, cleans up or
     * warms up. {@link #start} makes the next driver.
     */
    void startAndKillAfter(Duration delay) throws IOException, InterruptedException {
        process = HearthProcess.start(logs, options(), args);
        Thread.sleep(delay.toMillis());
        kill();
    }

    private List<String> options() {
        List<String> options = new ArrayList<>(jvmOptions);
        options.add(Files.exists(classArchive) ? "-XX:SharedArchiveFile=" + classArchive
                : "-XX:ArchiveClassesAtExit=" + classArchive);
        return options;
    }

    boolean running() {
        return process != null && process.process().isAlive();
    }

    /** How long the last start took until Probe answered ready. */
    Duration lastStart() {
        return lastStart;
    }

    /** The channel to the driver now running: a new one after each start. */
    ManagedChannel channel() {
        return channel;
    }

    ControllerGrpc.ControllerBlockingStub controller() {
        return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }

    ControllerGrpc.ControllerFutureStub controllerAsync() {
        return ControllerGrpc.newFutureStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }

    NodeGrpc.NodeBlockingStub node() {
        return NodeGrpc.newBlockingStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }

    NodeGrpc.NodeFutureStub nodeAsync() {
        return NodeGrpc.newFutureStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }

    /** SIGTERM, as a rolling update sends it, and the exit it leads to. */
    void stop() throws IOException, InterruptedException {
        channel.shutdownNow();
        process.process().destroy();
        assertThat(process.waitFor(Duration.ofSeconds(60))).as("exit code after SIGTERM").isZero();
    }

    /**
     * SIGKILL to the driver and, at once, to every process it started; returns the command lines
     * of the lvm processes that were running at that moment (empty: the kill landed between them).
     */
    List<String> kill() throws InterruptedException {
        Process jvm = process.process();
        List<ProcessHandle> children = jvm.descendants().toList();
        List<String> lvm = children.stream().map(KillableHearth::lvmCommand).filter(c -> !c.isEmpty()).toList();
        jvm.destroyForcibly();
        children.forEach(ProcessHandle::destroyForcibly);
        assertThat(jvm.waitFor(20, TimeUnit.SECONDS)).as("the killed driver exits").isTrue();
        for (ProcessHandle child : children) {
            assertThat(child.onExit().completeOnTimeout(null, 20, TimeUnit.SECONDS).join())
                    .as("killed: %s", child.info()).isNotNull();
        }
        channel.shutdownNow();
        return lvm;
    }

    /** One try of a call through the driver: its answer, or a refusal as a StatusRuntimeException. */
    @FunctionalInterface
    interface Attempt<T> {
        T make() throws Exception;
    }

    /**
     * The call again, every {@code pause}, until it succeeds, as a sidecar retries it; noting each
     * refusal (its code and the last 200 characters of its description). Fails the test after 60 s,
     * or after the same refusal ten times in a row.
     */
    static <T> T retry(String what, Attempt<T> call, Duration pause, Map<String, Integer> refusals)
            throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        String last = "";
        int same = 0;
        while (true) {
            try {
                return call.make();
            } catch (StatusRuntimeException e) {
                String description = String.valueOf(e.getStatus().getDescription());
                String refusal = e.getStatus().getCode() + " \""
                        + description.substring(Math.max(0, description.length() - 200)) + "\"";
                refusals.merge(refusal, 1, Integer::sum);
                same = refusal.equals(last) ? same + 1 : 1;
                last = refusal;
                assertThat(System.nanoTime() < deadline && same < 10)
                        .as("%s succeeds when retried; refused: %s", what, refusals).isTrue();
                Thread.sleep(pause);
            }
        }
    }

    /** The programs the driver is running now (mkfs.ext4, e2fsck...), by their paths. */
    List<String> tools() {
        return process.process().descendants().map(p -> p.info().command().orElse("?")).toList();
    }

    /** Waits until the driver runs lvm {@code verb} (e.g. "lvextend"); false if it has not within {@code timeout}. */
    boolean awaitLvm(String verb, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (process.process().descendants().map(KillableHearth::lvmCommand).anyMatch(c -> c.startsWith(verb))) {
                return true;
            }
            Thread.sleep(2);
        }
        return false;
    }

    /** "lvcreate -s", "lvremove"...: what an lvm process was doing; "" for any other process. */
    private static String lvmCommand(ProcessHandle process) {
        ProcessHandle.Info info = process.info();
        String[] args = info.arguments().orElse(new String[0]);
        if (!info.command().orElse("").endsWith("/lvm") || args.length == 0) {
            return "";
        }
        return args[0] + (List.of(args).contains("-s") ? " -s" : "");
    }

    String stderr() throws IOException {
        return process == null ? "" : process.stderr();
    }

    @Override
    public void close() throws InterruptedException {
        if (channel != null) {
            channel.shutdownNow();
        }
        if (process != null) {
            process.close();
        }
    }
}
