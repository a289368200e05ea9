package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.google.common.util.concurrent.ListenableFuture;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetPluginInfoResponse;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.NodeGetInfoRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.linux.testing.RequiresTools;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code hearth serve} as the DaemonSet runs it: a child process on a unix socket. */
class ServeIT {

    /** Every flag of {@code hearth serve}: an operator reads about each in --help. */
    private static final List<String> FLAGS = List.of("--endpoint", "--node-id", "--driver-name", "--state-dir",
            "--pool", "--default-pool", "--max-volumes", "--shutdown-grace", "--metrics-address", "--log-level", "--help",
            "--version");

    private static final Duration START = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    private final List<AutoCloseable> resources = new ArrayList<>();

    @AfterEach
    void cleanUp() throws Exception {
        for (AutoCloseable resource : resources.reversed()) {
            resource.close();
        }
    }

    private HearthProcess hearth(String... args) throws IOException {
        HearthProcess process = HearthProcess.start(dir.resolve("logs"), args);
        resources.add(process);
        return process;
    }

    private Path socket() {
        return dir.resolve("csi.sock");
    }

    /** The flags of a daemon with a 1 GiB file pool in the temporary directory. */
    private List<String> serveArgs(String... more) {
        List<String> args = new ArrayList<>(List.of("serve", "--endpoint", "unix://" + socket(),
                "--node-id", "node-it", "--state-dir", dir.resolve("state").toString(),
                "--pool", "name=default,dir=" + dir.resolve("pool") + ",create=true,capacity=1Gi",
                "--metrics-address", "127.0.0.1:0"));
        args.addAll(List.of(more));
        return args;
    }

    private ManagedChannel channel() {
        ManagedChannel channel = Channels.channelTo(Endpoint.parse("unix://" + socket()));
        resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
        return channel;
    }

    private static boolean isSocket(Path file) throws IOException {
        return Files.exists(file, LinkOption.NOFOLLOW_LINKS)
                && (((Integer) Files.getAttribute(file, "unix:mode", LinkOption.NOFOLLOW_LINKS)) & 0170000) == 0140000;
    }

    /** Polls; fails with the daemon's log if it exits or {@code timeout} passes first. */
    private static void waitUntil(HearthProcess hearth, Duration timeout, String what, Condition condition)
            throws InterruptedException, IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.holds()) {
            if (!hearth.process().isAlive()) {
                throw new AssertionError("hearth exited (" + hearth.process().exitValue() + ") before " + what
                        + "; stderr:\n" + hearth.stderr());
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not " + what + " within " + timeout + "; stderr:\n" + hearth.stderr());
            }
            Thread.sleep(20);
        }
    }

    @FunctionalInterface
    private interface Condition {
        boolean holds() throws IOException;
    }

    private void waitUntilServing(HearthProcess hearth) throws InterruptedException, IOException {
        waitUntil(hearth, START, "serving", () -> hearth.stderr().contains("serving unix://" + socket()));
    }

    // The command line

    @Test
    void helpExitsZeroAndExplainsEveryFlag() throws Exception {
        HearthProcess help = hearth("serve", "--help");

        assertThat(help.waitFor(START)).isZero();
        String text = help.stdout();
        for (String flag : FLAGS) {
            assertThat(description(text, flag)).as("the help text of %s in:%n%s", flag, text)
                    .matches("(?s)\\S+(\\s+\\S+){3,}.*");
        }
        assertThat(description(text, "--endpoint")).contains("unix://");
        assertThat(description(text, "--node-id")).contains("NODE_ID");
        assertThat(description(text, "--shutdown-grace")).contains("SIGTERM");
    }

    /** The words after the flag (and its parameter label) up to the next flag's line. */
    private static String description(String help, String flag) {
        Matcher start = Pattern.compile("(?m)^\\s+(?:-\\w, )?" + Pattern.quote(flag) + "(?:=\\S+)?(.*)$").matcher(help);
        assertThat(start.find()).as("%s is listed in:%n%s", flag, help).isTrue();
        StringBuilder text = new StringBuilder(start.group(1).strip());
        for (String line : help.substring(start.end()).lines().skip(1).toList()) {
            if (line.stripLeading().startsWith("-") || line.isBlank()) {
                break;
            }
            text.append(' ').append(line.strip());
        }
        return text.toString().strip();
    }

    @Test
    void serveWithoutNodeIdExitsNonZeroAndSaysWhatIsMissing() throws Exception {
        HearthProcess serve = hearth("serve", "--endpoint", "unix://" + socket(),
                "--state-dir", dir.resolve("state").toString());

        assertThat(serve.waitFor(START)).isEqualTo(2);
        assertThat(serve.stderr()).contains("--node-id").contains("NODE_ID").doesNotContain("Exception");
        assertThat(socket()).doesNotExist();
        assertThat(dir.resolve("state")).doesNotExist();
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "--log-level|loud|loud",
            "--max-volumes|-5|-5",
            "--shutdown-grace|-5s|-5s",
            "--shutdown-grace|soon|soon",
            "--default-pool|nope|nope",
            "--pool|name=default,capacity=lots|lots",
            "--endpoint|http://localhost:1|http://localhost:1"})
    void serveWithABadFlagValueExitsWithAUsageErrorNamingTheValue(String flag, String value, String mentioned)
            throws Exception {
        List<String> args = new ArrayList<>(List.of("serve", "--node-id", "node-it",
                "--state-dir", dir.resolve("state").toString()));
        if (!flag.equals("--endpoint")) {
            args.addAll(List.of("--endpoint", "unix://" + socket()));
        }
        args.add(flag + "=" + value);

        HearthProcess serve = hearth(args.toArray(String[]::new));

        assertThat(serve.waitFor(START)).isEqualTo(2);
        assertThat(serve.stderr()).contains(mentioned).contains("Usage:").doesNotContain("Exception");
        assertThat(socket()).doesNotExist();
    }

    // Serving

    /**
     * A client that opens connections until the daemon has no file descriptor left for the next
     * one does not stop it serving: once they close, it answers again. (grpc-okhttp's server ends
     * its accept loop on the first error accept throws; GrpcServer's sockets retry instead.)
     */
    @Test
    void runningOutOfFileDescriptorsDoesNotStopServing() throws Exception {
        HearthProcess serve = HearthProcess.start(List.of("prlimit", "--nofile=256:256", "--"), dir.resolve("logs"),
                List.of(), serveArgs().toArray(String[]::new));
        resources.add(serve);
        waitUntilServing(serve);

        List<SocketChannel> held = new ArrayList<>();
        try {
            for (int i = 0; i < 1000 && !serve.stderr().contains("cannot accept a connection"); i++) {
                SocketChannel connection = SocketChannel.open(StandardProtocolFamily.UNIX);
                held.add(connection);
                connection.configureBlocking(false);
                // A full backlog refuses a non-blocking connect (EAGAIN) rather than wait.
                if (!tryConnect(connection)) {
                    Thread.sleep(50);
                }
            }
            waitUntil(serve, START, "out of file descriptors", () -> serve.stderr().contains("cannot accept a connection"));
        } finally {
            for (SocketChannel connection : held) {
                connection.close();
            }
        }

        ManagedChannel channel = channel();
        GetPluginInfoResponse info = IdentityGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                .getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
        assertThat(info.getName()).isEqualTo("csi.hearth.dev");
        assertThat(serve.process().isAlive()).isTrue();
    }

    private boolean tryConnect(SocketChannel connection) throws IOException {
        try {
            return connection.connect(UnixDomainSocketAddress.of(socket()));
        } catch (IOException e) {
            return false;
        }
    }

    @Test
    void serveReplacesAStaleSocketServesWithMode0660AndStopsCleanlyOnSigterm() throws Exception {
        try (ServerSocketChannel stale = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            stale.bind(UnixDomainSocketAddress.of(socket()));
        }
        assertThat(isSocket(socket())).as("a stale socket is left behind").isTrue();

        HearthProcess serve = hearth(serveArgs().toArray(String[]::new));
        waitUntilServing(serve);

        // bind(2) fails with EADDRINUSE on an existing file: serving there means it was replaced.
        assertThat(serve.stderr()).contains("removing stale socket " + socket());
        assertThat(isSocket(socket())).isTrue();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket(), LinkOption.NOFOLLOW_LINKS)))
                .isEqualTo("rw-rw----");
        ManagedChannel channel = channel();
        GetPluginInfoResponse info = IdentityGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                .getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
        assertThat(info.getName()).isEqualTo("csi.hearth.dev");
        assertThat(info.getVendorVersion()).isNotBlank();
        assertThat(NodeGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                .nodeGetInfo(NodeGetInfoRequest.getDefaultInstance()).getNodeId()).isEqualTo("node-it");

        serve.process().destroy();

        assertThat(serve.waitFor(Duration.ofSeconds(30))).isZero();
        assertThat(socket()).doesNotExist();
        assertThat(serve.stderr()).contains("received SIGTERM").contains("stopped");
    }

    @Test
    void serveRefusesToStartWhileAnotherProcessServesTheSocket() throws Exception {
        HearthProcess first = hearth(serveArgs().toArray(String[]::new));
        waitUntilServing(first);

        HearthProcess second = hearth(serveArgs().toArray(String[]::new));

        assertThat(second.waitFor(START)).isNotZero();
        // Same state directory: the second driver stops at the pool that the first one owns.
        assertThat(second.stderr()).contains("cannot start: pool 'default'", "in use by another hearth driver")
                .doesNotContain("\tat ");
        assertThat(isSocket(socket())).as("the first one's socket is left alone").isTrue();
        IdentityGrpc.newBlockingStub(channel()).withDeadlineAfter(30, TimeUnit.SECONDS)
                .getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
    }

    @Test
    void serveExposesPrometheusMetricsAndAReadinessCheck() throws Exception {
        HearthProcess serve = hearth(serveArgs().toArray(String[]::new));
        waitUntilServing(serve);
        java.util.regex.Matcher address = java.util.regex.Pattern.compile("metrics on (127\\.0\\.0\\.1:\\d+)")
                .matcher(serve.stderr());
        assertThat(address.find()).as("the serving line names the metrics address").isTrue();
        IdentityGrpc.newBlockingStub(channel()).withDeadlineAfter(30, TimeUnit.SECONDS)
                .getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
        var http = java.net.http.HttpClient.newHttpClient();

        var metrics = http.send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create("http://" + address.group(1) + "/metrics")).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        var health = http.send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create("http://" + address.group(1) + "/healthz")).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());

        assertThat(metrics.statusCode()).isEqualTo(200);
        assertThat(metrics.body())
                .contains("hearth_rpc_requests_total{code=\"OK\",method=\"GetPluginInfo\",node=\"node-it\"} 1.0")
                .contains("hearth_pool_capacity_bytes{kind=\"file\",node=\"node-it\",pool=\"default\"} 1.073741824E9")
                .contains("hearth_pool_healthy{kind=\"file\",node=\"node-it\",pool=\"default\"} 1.0");
        assertThat(health.statusCode()).isEqualTo(200);
    }

    @Test
    void serveRefusesToReplaceAFileThatIsNotASocket() throws Exception {
        Files.writeString(socket(), "someone's data");

        HearthProcess serve = hearth(serveArgs().toArray(String[]::new));

        assertThat(serve.waitFor(START)).isNotZero();
        assertThat(serve.stderr()).contains(socket() + " exists and is not a socket").doesNotContain("\tat ");
        assertThat(socket()).hasContent("someone's data");
    }

    /**
     * A call held inside the daemon (its volume's metadata is a named pipe for the moment) while
     * SIGTERM arrives: the daemon stops listening at once, yet answers the call, then exits 0.
     */
    @Test
    @RequiresTools("mkfifo")
    void sigtermLetsTheCallInFlightFinishThenExitsZeroAndRemovesTheSocket() throws Exception {
        HearthProcess serve = hearth(serveArgs("--shutdown-grace", "30s").toArray(String[]::new));
        waitUntilServing(serve);
        ManagedChannel channel = channel();
        String id = createVolume(channel, "pvc-in-flight");

        ListenableFuture<ValidateVolumeCapabilitiesResponse> inFlight;
        try (FifoGate gate = FifoGate.replace(dir.resolve("pool").resolve(id + ".meta"))) {
            inFlight = validate(channel, id);
            gate.awaitReader(Duration.ofSeconds(30));

            serve.process().destroy();
            waitUntil(serve, Duration.ofSeconds(10), "listening stopped", () -> !Files.exists(socket()));
            Thread.sleep(200);
            assertThat(serve.process().isAlive()).as("waiting for the call in flight").isTrue();
            assertThat(inFlight).isNotDone();

            gate.release();
        }
        long released = System.nanoTime();

        assertThat(inFlight.get(30, TimeUnit.SECONDS).hasConfirmed()).isTrue();
        assertThat(serve.waitFor(Duration.ofSeconds(30))).isZero();
        assertThat(Duration.ofNanos(System.nanoTime() - released)).isLessThan(Duration.ofSeconds(10));
        assertThat(socket()).doesNotExist();
        assertThat(serve.stderr()).contains("letting running calls finish");
    }

    /** A call that outlasts the grace is cancelled; the daemon still stops, and exits 0. */
    @Test
    @RequiresTools("mkfifo")
    void sigtermStopsACallThatOutlastsTheGraceAndStillExitsZero() throws Exception {
        HearthProcess serve = hearth(serveArgs("--shutdown-grace", "1s").toArray(String[]::new));
        waitUntilServing(serve);
        ManagedChannel channel = channel();
        String id = createVolume(channel, "pvc-stuck");

        try (FifoGate gate = FifoGate.replace(dir.resolve("pool").resolve(id + ".meta"))) {
            ListenableFuture<ValidateVolumeCapabilitiesResponse> stuck = validate(channel, id);
            gate.awaitReader(Duration.ofSeconds(30));
            long signalled = System.nanoTime();

            serve.process().destroy();

            assertThat(serve.waitFor(Duration.ofSeconds(20))).isZero();
            assertThat(Duration.ofNanos(System.nanoTime() - signalled)).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
            Throwable failure = catchThrowable(() -> stuck.get(10, TimeUnit.SECONDS));
            assertThat(failure).isInstanceOf(ExecutionException.class).cause().isInstanceOf(StatusRuntimeException.class);
            assertThat(Status.fromThrowable(failure.getCause()).getCode())
                    .isIn(Status.Code.CANCELLED, Status.Code.UNAVAILABLE);
            assertThat(socket()).doesNotExist();
            assertThat(serve.stderr()).contains("calls still running after");
        }
    }

    private static String createVolume(ManagedChannel channel, String name) {
        return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                .createVolume(CreateVolumeRequest.newBuilder().setName(name)
                        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(MIB))
                        .addVolumeCapabilities(mount("ext4")).build())
                .getVolume().getVolumeId();
    }

    private static ListenableFuture<ValidateVolumeCapabilitiesResponse> validate(ManagedChannel channel, String id) {
        return ControllerGrpc.newFutureStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS)
                .validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
                        .setVolumeId(id).addVolumeCapabilities(mount("ext4")).build());
    }
}
