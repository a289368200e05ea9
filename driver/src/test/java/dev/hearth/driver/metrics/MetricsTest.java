package dev.hearth.driver.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.ErrorMapping;
import dev.hearth.driver.server.RequestLogging;
import dev.hearth.driver.server.TestServer;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.file.FilePoolConfig;
import io.grpc.StatusRuntimeException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The facade wired as the driver wires it: calls through gRPC, pools on disk, answers over HTTP. */
class MetricsTest {

    @TempDir
    Path dir;

    private FilePool pool;
    private Metrics metrics;
    private TestServer grpc;
    private MetricsServer http;

    @BeforeEach
    void start() throws Exception {
        pool = FilePool.open(new FilePoolConfig("default", dir.resolve("default"), 64L << 20));
        metrics = Metrics.create(List.of(pool), p -> 0);
        grpc = TestServer.start(new Endpoint.Tcp("127.0.0.1", 0),
                List.of(new RequestLogging(), metrics.interceptor(), new ErrorMapping()), new TestIdentity());
        http = metrics.serve(MetricsAddress.parse("127.0.0.1:0"),
                () -> Optional.ofNullable(pool.problem()));
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
                "hearth_rpc_requests_total{code=\"OK\",method=\"GetPluginInfo\"} 3.0",
                "hearth_rpc_requests_total{code=\"NOT_FOUND\",method=\"Probe\"} 1.0",
                "hearth_rpc_duration_seconds_bucket{code=\"OK\",method=\"GetPluginInfo\",le=\"+Inf\"} 3",
                "hearth_pool_allocated_bytes{kind=\"file\",pool=\"default\"} " + (double) (8L << 20),
                "hearth_pool_volumes{kind=\"file\",pool=\"default\"} 1.0");
        assertThat(response.body().lines())
                .anyMatch(l -> l.startsWith("jvm_memory_used_bytes{"))
                .anyMatch(l -> l.startsWith("process_files_open_files "));
    }

    @Test
    void healthzFollowsTheReadinessCheck() throws Exception {
        assertThat(TestHttp.get(http.port(), "/healthz").statusCode()).isEqualTo(200);

        try (Stream<Path> paths = Files.walk(dir.resolve("default"))) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }

        HttpResponse<String> response = TestHttp.get(http.port(), "/healthz");
        assertThat(response.statusCode()).isEqualTo(503);
        assertThat(response.body()).isEqualTo(pool.problem() + "\n").startsWith("pool 'default': ");
    }
}
