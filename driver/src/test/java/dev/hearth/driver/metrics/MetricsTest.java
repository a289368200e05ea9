package dev.hearth.driver.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;
import static org.assertj.core.api.Assertions.within;

import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.driver.server.CapturedLog;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.ErrorMapping;
import dev.hearth.driver.server.RequestLogging;
import dev.hearth.driver.server.TestServer;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.file.FilePoolConfig;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The facade wired as the driver wires it: calls through gRPC, pools on disk, answers over HTTP. */
class MetricsTest {

    /** A sample line without labels or with the node's only: {@code process_open_fds{node="node-a"} 42.0}. */
    private static final Pattern SAMPLE = Pattern.compile("^([a-z_]+)(?:\\{node=\"node-a\"})? (\\S+)$");

    @TempDir
    Path dir;

    private FilePool pool;
    private Metrics metrics;
    private TestServer grpc;
    private MetricsServer http;

    @BeforeEach
    void start() throws Exception {
        pool = FilePool.open(new FilePoolConfig("default", dir.resolve("default"), 64L << 20));
        metrics = Metrics.create("1.2.3", "node-a", List.of(pool), p -> 0, () -> Optional.ofNullable(pool.problem()));
        grpc = TestServer.start(new Endpoint.Tcp("127.0.0.1", 0),
                List.of(new RequestLogging(), metrics.interceptor(), new ErrorMapping()), new TestIdentity());
        http = metrics.serve(MetricsAddress.parse("127.0.0.1:0"));
    }

    @AfterEach
    void stop() throws Exception {
        http.close();
        grpc.close();
        metrics.close();
        pool.close();
    }

    @Test
    void scrapeShowsCallsPoolsAndTheJvm() throws Exception {
        IdentityGrpc.IdentityBlockingStub stub =
                IdentityGrpc.newBlockingStub(grpc.channel()).withDeadlineAfter(10, TimeUnit.SECONDS);
        for (int i = 0; i < 3; i++) {
            stub.getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
        }
        assertThatThrownBy(() -> stub.probe(ProbeRequest.getDefaultInstance())).isInstanceOf(StatusRuntimeException.class);
        pool.create(new VolumeRequest("v1", new CapacityRange(8L << 20, 0), Map.of()));

        HttpResponse<String> response = TestHttp.get(http.port(), "/metrics");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body().lines()).contains(
                "hearth_rpc_requests_total{code=\"OK\",method=\"GetPluginInfo\",node=\"node-a\"} 3.0",
                "hearth_rpc_requests_total{code=\"NOT_FOUND\",method=\"Probe\",node=\"node-a\"} 1.0",
                "hearth_rpc_duration_seconds_bucket{code=\"OK\",method=\"GetPluginInfo\",node=\"node-a\",le=\"+Inf\"} 3",
                "hearth_pool_healthy{kind=\"file\",node=\"node-a\",pool=\"default\"} 1.0",
                "hearth_pool_allocated_bytes{kind=\"file\",node=\"node-a\",pool=\"default\"} " + (double) (8L << 20),
                "hearth_pool_volumes{kind=\"file\",node=\"node-a\",pool=\"default\"} 1.0",
                "hearth_ready{node=\"node-a\"} 1.0",
                "hearth_build_info{java_version=\"" + Runtime.version() + "\",node=\"node-a\",version=\"1.2.3\"} 1");
        assertThat(response.body().lines())
                .anyMatch(l -> l.startsWith("jvm_memory_used_bytes{"));
    }

    /** The names every Prometheus client uses, so that stock process dashboards and alerts work. */
    @Test
    void scrapeHasTheStandardProcessMetricsWithTheirRealValues() throws Exception {
        Map<String, Double> scraped = samples(TestHttp.get(http.port(), "/metrics").body());
        long openNow;
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            openNow = fds.count();
        }
        double residentNow = ProcessMetrics.statusBytes("VmRSS:");

        assertThat(scraped).containsKeys("process_cpu_seconds_total", "process_open_fds", "process_max_fds",
                "process_resident_memory_bytes", "process_virtual_memory_bytes", "process_start_time_seconds");
        assertThat(scraped.get("process_cpu_seconds_total")).isPositive();
        assertThat(scraped.get("process_open_fds")).isCloseTo(openNow, offset(20.0));
        assertThat(scraped.get("process_max_fds")).isEqualTo((double) maxOpenFiles());
        assertThat(scraped.get("process_resident_memory_bytes"))
                .isGreaterThan(16.0 * (1 << 20))
                .isCloseTo(residentNow, within(0.25 * residentNow));
        assertThat(scraped.get("process_virtual_memory_bytes")).isGreaterThan(scraped.get("process_resident_memory_bytes"));
        assertThat(scraped.get("process_start_time_seconds"))
                .isBetween(System.currentTimeMillis() / 1000.0 - 3600, System.currentTimeMillis() / 1000.0);
    }

    /** The warm-up binds the process and JVM meters (prepare) before any scrape has. */
    @Test
    void prepareBindsTheRuntimeMetersOfAServedDriverAndAScrapeFindsThem() throws Exception {
        assertThat(metrics.runtimeBound()).isFalse();

        metrics.prepare();

        assertThat(metrics.runtimeBound()).isTrue();
        assertThat(samples(TestHttp.get(http.port(), "/metrics").body())).containsKeys("process_cpu_seconds_total",
                "jvm_threads_live_threads");
    }

    /** Without the HTTP side nobody reads them: a driver with --metrics-address= never binds them. */
    @Test
    void aDriverThatServesNoMetricsNeverBindsTheRuntimeMeters() {
        try (Metrics unserved = Metrics.create("1.2.3", "node-a", List.of(pool), p -> 0, Optional::empty)) {
            unserved.prepare();

            assertThat(unserved.runtimeBound()).isFalse();
        }
    }

    @Test
    void readyGaugeFollowsTheReadinessCheck() throws Exception {
        deleteRecursively(dir.resolve("default"));

        assertThat(TestHttp.get(http.port(), "/metrics").body().lines())
                .contains("hearth_ready{node=\"node-a\"} 0.0",
                        "hearth_pool_healthy{kind=\"file\",node=\"node-a\",pool=\"default\"} 0.0");
    }

    @Test
    void healthzTurningTo503IsLoggedOnceWithTheReasonAndItsReturnOnce() throws Exception {
        try (CapturedLog log = CapturedLog.of(Readiness.class, Level.INFO)) {
            TestHttp.get(http.port(), "/healthz");
            deleteRecursively(dir.resolve("default"));
            for (int i = 0; i < 3; i++) {
                assertThat(TestHttp.get(http.port(), "/healthz").statusCode()).isEqualTo(503);
                TestHttp.get(http.port(), "/metrics");
            }
            Files.createDirectory(dir.resolve("default"));
            for (int i = 0; i < 3; i++) {
                assertThat(TestHttp.get(http.port(), "/healthz").statusCode()).isEqualTo(200);
            }

            String reason = "pool 'default': directory " + dir.resolve("default") + " is missing or not writable";
            assertThat(log.records()).satisfiesExactly(
                    r -> {
                        assertThat(r.getLevel()).isEqualTo(Level.WARNING);
                        assertThat(r.getMessage()).isEqualTo("not ready: " + reason);
                    },
                    r -> {
                        assertThat(r.getLevel()).isEqualTo(Level.INFO);
                        assertThat(r.getMessage()).isEqualTo("ready again; it was not ready: " + reason);
                    });
        }
    }

    @Test
    void healthzFollowsTheReadinessCheck() throws Exception {
        assertThat(TestHttp.get(http.port(), "/healthz").statusCode()).isEqualTo(200);

        deleteRecursively(dir.resolve("default"));

        HttpResponse<String> response = TestHttp.get(http.port(), "/healthz");
        assertThat(response.statusCode()).isEqualTo(503);
        assertThat(response.body()).isEqualTo(pool.problem() + "\n").startsWith("pool 'default': ");
    }

    /** Each sample of a scrape without labels, or with the node's only, by name. */
    private static Map<String, Double> samples(String scrape) {
        Map<String, Double> samples = new HashMap<>();
        for (String line : scrape.lines().toList()) {
            Matcher m = SAMPLE.matcher(line);
            if (m.matches()) {
                samples.put(m.group(1), Double.parseDouble(m.group(2)));
            }
        }
        return samples;
    }

    /** The soft limit of open files, as /proc/self/limits states it. */
    private static long maxOpenFiles() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
            if (line.startsWith("Max open files")) {
                return Long.parseLong(line.substring("Max open files".length()).strip().split("\\s+")[0]);
            }
        }
        throw new AssertionError("no Max open files in /proc/self/limits");
    }

    private static void deleteRecursively(Path root) throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
