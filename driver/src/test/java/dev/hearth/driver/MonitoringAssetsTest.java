package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.csi.v1.ControllerGetVolumeRequest;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import io.grpc.StatusRuntimeException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Grafana dashboard and the alert rules in deploy/components/monitoring use only metrics that a
 * running driver serves: a renamed metric would leave a panel empty and an alert silent, and no
 * Prometheus complains about a name it has never seen.
 */
class MonitoringAssetsTest {

    /** Series Prometheus makes itself for every target, not scraped from it. */
    private static final Set<String> FROM_PROMETHEUS = Set.of("up");

    @TempDir
    Path dir;

    @Test
    void everyMetricTheDashboardAndTheAlertsUseIsInARunningDriversScrape() throws Exception {
        Set<String> scraped = new TreeSet<>();
        try (TestDriver driver = TestDriver.startServingMetrics(dir)) {
            // One call that works and one that fails, so that the per-call series exist.
            driver.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
            driver.create("pvc-monitoring", 8 * MIB, mount("ext4"));
            assertThatThrownBy(() -> driver.controller().controllerGetVolume(
                    ControllerGetVolumeRequest.newBuilder().setVolumeId("no-such-volume").build()))
                    .isInstanceOf(StatusRuntimeException.class);
            String scrape = get(driver.metricsPort(), "/metrics");
            scrape.lines()
                    .filter(l -> !l.isBlank() && !l.startsWith("#"))
                    .map(l -> l.split("[{ ]", 2)[0])
                    .forEach(scraped::add);
        }
        Map<String, Set<String>> used = new TreeMap<>();
        Path assets = MonitoringAssets.directory();
        MonitoringAssets.ruleExpressions(Files.readString(assets.resolve("prometheusrule.yaml")))
                .forEach((alert, expr) -> MonitoringAssets.metricNames(expr)
                        .forEach(name -> used.computeIfAbsent(name, n -> new TreeSet<>()).add("alert " + alert)));
        for (String query : MonitoringAssets.dashboardQueries(Files.readString(assets.resolve("dashboard.json")))) {
            MonitoringAssets.metricNames(query)
                    .forEach(name -> used.computeIfAbsent(name, n -> new TreeSet<>()).add("dashboard: " + query));
        }

        assertThat(used.keySet()).as("names the dashboard and the rules use")
                .contains("hearth_pool_healthy", "hearth_pool_available_bytes", "hearth_ready", "hearth_rpc_requests_total",
                        "hearth_rpc_duration_seconds_bucket", "hearth_build_info", "process_resident_memory_bytes", "up");
        Map<String, Set<String>> missing = new TreeMap<>(used);
        missing.keySet().removeAll(scraped);
        missing.keySet().removeAll(FROM_PROMETHEUS);
        assertThat(missing).as("metrics used but not served; the driver serves " + scraped).isEmpty();
    }

    /**
     * A started driver's scrape has the call series of a volume's six lifecycle calls, at zero,
     * before any call: the warm-up registers them, so that rate() has a first sample and a first
     * call does not pay. Other methods' series come with their first call.
     */
    @Test
    void theLifecycleCallsSeriesAreThereAtZeroBeforeTheirFirstCall() throws Exception {
        try (TestDriver driver = TestDriver.startServingMetrics(dir)) {
            String stage = "hearth_rpc_requests_total{code=\"OK\",method=\"NodeStageVolume\",node=\"node-a\"} 0.0";
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
            while (!get(driver.metricsPort(), "/metrics").lines().toList().contains(stage)
                    && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(get(driver.metricsPort(), "/metrics").lines()).contains(stage,
                    "hearth_rpc_requests_total{code=\"OK\",method=\"CreateVolume\",node=\"node-a\"} 0.0",
                    "hearth_rpc_requests_total{code=\"OK\",method=\"NodeUnpublishVolume\",node=\"node-a\"} 0.0",
                    "hearth_rpc_duration_seconds_count{code=\"OK\",method=\"DeleteVolume\",node=\"node-a\"} 0")
                    .noneMatch(l -> l.contains("method=\"ControllerPublishVolume\""))
                    .noneMatch(l -> l.contains("method=\"ListSnapshots\""));
        }
    }

    @Test
    void theRulesFileHasAnExpressionForEachOfItsAlerts() throws Exception {
        String yaml = Files.readString(MonitoringAssets.directory().resolve("prometheusrule.yaml"));
        long alerts = yaml.lines().filter(l -> l.strip().startsWith("- alert:")).count();

        Map<String, String> rules = MonitoringAssets.ruleExpressions(yaml);

        assertThat(rules).hasSize((int) alerts).containsKeys("HearthPoolNearlyFull", "HearthPoolUnhealthy",
                "HearthNotReady", "HearthRpcErrors", "HearthDriverDown");
        assertThat(rules.values()).allSatisfy(expr -> assertThat(MonitoringAssets.metricNames(expr)).isNotEmpty());
    }

    @Test
    void ruleExpressionsAreReadFromOneLineAndFromABlock() {
        String yaml = """
                groups:
                  - name: g
                    rules:
                      - alert: One
                        expr: up{job="x"} == 0
                        for: 5m
                      - alert: Two
                        expr: |
                          sum by (node) (rate(a_total[5m]))
                            / sum by (node) (rate(b_total[5m]))
                        labels:
                          severity: warning
                      - record: node:c:sum
                        expr: sum(c)
                """;

        assertThat(MonitoringAssets.ruleExpressions(yaml)).containsExactly(
                Map.entry("One", "up{job=\"x\"} == 0"),
                Map.entry("Two", "sum by (node) (rate(a_total[5m]))\n/ sum by (node) (rate(b_total[5m]))"),
                Map.entry("node:c:sum", "sum(c)"));
    }

    @Test
    void anExpressionInAFormTheReaderDoesNotTakeIsRefused() {
        assertThatThrownBy(() -> MonitoringAssets.ruleExpressions("- alert: A\n  expr: >\n    up == 0\n"))
                .hasMessageContaining("line 2");
        assertThatThrownBy(() -> MonitoringAssets.ruleExpressions("- alert: A\n  expr: \"up == 0\"\n"))
                .hasMessageContaining("line 2");
    }

    @Test
    void metricNamesLeaveOutFunctionsLabelsKeywordsNumbersAndVariables() {
        assertThat(MonitoringAssets.metricNames(
                "histogram_quantile(0.99, sum by (le, method) (rate(hearth_rpc_duration_seconds_bucket{node=~\"$node\","
                        + "code!=\"OK\"}[$__rate_interval])))"))
                .containsExactly("hearth_rpc_duration_seconds_bucket");
        assertThat(MonitoringAssets.metricNames(
                "hearth_pool_available_bytes / hearth_pool_capacity_bytes < 0.10 and hearth_pool_capacity_bytes > 0"))
                .containsExactly("hearth_pool_available_bytes", "hearth_pool_capacity_bytes");
        assertThat(MonitoringAssets.metricNames(
                "count(up{job=\"hearth\"} == 0) or vector(0) unless on (node) group_left (version) a:b:rate5m offset 1h"))
                .containsExactly("up", "a:b:rate5m");
        assertThat(MonitoringAssets.metricNames("max(time() - process_start_time_seconds{node=~\"${node:regex}\"}) * 1e3"))
                .containsExactly("process_start_time_seconds");
        assertThat(MonitoringAssets.metricNames("{__name__=\"jvm_threads_live_threads\", area=\"heap\"}"))
                .containsExactly("jvm_threads_live_threads");
        assertThat(MonitoringAssets.metricNames("label_replace(x_total, \"dst\", \"$1\", \"src\", \"(.*)\") > bool 1"))
                .containsExactly("x_total");
    }

    @Test
    void grafanasLabelValuesCountsItsMetricOnly() {
        assertThat(MonitoringAssets.metricNames("label_values(hearth_pool_capacity_bytes{node=~\"$node\"}, pool)"))
                .containsExactly("hearth_pool_capacity_bytes");
        assertThat(MonitoringAssets.metricNames("label_values(node)")).isEmpty();
    }

    @Test
    void dashboardQueriesAreThePanelsTargetsAndTheQueryVariables() {
        String json = """
                {"panels": [{"type": "row", "panels": [{"targets": [{"expr": "a_total"}]}]},
                            {"type": "timeseries", "targets": [{"expr": "b", "refId": "A"}, {"expr": "c", "refId": "B"}]}],
                 "templating": {"list": [{"type": "datasource", "query": "prometheus"},
                                         {"type": "query", "query": {"query": "label_values(d, node)"}},
                                         {"type": "query", "query": "label_values(e, pool)"}]}}
                """;

        assertThat(MonitoringAssets.dashboardQueries(json))
                .containsExactlyInAnyOrder("a_total", "b", "c", "label_values(d, node)", "label_values(e, pool)");
    }

    private static String get(int port, String path) throws Exception {
        try (HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()) {
            HttpResponse<String> response = client.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(10))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).isEqualTo(200);
            return response.body();
        }
    }
}
