package dev.hearth.driver.metrics;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Plain HTTP beside the CSI socket: {@code GET /metrics} for Prometheus and {@code GET /healthz}
 * for a kubelet probe (200 "ok", or 503 with what is wrong). Anything else is 404, or 405 for
 * another method on those two paths.
 */
public final class MetricsServer implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(MetricsServer.class.getName());

    /** The text format {@link PrometheusMeterRegistry#scrape()} writes: classic, not OpenMetrics. */
    static final String METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private static final String TEXT = "text/plain; charset=utf-8";

    /** The most connections open at once; one beyond them is closed when accepted. */
    static final int MAX_CONNECTIONS = 32;

    /** How long a connection may take to send a whole request, or to read its answer. */
    static final int MAX_REQUEST_SECONDS = 10;

    /**
     * The JDK server's own settings, each set unless the JVM was given it; read when the first
     * server is made. nodelay: the server sends a response's headers and its body in two segments,
     * and with Nagle's algorithm the body then waits for the client's delayed ACK of the headers, 40
     * ms more for every scrape on a kept-alive connection. The others bound it: without them, a
     * client that opens connections and sends nothing holds each one for 30 s, and as many as it
     * likes: 1,006 such connections took every file descriptor of a driver limited to 1,024, and
     * its Probe then failed on {@code /dev/loop-control} with EMFILE, as would every stage and
     * create. Prometheus keeps one connection and the kubelet's probe opens one at a time. The
     * idle check runs every 2 s instead of 10, so a silent connection goes within 12 s; the check
     * of requests and answers, which the time bounds start, every 2 s instead of every second.
     */
    private static final Map<String, String> BOUNDS = Map.of(
            "sun.net.httpserver.nodelay", "true",
            "jdk.httpserver.maxConnections", Integer.toString(MAX_CONNECTIONS),
            "sun.net.httpserver.maxReqTime", Integer.toString(MAX_REQUEST_SECONDS),
            "sun.net.httpserver.maxRspTime", Integer.toString(MAX_REQUEST_SECONDS),
            "sun.net.httpserver.clockTick", "2000",
            "sun.net.httpserver.timerMillis", "2000");

    private final HttpServer server;
    private final ExecutorService executor;
    private final MetricsAddress address;
    private final AtomicBoolean closed = new AtomicBoolean();

    private MetricsServer(HttpServer server, ExecutorService executor, MetricsAddress address) {
        this.server = server;
        this.executor = executor;
        this.address = address;
    }

    /**
     * Binds and starts serving.
     *
     * @param problem what the readiness check finds wrong, empty when the driver can serve
     * @param beforeScrape run before each scrape (binds the meters that are bound late)
     * @throws IOException when the address cannot be bound or its host does not resolve
     */
    public static MetricsServer start(MetricsAddress address, PrometheusMeterRegistry registry,
            Supplier<Optional<String>> problem, Runnable beforeScrape) throws IOException {
        InetSocketAddress socket = address.socketAddress();
        if (socket.isUnresolved()) {
            throw new IOException("cannot serve metrics on " + address + ": host '" + address.host()
                    + "' does not resolve");
        }
        BOUNDS.forEach((property, value) -> {
            if (System.getProperty(property) == null) {
                System.setProperty(property, value);
            }
        });
        HttpServer server;
        try {
            server = HttpServer.create(socket, 0);
        } catch (IOException e) {
            throw new IOException("cannot serve metrics on " + address + ": " + e.getMessage(), e);
        }
        // A scrape reads every pool; on virtual threads a slow one does not hold up a probe.
        ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
        server.setExecutor(executor);
        server.createContext("/", exchange -> handle(exchange, registry, problem, beforeScrape));
        server.start();
        MetricsAddress bound = new MetricsAddress(address.host(), server.getAddress().getPort());
        LOG.info(() -> "serving metrics on " + bound);
        return new MetricsServer(server, executor, bound);
    }

    /** The address served; for port 0, the port actually bound. */
    public MetricsAddress address() {
        return address;
    }

    public int port() {
        return address.port();
    }

    /**
     * Stops at once: a scrape in flight is cut off, Prometheus just misses one. Closing again does
     * nothing, so both the signal handler and main may call it.
     */
    @Override
    public void close() {
        if (closed.getAndSet(true)) {
            return;
        }
        server.stop(0);
        executor.shutdownNow();
        LOG.info(() -> "stopped serving metrics on " + address);
    }

    private static void handle(HttpExchange exchange, PrometheusMeterRegistry registry,
            Supplier<Optional<String>> problem, Runnable beforeScrape) throws IOException {
        try (exchange) {
            Response response;
            try {
                response = respond(exchange.getRequestMethod(), exchange.getRequestURI().getPath(), registry, problem,
                        beforeScrape);
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "answering " + exchange.getRequestURI() + " failed", e);
                response = new Response(500, TEXT, "internal error: " + e + "\n");
            }
            if (response.status() == 405) {
                exchange.getResponseHeaders().set("Allow", "GET");
            }
            send(exchange, response);
        }
    }

    private static Response respond(String method, String path, PrometheusMeterRegistry registry,
            Supplier<Optional<String>> problem, Runnable beforeScrape) {
        if (!path.equals("/metrics") && !path.equals("/healthz")) {
            return new Response(404, TEXT, "not found; try /metrics or /healthz\n");
        }
        if (!method.equals("GET")) {
            return new Response(405, TEXT, "only GET\n");
        }
        if (path.equals("/metrics")) {
            beforeScrape.run();
            return new Response(200, METRICS_CONTENT_TYPE, registry.scrape());
        }
        Optional<String> wrong = problem.get();
        return wrong.isEmpty() ? new Response(200, TEXT, "ok\n") : new Response(503, TEXT, wrong.get() + "\n");
    }

    private static void send(HttpExchange exchange, Response response) throws IOException {
        byte[] body = response.body().getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", response.contentType());
        exchange.sendResponseHeaders(response.status(), body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    private record Response(int status, String contentType, String body) {}
}
