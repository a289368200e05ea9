package dev.hearth.driver.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class MetricsServerTest {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final AtomicReference<Optional<String>> problem = new AtomicReference<>(Optional.empty());
    /** How many times the server ran its hook before a scrape. */
    private final AtomicInteger beforeScrape = new AtomicInteger();
    private MetricsServer server;

    @BeforeEach
    void start() throws IOException {
        server = MetricsServer.start(MetricsAddress.parse("127.0.0.1:0"), registry, problem::get, () -> {
            if (beforeScrape.getAndIncrement() == 0) {
                Counter.builder("hearth.test.late").register(registry).increment();
            }
        });
    }

    @AfterEach
    void stop() {
        server.close();
        registry.close();
    }

    @Test
    void bindsAChosenPortWhenAskedForZero() {
        assertThat(server.port()).isPositive();
        assertThat(server.address()).isEqualTo(new MetricsAddress("127.0.0.1", server.port()));
    }

    @Test
    void metricsAnswersWhatTheRegistryScrapes() throws Exception {
        Counter.builder("hearth.test.things").register(registry).increment(2);

        HttpResponse<String> response = TestHttp.get(server.port(), "/metrics");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("text/plain; version=0.0.4; charset=utf-8");
        assertThat(response.body().lines()).contains("# TYPE hearth_test_things_total counter",
                "hearth_test_things_total 2.0");
    }

    /** What the hook binds (the process and JVM meters, in the driver) is in the scrape that ran it. */
    @Test
    void eachScrapeRunsTheHookFirstAndAHealthCheckDoesNot() throws Exception {
        assertThat(TestHttp.get(server.port(), "/healthz").statusCode()).isEqualTo(200);
        assertThat(beforeScrape).hasValue(0);

        HttpResponse<String> first = TestHttp.get(server.port(), "/metrics");
        HttpResponse<String> second = TestHttp.get(server.port(), "/metrics");

        assertThat(beforeScrape).hasValue(2);
        assertThat(first.body().lines()).contains("hearth_test_late_total 1.0");
        assertThat(second.body().lines()).contains("hearth_test_late_total 1.0");
    }

    @Test
    void contentTypeIsTheOneTheRegistryWrites() {
        assertThat(MetricsServer.METRICS_CONTENT_TYPE)
                .isEqualTo(io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter.CONTENT_TYPE);
    }

    @Test
    void healthzIsOkWithoutAProblem() throws Exception {
        HttpResponse<String> response = TestHttp.get(server.port(), "/healthz");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).isEqualTo("ok\n");
    }

    @Test
    void healthzIs503WithTheProblemWhileThereIsOne() throws Exception {
        problem.set(Optional.of("pool 'default': directory /var/lib/hearth/pools/default is missing or not writable"));

        HttpResponse<String> response = TestHttp.get(server.port(), "/healthz");

        assertThat(response.statusCode()).isEqualTo(503);
        assertThat(response.body())
                .isEqualTo("pool 'default': directory /var/lib/hearth/pools/default is missing or not writable\n");

        problem.set(Optional.empty());
        assertThat(TestHttp.get(server.port(), "/healthz").statusCode()).isEqualTo(200);
    }

    @Test
    void otherPathsAreNotFound() throws Exception {
        for (String path : new String[] {"/", "/metric", "/metrics/", "/metrics/extra", "/healthz/x", "/favicon.ico"}) {
            assertThat(TestHttp.get(server.port(), path).statusCode()).as(path).isEqualTo(404);
        }
    }

    @Test
    void otherMethodsOnKnownPathsAreNotAllowed() throws Exception {
        HttpResponse<String> response = TestHttp.send(server.port(), "/metrics", "POST");

        assertThat(response.statusCode()).isEqualTo(405);
        assertThat(response.headers().firstValue("Allow")).hasValue("GET");
    }

    @Test
    void aFailingReadinessCheckAnswers500AndTheServerGoesOn() throws Exception {
        problem.set(null);

        assertThat(TestHttp.get(server.port(), "/healthz").statusCode()).isEqualTo(500);
        assertThat(TestHttp.get(server.port(), "/metrics").statusCode()).isEqualTo(200);
    }

    /**
     * A client that opens connections and sends nothing: without a bound, each one held a file
     * descriptor for 30 s and there was no limit to them, so such a client could take every
     * descriptor of the driver (then every create and stage fails with EMFILE).
     */
    @Test
    void silentConnectionsAreCappedAndClosedAfterTheRequestTime() throws Exception {
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < MetricsServer.MAX_CONNECTIONS; i++) {
                held.add(silent());
            }
            try (Socket beyond = silent()) {
                assertThat(beyond.getInputStream().read()).as("a connection beyond the cap is closed at once").isEqualTo(-1);
            }
            long started = System.nanoTime();
            for (Socket socket : held) {
                assertThat(socket.getInputStream().read()).as("a silent connection is closed").isEqualTo(-1);
            }
            assertThat(Duration.ofNanos(System.nanoTime() - started))
                    .as("not before the request time")
                    .isGreaterThanOrEqualTo(Duration.ofSeconds(MetricsServer.MAX_REQUEST_SECONDS - 2));
            assertThat(TestHttp.get(server.port(), "/healthz").statusCode()).isEqualTo(200);
        } finally {
            for (Socket socket : held) {
                socket.close();
            }
        }
    }

    private Socket silent() throws IOException {
        Socket socket = new Socket(InetAddress.getByName("127.0.0.1"), server.port());
        socket.setSoTimeout(30_000);
        return socket;
    }

    @Test
    void closeDoesNotWaitOutAGracePeriod() {
        int port = server.port();
        long started = System.nanoTime();

        server.close();

        assertThat(Duration.ofNanos(System.nanoTime() - started)).as("no grace period of seconds").isLessThan(Duration.ofSeconds(5));
        assertThatThrownBy(() -> TestHttp.get(port, "/healthz")).isInstanceOf(ConnectException.class);
    }

    @Test
    void closingTwiceIsHarmless() {
        server.close();
        server.close();
    }

    @Test
    void anAddressInUseIsRefusedNamingIt() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            String address = "127.0.0.1:" + taken.getLocalPort();

            assertThatThrownBy(() -> MetricsServer.start(MetricsAddress.parse(address), registry, Optional::empty,
                            () -> {}))
                    .isInstanceOf(IOException.class)
                    .hasMessageStartingWith("cannot serve metrics on " + address + ": ");
        }
    }

    @Test
    void aHostThatDoesNotResolveIsRefusedNamingIt() {
        assertThatThrownBy(() -> MetricsServer.start(MetricsAddress.parse("no-such-host.invalid:0"), registry,
                        Optional::empty, () -> {}))
                .isInstanceOf(IOException.class)
                .hasMessage("cannot serve metrics on no-such-host.invalid:0: host 'no-such-host.invalid' does not resolve");
    }
}
