package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.linux.FileSystems;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.Quantity;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code hearth serve} at start, as a process: which pool directories it makes and which it
 * refuses, what it says when it cannot start, what its start line tells, and how it reports a
 * machine it cannot serve volumes on (run for real as an unprivileged user).
 */
class ServeStartIT {

    private static final Duration START = Duration.ofSeconds(30);
    private static final String NOBODY = "65534";

    @TempDir
    Path dir;

    private final List<AutoCloseable> resources = new ArrayList<>();

    @AfterEach
    void cleanUp() throws Exception {
        for (AutoCloseable resource : resources.reversed()) {
            resource.close();
        }
    }

    private HearthProcess serve(String... poolFlags) throws IOException {
        return serve(List.of(), dir, poolFlags);
    }

    /** {@code hearth serve} with its socket and state in {@code home}, run through {@code prefix}. */
    private HearthProcess serve(List<String> prefix, Path home, String... poolFlags) throws IOException {
        List<String> args = new ArrayList<>(List.of("serve", "--endpoint", "unix://" + home.resolve("csi.sock"),
                "--node-id", "node-it", "--state-dir", home.resolve("state").toString(),
                "--metrics-address", "127.0.0.1:0"));
        for (String pool : poolFlags) {
            args.addAll(List.of("--pool", pool));
        }
        HearthProcess process = HearthProcess.start(prefix, dir.resolve("logs"), List.of(), args.toArray(String[]::new));
        resources.add(process);
        return process;
    }

    private static void waitUntilServing(HearthProcess hearth) throws InterruptedException, IOException {
        long deadline = System.nanoTime() + START.toNanos();
        while (!hearth.stderr().contains(" serving unix://")) {
            if (!hearth.process().isAlive() || System.nanoTime() > deadline) {
                throw new AssertionError("not serving; stderr:\n" + hearth.stderr());
            }
            Thread.sleep(20);
        }
    }

    private static void assertCannotStart(HearthProcess serve, String... said) throws Exception {
        assertThat(serve.waitFor(START)).as("exit code; stderr:%n%s", serve.stderr()).isEqualTo(1);
        assertThat(serve.stderr()).contains("ERROR cannot start: ").contains(said).doesNotContain("\tat ")
                .doesNotContain("Exception");
    }

    // Pool directories

    @Test
    void aPoolDirectoryThatIsAFileIsRefusedSayingSo() throws Exception {
        Path file = Files.writeString(dir.resolve("pool"), "not a directory");

        assertCannotStart(serve("name=fast,dir=" + file),
                "pool 'fast': " + file + " is not a directory but a regular file");
        assertThat(file).hasContent("not a directory");
    }

    /** A typo, or a disk not mounted: the pool must not land on whatever filesystem is underneath. */
    @Test
    void aPoolDirectoryThatDoesNotExistIsRefusedUnlessCreateIsTrue() throws Exception {
        Path missing = dir.resolve("mnt/nvme0/hearth");

        assertCannotStart(serve("name=fast,dir=" + missing), "pool 'fast': directory " + missing
                + " does not exist. If it belongs on a disk of its own, is that disk mounted?", "create=true");
        assertThat(dir.resolve("mnt")).doesNotExist();

        HearthProcess created = serve("name=fast,dir=" + missing + ",create=true");
        waitUntilServing(created);
        assertThat(missing).isDirectory();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(missing))).isEqualTo("rwx------");
    }

    @Test
    void poolsInsideTheStateDirectoryAreMadeWithoutBeingAsked() throws Exception {
        HearthProcess serve = serve("name=default", "name=other,dir=" + dir.resolve("state/elsewhere/other"));

        waitUntilServing(serve);

        assertThat(dir.resolve("state/pools/default")).isDirectory();
        assertThat(dir.resolve("state/elsewhere/other")).isDirectory();
    }

    /** Root writes through any mode; a read-only filesystem stops even root, and the reason must show. */
    @Test
    @RequiresRoot
    void aStateDirectoryThatCannotBeWrittenIsRefusedWithTheReason() throws Exception {
        Path readOnly = Files.createDirectories(dir.resolve("ro"));
        Files.createDirectories(readOnly.resolve("state"));
        Mounts.bind(readOnly, readOnly, true);
        resources.add(() -> Mounts.unmount(readOnly));

        HearthProcess serve = serve(List.of(), readOnly);

        assertCannotStart(serve, "state directory is not usable: ", "Read-only file system");
        assertThat(readOnly.resolve("csi.sock")).doesNotExist();
    }

    // The start line

    @Test
    void theStartLineGivesEachPoolsKindDirectoryCapacityReserveAndProvisioning() throws Exception {
        Path a = dir.resolve("a");
        long fsBytes = FileSystems.statvfs(dir).totalBytes();
        long reserved = (fsBytes + 9) / 10;

        HearthProcess serve = serve("name=a,dir=" + a + ",create=true,capacity=1Gi,reserve=0,provisioning=thin",
                "name=b,reserve=10%");
        waitUntilServing(serve);

        Matcher line = Pattern.compile("(?m)^.* INFO  hearth \\S+ serving unix://\\S+ for node node-it; pools: (.*)$")
                .matcher(serve.stderr());
        assertThat(line.find()).as("the start line in:%n%s", serve.stderr()).isTrue();
        assertThat(line.group(1)).startsWith("a (kind file, dir " + a + ", capacity 1.0 GiB, reserve 0, "
                + "provisioning thin); b (kind file, dir " + dir.resolve("state/pools/b") + ", capacity "
                + Quantity.format(fsBytes - reserved) + " = filesystem " + Quantity.format(fsBytes)
                + " less reserve 10% = " + Quantity.format(reserved) + ", provisioning thick); default filesystem ext4;");
    }

    @Test
    void aCapacityTheFilesystemCannotHoldIsWarnedAboutAtStart() throws Exception {
        HearthProcess serve = serve("name=big,dir=" + dir.resolve("big") + ",create=true,capacity=1Pi");
        waitUntilServing(serve);

        assertThat(serve.stderr()).containsPattern("WARN  pool 'big': capacity 1\\.0 PiB is more than its filesystem "
                + "can give: \\S+ is on a filesystem of [\\d.]+ \\S+, which less the reserve kept free \\(15% = [^)]+\\) "
                + "leaves [\\d.]+ \\S+; thick volumes will be refused before the capacity is reached");
    }

    // The machine

    /**
     * Not root, for real: the driver still starts (a container image build trains on it that way)
     * but says at once, on every Probe and on /healthz, that it cannot serve volumes and why.
     */
    @Test
    @RequiresRoot
    @RequiresTools("setpriv")
    void runAsAnUnprivilegedUserServeSaysEverywhereThatItNeedsRoot() throws Exception {
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path home = Files.createDirectories(dir.resolve("nobody"));
        Files.setAttribute(home, "unix:uid", Integer.parseInt(NOBODY));
        List<String> asNobody = List.of("setpriv", "--reuid=" + NOBODY, "--regid=" + NOBODY, "--clear-groups",
                "--inh-caps=-all");

        HearthProcess serve = serve(asNobody, home);
        waitUntilServing(serve);

        assertThat(serve.stderr()).contains("ERROR this node cannot serve volumes until this is fixed: not running "
                + "as root (uid " + NOBODY + ", no CAP_SYS_ADMIN)");
        ManagedChannel channel = Channels.channelTo(Endpoint.parse("unix://" + home.resolve("csi.sock")));
        resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
        Throwable probe = catchThrowable(() -> IdentityGrpc.newBlockingStub(channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS).probe(ProbeRequest.getDefaultInstance()));
        assertThat(Status.fromThrowable(probe).getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(Status.fromThrowable(probe).getDescription()).contains("not running as root")
                .contains("run it as root").contains("cannot open /dev/loop-control: EACCES");
        Matcher port = Pattern.compile("metrics on 127\\.0\\.0\\.1:(\\d+)").matcher(serve.stderr());
        assertThat(port.find()).isTrue();
        HttpResponse<String> health;
        try (HttpClient http = HttpClient.newHttpClient()) {
            health = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port.group(1) + "/healthz"))
                    .build(), HttpResponse.BodyHandlers.ofString());
        }
        assertThat(health.statusCode()).isEqualTo(503);
        assertThat(health.body()).contains("not running as root");

        serve.process().destroy();
        assertThat(serve.waitFor(START)).isZero();
    }
}
