package dev.hearth.driver.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.common.util.concurrent.ListenableFuture;
import dev.hearth.csi.v1.GetPluginCapabilitiesRequest;
import dev.hearth.csi.v1.GetPluginCapabilitiesResponse;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.ErrorMapping;
import dev.hearth.driver.server.TestServer;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class RpcMetricsTest {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final RpcMetrics metrics = new RpcMetrics(registry);
    private final TestIdentity identity = new TestIdentity();
    private TestServer grpc;
    private IdentityGrpc.IdentityBlockingStub stub;

    @BeforeEach
    void serve() throws Exception {
        grpc = TestServer.start(new Endpoint.Tcp("127.0.0.1", 0), List.of(metrics, new ErrorMapping()),
                identity);
        stub = IdentityGrpc.newBlockingStub(grpc.channel()).withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void close() throws Exception {
        grpc.close();
        registry.close();
    }

    @Test
    void countsFinishedCallsByMethodAndTheCodeTheClientGot() {
        callThreeOkAndOneNotFound();

        assertThat(registry.scrape().lines())
                .contains("# TYPE hearth_rpc_requests_total counter",
                        "hearth_rpc_requests_total{code=\"OK\",method=\"GetPluginInfo\"} 3.0",
                        "hearth_rpc_requests_total{code=\"NOT_FOUND\",method=\"Probe\"} 1.0");
    }

    @Test
    void preparedMethodsShowAtZeroAndTheirCallsCountOnTheSameSeries() {
        metrics.prepare(List.of("GetPluginInfo", "Probe"));

        assertThat(registry.scrape().lines())
                .contains("hearth_rpc_requests_total{code=\"OK\",method=\"GetPluginInfo\"} 0.0",
                        "hearth_rpc_requests_total{code=\"OK\",method=\"Probe\"} 0.0",
                        "hearth_rpc_duration_seconds_count{code=\"OK\",method=\"Probe\"} 0")
                .noneMatch(l -> l.contains("NOT_FOUND"));

        callThreeOkAndOneNotFound();

        List<String> lines = registry.scrape().lines().toList();
        assertThat(lines).contains("hearth_rpc_requests_total{code=\"OK\",method=\"GetPluginInfo\"} 3.0",
                "hearth_rpc_requests_total{code=\"OK\",method=\"Probe\"} 0.0",
                "hearth_rpc_requests_total{code=\"NOT_FOUND\",method=\"Probe\"} 1.0",
                "hearth_rpc_duration_seconds_count{code=\"OK\",method=\"GetPluginInfo\"} 3");
        assertThat(lines).filteredOn(l -> l.startsWith("hearth_rpc_requests_total{code=\"OK\",method=\"GetPluginInfo\"}"))
                .hasSize(1);
    }

    @Test
    void timesCallsAsAPrometheusHistogramWithStorageSizedBuckets() {
        callThreeOkAndOneNotFound();

        List<String> lines = registry.scrape().lines().toList();
        String series = "hearth_rpc_duration_seconds_bucket{code=\"OK\",method=\"GetPluginInfo\",le=\"";
        assertThat(lines).contains("# TYPE hearth_rpc_duration_seconds histogram",
                series + "60.0\"} 3", series + "+Inf\"} 3",
                "hearth_rpc_duration_seconds_count{code=\"OK\",method=\"GetPluginInfo\"} 3",
                "hearth_rpc_duration_seconds_count{code=\"NOT_FOUND\",method=\"Probe\"} 1");
        assertThat(lines).anyMatch(l -> l.startsWith("hearth_rpc_duration_seconds_sum{code=\"OK\",method=\"GetPluginInfo\"} "));
        assertThat(lines.stream().filter(l -> l.startsWith(series)).map(l -> l.substring(series.length(), l.indexOf("\"}"))))
                .containsExactly("0.001", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0",
                        "10.0", "30.0", "60.0", "+Inf");
    }

    @Test
    void registersOneCounterAndOneTimerPerMethodAndCode() {
        for (int i = 0; i < 20; i++) {
            stub.getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
        }

        assertThat(registry.find("hearth.rpc.requests").counters()).hasSize(1);
        assertThat(registry.find("hearth.rpc.duration").timers()).singleElement()
                .satisfies(timer -> assertThat(timer.count()).isEqualTo(20));
    }

    @Test
    void callTheClientGaveUpOnCountsAsCancelledThoughItsHandlerAnsweredLater() throws Exception {
        ListenableFuture<GetPluginCapabilitiesResponse> answer = IdentityGrpc.newFutureStub(grpc.channel())
                .getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance());
        assertThat(identity.entered.await(10, TimeUnit.SECONDS)).isTrue();

        answer.cancel(true);
        // The handler answers on its own thread after the client has gone: wait for it.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (registry.find("hearth.rpc.requests").counters().stream().mapToDouble(c -> c.count()).sum() < 1
                && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }

        assertThat(registry.scrape().lines())
                .contains("hearth_rpc_requests_total{code=\"CANCELLED\",method=\"GetPluginCapabilities\"} 1.0")
                .noneMatch(l -> l.startsWith("hearth_rpc_requests_total{code=\"OK\""));
    }

    private void callThreeOkAndOneNotFound() {
        for (int i = 0; i < 3; i++) {
            stub.getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
        }
        assertThatThrownBy(() -> stub.probe(ProbeRequest.getDefaultInstance()))
                .isInstanceOfSatisfying(StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
    }
}
