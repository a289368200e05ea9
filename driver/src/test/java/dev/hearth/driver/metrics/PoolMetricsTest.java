package dev.hearth.driver.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.driver.server.CapturedLog;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Pool;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.file.FilePoolConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PoolMetricsTest {

    private static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final List<Pool> pools = new ArrayList<>();

    @AfterEach
    void close() {
        pools.forEach(Pool::close);
        registry.close();
    }

    private FilePool open(String name) throws IOException {
        FilePool pool = FilePool.open(new FilePoolConfig(name, dir.resolve(name), 64 * MIB));
        pools.add(pool);
        return pool;
    }

    private List<String> scrape() {
        return registry.scrape().lines().toList();
    }

    @Test
    void showsEachPoolsSpaceAndContentsTaggedWithItsNameAndKind() throws Exception {
        open("default");
        open("fast");
        new PoolMetrics(pools, p -> p.name().equals("fast") ? 2 : 0).bindTo(registry);

        assertThat(scrape()).contains(
                "# TYPE hearth_pool_healthy gauge",
                "hearth_pool_healthy{kind=\"file\",pool=\"default\"} 1.0",
                "hearth_pool_healthy{kind=\"file\",pool=\"fast\"} 1.0",
                "# TYPE hearth_pool_capacity_bytes gauge",
                "hearth_pool_capacity_bytes{kind=\"file\",pool=\"default\"} " + (double) (64 * MIB),
                "hearth_pool_capacity_bytes{kind=\"file\",pool=\"fast\"} " + (double) (64 * MIB),
                "hearth_pool_allocated_bytes{kind=\"file\",pool=\"default\"} 0.0",
                "hearth_pool_volumes{kind=\"file\",pool=\"default\"} 0.0",
                "hearth_pool_snapshots{kind=\"file\",pool=\"default\"} 0.0",
                "hearth_pool_snapshots{kind=\"file\",pool=\"fast\"} 2.0");
        assertThat(scrape()).anyMatch(l -> l.startsWith("hearth_pool_available_bytes{kind=\"file\",pool=\"fast\"} "));
    }

    @Test
    void aScrapeAfterACreateShowsTheNewVolume() throws Exception {
        FilePool pool = open("default");
        new PoolMetrics(pools, p -> 0).bindTo(registry);
        double availableBefore = gauge("hearth_pool_available_bytes", "default");

        pool.create(new VolumeRequest("v1", new CapacityRange(8 * MIB, 0), Map.of()));

        assertThat(scrape()).contains(
                "hearth_pool_allocated_bytes{kind=\"file\",pool=\"default\"} " + (double) (8 * MIB),
                "hearth_pool_volumes{kind=\"file\",pool=\"default\"} 1.0");
        assertThat(gauge("hearth_pool_available_bytes", "default"))
                .isEqualTo((double) pool.capacity().availableBytes())
                .isLessThanOrEqualTo(availableBefore - 8 * MIB);
    }

    @Test
    void aPoolThatCannotAnswerReadsUnhealthyAndKeepsItsLastNumbersWhileTheOthersScrapeAsUsual() throws Exception {
        open("default");
        FilePool broken = open("broken");
        broken.create(new VolumeRequest("v1", new CapacityRange(8 * MIB, 0), Map.of()));
        new PoolMetrics(pools, p -> 3).bindTo(registry);
        List<String> before = brokenPoolLines();

        deleteRecursively(dir.resolve("broken"));

        assertThat(scrape()).contains(
                "hearth_pool_healthy{kind=\"file\",pool=\"broken\"} 0.0",
                "hearth_pool_healthy{kind=\"file\",pool=\"default\"} 1.0",
                "hearth_pool_capacity_bytes{kind=\"file\",pool=\"broken\"} " + (double) (64 * MIB),
                "hearth_pool_allocated_bytes{kind=\"file\",pool=\"broken\"} " + (double) (8 * MIB),
                "hearth_pool_volumes{kind=\"file\",pool=\"broken\"} 1.0",
                "hearth_pool_capacity_bytes{kind=\"file\",pool=\"default\"} " + (double) (64 * MIB));
        assertThat(brokenPoolLines()).as("every number as it was before the directory went")
                .isEqualTo(before.stream().map(l -> l.replace("healthy{kind=\"file\",pool=\"broken\"} 1.0",
                        "healthy{kind=\"file\",pool=\"broken\"} 0.0")).toList());
        assertThat(scrape()).noneMatch(l -> l.endsWith("NaN"));
    }

    @Test
    void aPoolThatNeverAnsweredReadsZeroNotNaN() throws Exception {
        open("broken");
        new PoolMetrics(pools, p -> 0).bindTo(registry);

        deleteRecursively(dir.resolve("broken"));

        assertThat(scrape()).contains(
                "hearth_pool_healthy{kind=\"file\",pool=\"broken\"} 0.0",
                "hearth_pool_capacity_bytes{kind=\"file\",pool=\"broken\"} 0.0",
                "hearth_pool_available_bytes{kind=\"file\",pool=\"broken\"} 0.0",
                "hearth_pool_volumes{kind=\"file\",pool=\"broken\"} 0.0")
                .noneMatch(l -> l.endsWith("NaN"));
    }

    @Test
    void aPoolWhoseDirectoryComesBackIsHealthyAgain() throws Exception {
        open("default");
        new PoolMetrics(pools, p -> 0).bindTo(registry);
        deleteRecursively(dir.resolve("default"));
        assertThat(scrape()).contains("hearth_pool_healthy{kind=\"file\",pool=\"default\"} 0.0");

        Files.createDirectory(dir.resolve("default"));

        assertThat(scrape()).contains("hearth_pool_healthy{kind=\"file\",pool=\"default\"} 1.0");
    }

    @Test
    void aSnapshotCountThatFailsKeepsZeroForSnapshotsOnly() throws Exception {
        open("default");
        new PoolMetrics(pools, p -> {
            throw new UnsupportedOperationException("no snapshots in this kind of pool");
        }).bindTo(registry);

        assertThat(scrape()).contains(
                "hearth_pool_snapshots{kind=\"file\",pool=\"default\"} 0.0",
                "hearth_pool_healthy{kind=\"file\",pool=\"default\"} 1.0",
                "hearth_pool_volumes{kind=\"file\",pool=\"default\"} 0.0");
    }

    @Test
    void aFailingReadIsAWarningOnceNotOnEveryScrape() throws Exception {
        open("broken");
        new PoolMetrics(pools, p -> 0).bindTo(registry);
        deleteRecursively(dir.resolve("broken"));

        try (CapturedLog log = CapturedLog.of(PoolMetrics.class, Level.FINE)) {
            scrape();
            scrape();
            scrape();

            // Once for the space (three gauges, one read) and once for the volumes.
            assertThat(log.records()).allMatch(r -> r.getLevel() == Level.WARNING)
                    .extracting(LogRecord::getMessage)
                    .satisfiesExactlyInAnyOrder(
                            m -> assertThat(m).startsWith(
                                    "pool 'broken': cannot read its capacity for metrics, keeping the last value: "),
                            m -> assertThat(m).startsWith(
                                    "pool 'broken': cannot read its volumes for metrics, keeping the last value: "));
        }
    }

    @Test
    void aReadThatWorksAgainIsLoggedAgainWhenItNextFails() throws Exception {
        AtomicBoolean failing = new AtomicBoolean(true);
        open("default");
        new PoolMetrics(pools, p -> {
            if (failing.get()) {
                throw new IllegalStateException("snapshots unreadable");
            }
            return 1;
        }).bindTo(registry);

        try (CapturedLog log = CapturedLog.of(PoolMetrics.class, Level.FINE)) {
            scrape();
            failing.set(false);
            assertThat(scrape()).contains("hearth_pool_snapshots{kind=\"file\",pool=\"default\"} 1.0");
            failing.set(true);
            assertThat(scrape()).contains("hearth_pool_snapshots{kind=\"file\",pool=\"default\"} 1.0");

            assertThat(log.records()).extracting(LogRecord::getMessage).hasSize(2)
                    .allMatch(m -> m.startsWith("pool 'default': cannot read its snapshots"));
        }
    }

    private List<String> brokenPoolLines() {
        return scrape().stream().filter(l -> l.startsWith("hearth_pool_") && l.contains("pool=\"broken\"")).toList();
    }

    private double gauge(String name, String pool) {
        String prefix = name + "{kind=\"file\",pool=\"" + pool + "\"} ";
        return scrape().stream().filter(l -> l.startsWith(prefix)).map(l -> Double.parseDouble(l.substring(prefix.length())))
                .findFirst().orElseThrow();
    }

    private static void deleteRecursively(Path root) throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
