package dev.hearth.driver.server;

import static dev.hearth.driver.server.TestServer.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.BoolValue;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.csi.v1.ProbeResponse;
import dev.hearth.driver.server.TestServer.Transport;
import dev.hearth.linux.Posix;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class GrpcServerTest {

    /** HTTP/2 frame types and the flag the tests read in raw frames. */
    private static final int SETTINGS = 0x4;
    private static final int PING = 0x6;
    private static final int ACK = 0x1;

    @TempDir
    Path dir;

    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void tearDown() throws Exception {
        release.countDown();
        for (AutoCloseable closeable : cleanup.reversed()) {
            closeable.close();
        }
    }

    private TestServer start(Endpoint endpoint, IdentityGrpc.IdentityImplBase service) throws IOException {
        TestServer server = TestServer.start(endpoint, List.of(), service);
        cleanup.add(server);
        return server;
    }

    private static String pluginName(ManagedChannel channel) {
        return IdentityGrpc.newBlockingStub(channel)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .getPluginInfo(GetPluginInfoRequest.getDefaultInstance())
                .getName();
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void answersOverARealChannel(Transport transport) throws Exception {
        TestServer server = start(transport.endpoint(dir), TestServices.identity());

        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME);
    }

    /** A peer that speaks no HTTP/2, or hangs up at once, costs its own connection and nothing else. */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void aPeerThatSpeaksNoHttp2OrHangsUpLeavesTheServerServing(Transport transport) throws Exception {
        TestServer server = start(transport.endpoint(dir), TestServices.identity());
        SocketAddress address = addressOf(server);

        try (SocketChannel hangUp = SocketChannel.open(address)) {
            // closed at once
        }
        try (SocketChannel http1 = SocketChannel.open(address)) {
            http1.write(ByteBuffer.wrap("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
            ByteBuffer answer = ByteBuffer.allocate(4096);
            // The server closes the connection (after a GOAWAY, perhaps): the read ends.
            while (http1.read(answer.clear()) >= 0) {
                // drained
            }
        }

        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME);
    }

    /** As many connections as sidecars and kubelet calls could make, each with a call in flight at once. */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void answersManyConnectionsAtOnce(Transport transport) throws Exception {
        TestServer server = start(transport.endpoint(dir), TestServices.identity());
        List<ManagedChannel> channels = new ArrayList<>();
        try {
            List<CompletableFuture<String>> names = new ArrayList<>();
            for (int i = 0; i < 32; i++) {
                ManagedChannel channel = Channels.channelTo(server.server().endpoint());
                channels.add(channel);
                names.add(CompletableFuture.supplyAsync(() -> pluginName(channel), Thread.ofVirtual()::start));
            }

            for (CompletableFuture<String> name : names) {
                assertThat(name).succeedsWithin(Duration.ofSeconds(30)).isEqualTo(TestServices.PLUGIN_NAME);
            }
        } finally {
            channels.forEach(ManagedChannel::shutdownNow);
        }
    }

    /**
     * A client that opens connections and keeps them gets no more than the limit: one over it is
     * closed as soon as it is accepted, the connections already open are served as before, and one
     * that closes makes room for the next.
     */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void aConnectionOverTheLimitIsClosedAtOnceAndTheOpenOnesAreStillServed(Transport transport) throws Exception {
        TestServer server = TestServer.start(transport.endpoint(dir), List.of(), 4, ConnectionLimit.SILENCE,
                TestServices.identity());
        cleanup.add(server);
        SocketAddress address = addressOf(server);
        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME); // the first connection
        List<SocketChannel> held = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                held.add(http2Client(address));
            }
            for (int i = 0; i < 3; i++) {
                try (SocketChannel over = SocketChannel.open(address)) {
                    try {
                        greet(over);
                    } catch (IOException closedAlready) {
                        // the server may close it before the client has written
                    }
                    assertThat(CompletableFuture.supplyAsync(() -> readsToTheEnd(over), Thread.ofVirtual()::start))
                            .as("a connection over the limit of 4 is closed by the server")
                            .succeedsWithin(Duration.ofSeconds(10));
                }
            }
            assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME);
        } finally {
            for (SocketChannel connection : held) {
                connection.close();
            }
        }
        // The server sees those three go when its readers do; until then a new one may still be refused.
        waitUntil(() -> {
            ManagedChannel next = Channels.channelTo(server.server().endpoint());
            try {
                return pluginName(next).equals(TestServices.PLUGIN_NAME);
            } catch (StatusRuntimeException refused) {
                return false;
            } finally {
                next.shutdownNow();
            }
        });
    }

    /**
     * A connection that says nothing is closed once the silence allowed has passed, so that it
     * cannot hold a place of the limit for good; one that has spoken stays open past it.
     */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void aConnectionThatSaysNothingIsClosedAfterTheSilenceAllowedAndOneThatSpokeStays(Transport transport)
            throws Exception {
        TestServer server = TestServer.start(transport.endpoint(dir), List.of(), 4, Duration.ofMillis(300),
                TestServices.identity());
        cleanup.add(server);
        SocketAddress address = addressOf(server);

        try (SocketChannel silent = SocketChannel.open(address); SocketChannel speaking = http2Client(address)) {
            assertThat(CompletableFuture.supplyAsync(() -> readsToTheEnd(silent), Thread.ofVirtual()::start))
                    .as("a silent connection is closed by the server")
                    .succeedsWithin(Duration.ofSeconds(10));
            assertThat(settingsOf(speaking)).as("the server answers the one that spoke").isNotEmpty();
            Thread.sleep(600); // twice the silence allowed
            speaking.write(ByteBuffer.wrap(SelfCheck.frame(PING, 0, 0, new byte[8])));
            assertThat(answersPing(speaking)).as("the one that spoke is still served after the silence allowed")
                    .isTrue();
        }
        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME);
    }

    /**
     * When the count is full, a new connection takes the place of the oldest one that has said
     * nothing for a tenth of the silence allowed, so that a flood of silent connections does not
     * keep the node's own clients out until the flood times out; the other silent ones stay.
     */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void aFullCountGivesTheOldestSilentConnectionsPlaceToANewOne(Transport transport) throws Exception {
        TestServer server = TestServer.start(transport.endpoint(dir), List.of(), 4, ConnectionLimit.SILENCE,
                TestServices.identity());
        cleanup.add(server);
        SocketAddress address = addressOf(server);
        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME); // a place, spoken
        try (SocketChannel oldest = SocketChannel.open(address); SocketChannel second = SocketChannel.open(address);
                SocketChannel third = SocketChannel.open(address)) {
            Thread.sleep(ConnectionLimit.SILENCE.dividedBy(10).plusMillis(500).toMillis());

            ManagedChannel next = Channels.channelTo(server.server().endpoint());
            try {
                assertThat(pluginName(next)).as("a new client, at once").isEqualTo(TestServices.PLUGIN_NAME);
            } finally {
                next.shutdownNow();
            }
            assertThat(CompletableFuture.supplyAsync(() -> readsToTheEnd(oldest), Thread.ofVirtual()::start))
                    .as("the oldest silent connection is closed to make room")
                    .succeedsWithin(Duration.ofSeconds(5));
            for (SocketChannel silent : List.of(second, third)) {
                silent.configureBlocking(false);
                int read;
                do {
                    read = silent.read(ByteBuffer.allocate(4096)); // past the server's SETTINGS, sent at accept
                } while (read > 0);
                assertThat(read).as("another silent one is still open").isZero();
            }
        }
    }

    /** Whether the server acknowledges a PING, skipping its other frames (SETTINGS, its ack, WINDOW_UPDATE). */
    private static boolean answersPing(SocketChannel connection) throws IOException {
        Frame frame;
        do {
            frame = Frame.next(connection);
        } while (frame.type() != PING || (frame.flags() & ACK) == 0);
        return true;
    }

    /** The server tells each client how many calls it may have open at once, and one client's many calls all get through. */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void announcesItsLimitOfCallsPerConnectionAndServesMoreCallsThanThatInTurn(Transport transport) throws Exception {
        TestServer server = start(transport.endpoint(dir), TestServices.identity());

        try (SocketChannel connection = http2Client(addressOf(server))) {
            assertThat(settingsOf(connection)).containsEntry(0x3, GrpcServer.MAX_CALLS_PER_CONNECTION);
        }
        List<CompletableFuture<String>> names = new ArrayList<>();
        for (int i = 0; i < GrpcServer.MAX_CALLS_PER_CONNECTION + 100; i++) {
            names.add(CompletableFuture.supplyAsync(() -> pluginName(server.channel()), Thread.ofVirtual()::start));
        }
        for (CompletableFuture<String> name : names) {
            assertThat(name).succeedsWithin(Duration.ofSeconds(30)).isEqualTo(TestServices.PLUGIN_NAME);
        }
    }

    /** The parameters of the server's first SETTINGS frame (6 bytes a parameter: its id, its value). */
    private static java.util.Map<Integer, Integer> settingsOf(SocketChannel connection) throws IOException {
        Frame frame;
        do {
            frame = Frame.next(connection);
        } while (frame.type() != SETTINGS || (frame.flags() & ACK) != 0);
        java.util.Map<Integer, Integer> settings = new java.util.HashMap<>();
        while (frame.payload().remaining() >= 6) {
            settings.put(frame.payload().getShort() & 0xffff, frame.payload().getInt());
        }
        return settings;
    }

    /** One HTTP/2 frame as the server sent it: a 9-byte header (length, type, flags, stream), then its payload. */
    private record Frame(int type, int flags, ByteBuffer payload) {

        static Frame next(SocketChannel connection) throws IOException {
            ByteBuffer header = SelfCheck.readFully(connection, 9);
            int length = (header.getShort() & 0xffff) << 8 | header.get() & 0xff;
            int type = header.get() & 0xff;
            int flags = header.get() & 0xff;
            return new Frame(type, flags, SelfCheck.readFully(connection, length));
        }
    }

    private static SocketAddress addressOf(TestServer server) {
        return switch (server.server().endpoint()) {
            case Endpoint.Unix unix -> UnixDomainSocketAddress.of(unix.path());
            case Endpoint.Tcp tcp -> new InetSocketAddress(tcp.host(), tcp.port());
        };
    }

    /** A connection that has sent what a gRPC client sends first: the HTTP/2 preface and an empty SETTINGS. */
    private static SocketChannel http2Client(SocketAddress address) throws IOException {
        SocketChannel connection = SocketChannel.open(address);
        greet(connection);
        return connection;
    }

    private static void greet(SocketChannel connection) throws IOException {
        connection.write(ByteBuffer.wrap(SelfCheck.preface()));
    }

    /** Reads until the server closes the connection. */
    private static boolean readsToTheEnd(SocketChannel connection) {
        ByteBuffer buffer = ByteBuffer.allocate(4096);
        try {
            while (connection.read(buffer.clear()) >= 0) {
                // what the server said before it closed
            }
            return true;
        } catch (IOException e) {
            return true; // reset: closed as well
        }
    }

    @Test
    void tcpPortZeroReportsThePortBound() throws Exception {
        TestServer server = start(new Endpoint.Tcp("127.0.0.1", 0), TestServices.identity());

        Endpoint.Tcp bound = (Endpoint.Tcp) server.server().endpoint();
        assertThat(bound.host()).isEqualTo("127.0.0.1");
        assertThat(bound.port()).isPositive();
    }

    @Test
    void socketIsReadableAndWritableByOwnerAndGroupOnly() throws Exception {
        Path socket = dir.resolve("hearth.sock");

        start(new Endpoint.Unix(socket), TestServices.identity());

        assertThat(Files.getPosixFilePermissions(socket)).isEqualTo(PosixFilePermissions.fromString("rw-rw----"));
    }

    @Test
    void restoresTheProcessUmaskAfterBinding() throws Exception {
        int before = currentUmask();

        start(new Endpoint.Unix(dir.resolve("hearth.sock")), TestServices.identity());

        assertThat(currentUmask()).isEqualTo(before);
    }

    private static int currentUmask() {
        int mask = Posix.umask(022);
        Posix.umask(mask);
        return mask;
    }

    @Test
    void createsMissingParentDirectoriesForOwnerAndGroup() throws Exception {
        Path socket = dir.resolve("plugins/hearth/csi.sock");

        TestServer server = start(new Endpoint.Unix(socket), TestServices.identity());

        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME);
        assertThat(Files.getPosixFilePermissions(dir.resolve("plugins"))).isEqualTo(PosixFilePermissions.fromString("rwxr-x---"));
        assertThat(Files.getPosixFilePermissions(dir.resolve("plugins/hearth"))).isEqualTo(PosixFilePermissions.fromString("rwxr-x---"));
    }

    @Test
    void replacesAStaleSocketNobodyListensOn() throws Exception {
        Path socket = dir.resolve("hearth.sock");
        try (ServerSocketChannel died = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            died.bind(UnixDomainSocketAddress.of(socket));
        }
        assertThat(socket).exists();

        TestServer server = start(new Endpoint.Unix(socket), TestServices.identity());

        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME);
    }

    @Test
    void refusesASocketAnotherProcessServesAndLeavesItAlone() throws Exception {
        Path socket = dir.resolve("hearth.sock");
        TestServer first = start(new Endpoint.Unix(socket), TestServices.identity());

        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            assertThatThrownBy(() -> GrpcServer.start(new Endpoint.Unix(socket), List.of(), List.of(), executor))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("another process serves " + socket);
        }

        assertThat(pluginName(first.channel())).isEqualTo(TestServices.PLUGIN_NAME);
    }

    @Test
    void theSocketGetsItsNameOnlyOnceItAnsweredAndLeavesNoHiddenOne() throws Exception {
        Path socket = dir.resolve("hearth.sock");

        TestServer server = start(new Endpoint.Unix(socket), TestServices.identity());

        // The start's own call was answered on the hidden name, then renamed: only the socket is left.
        try (var entries = Files.list(dir)) {
            assertThat(entries).containsExactly(socket);
        }
        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME);
    }

    @Test
    void removesTheHiddenSocketOfAStartThatWasKilled() throws Exception {
        Path hidden = dir.resolve(".h0badf0");
        try (ServerSocketChannel died = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            died.bind(UnixDomainSocketAddress.of(hidden));
        }

        TestServer server = start(new Endpoint.Unix(dir.resolve("hearth.sock")), TestServices.identity());

        assertThat(hidden).doesNotExist();
        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME);
    }

    @Test
    void refusesToStartBesideAnotherStartAndLeavesItAlone() throws Exception {
        Path socket = dir.resolve("hearth.sock");
        Path hidden = dir.resolve(".h0badf0");
        try (ServerSocketChannel starting = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
                ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            starting.bind(UnixDomainSocketAddress.of(hidden));

            assertThatThrownBy(() -> GrpcServer.start(new Endpoint.Unix(socket), List.of(), List.of(), executor))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("another process serves " + hidden);

            assertThat(hidden).exists();
            assertThat(socket).doesNotExist();
        }
    }

    @Test
    void leavesAFileOfTheHiddenNameThatIsNoSocket() throws Exception {
        Path notOurs = dir.resolve(".hnotes1");
        Files.writeString(notOurs, "precious");

        start(new Endpoint.Unix(dir.resolve("hearth.sock")), TestServices.identity());

        assertThat(notOurs).hasContent("precious");
    }

    @Test
    void aPathWithNoRoomForTheHiddenNameIsBoundAtOnce() throws Exception {
        // 106 bytes, the most a unix socket's path may have here; the hidden name, 8 characters against
        // this one's 1, would not fit.
        int padding = SocketFile.MAX_PATH_BYTES - dir.toString().length() - "/".length() - "/s".length();
        Path socket = Files.createDirectory(dir.resolve("d".repeat(padding))).resolve("s");
        assertThat(socket.toString()).hasSize(SocketFile.MAX_PATH_BYTES);

        TestServer server = start(new Endpoint.Unix(socket), TestServices.identity());

        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME);
        assertThat(Files.getPosixFilePermissions(socket)).isEqualTo(PosixFilePermissions.fromString("rw-rw----"));
        try (var entries = Files.list(socket.getParent())) {
            assertThat(entries).containsExactly(socket);
        }
    }

    @Test
    void publishRefusesAPathTakenWhileStartingAndLeavesIt() throws Exception {
        Path socket = dir.resolve("hearth.sock");
        SocketFile file = new SocketFile(socket);
        file.prepare();
        try (ServerSocketChannel bound = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            file.bind(() -> bound.bind(UnixDomainSocketAddress.of(file.bindPath())));
            // Another process's socket, bound at the path after this start made room for it.
            try (ServerSocketChannel other = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
                other.bind(UnixDomainSocketAddress.of(socket));

                assertThatThrownBy(file::publish)
                        .isInstanceOf(IOException.class)
                        .hasMessageContaining(socket + " appeared while this driver started");

                file.deleteHidden();
                assertThat(file.bindPath()).doesNotExist();
                try (SocketChannel client = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
                    assertThat(client.isConnected()).as("the other process's socket still answers").isTrue();
                }
            }
        }
    }

    @Test
    void refusesARegularFileAndNeverTouchesIt() throws Exception {
        Path file = dir.resolve("hearth.sock");
        Files.writeString(file, "precious");

        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            assertThatThrownBy(() -> GrpcServer.start(new Endpoint.Unix(file), List.of(), List.of(), executor))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining(file + " exists and is not a socket");
        }

        assertThat(file).hasContent("precious");
    }

    @Test
    void refusesADirectoryAndNeverTouchesIt() throws Exception {
        Path directory = Files.createDirectory(dir.resolve("hearth.sock"));
        Files.writeString(directory.resolve("inside"), "precious");

        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            assertThatThrownBy(() -> GrpcServer.start(new Endpoint.Unix(directory), List.of(), List.of(), executor))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("is not a socket");
        }

        assertThat(directory.resolve("inside")).hasContent("precious");
    }

    /** Probe blocks until the test releases it, and says when it has begun. */
    private IdentityGrpc.IdentityImplBase slowProbe(CountDownLatch entered) {
        return new IdentityGrpc.IdentityImplBase() {
            @Override
            public void probe(ProbeRequest request, StreamObserver<ProbeResponse> responses) {
                entered.countDown();
                TestServices.await(release);
                if (Context.current().isCancelled()) {
                    // Cancelled by shutdownNow: netty's threads are gone, nothing could be sent.
                    return;
                }
                responses.onNext(ProbeResponse.newBuilder().setReady(BoolValue.of(true)).build());
                responses.onCompleted();
            }
        };
    }

    private static CompletableFuture<ProbeResponse> probeAsync(ManagedChannel channel) {
        return CompletableFuture.supplyAsync(
                () -> IdentityGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(30, TimeUnit.SECONDS)
                        .probe(ProbeRequest.getDefaultInstance()),
                Thread.ofVirtual()::start);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void gracefulShutdownFinishesTheCallInFlightAndRefusesNewOnes(Transport transport) throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        TestServer server = start(transport.endpoint(dir), slowProbe(entered));
        CompletableFuture<ProbeResponse> inFlight = probeAsync(server.channel());
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        Thread stopping = Thread.ofPlatform().start(() -> server.server().shutdown(Duration.ofSeconds(30)));
        waitUntil(server.server()::isShutdown);

        ManagedChannel late = Channels.channelTo(server.server().endpoint());
        try {
            assertThatThrownBy(() -> pluginName(late))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(e.getStatus().getCode())
                            .isEqualTo(Status.Code.UNAVAILABLE));
        } finally {
            late.shutdownNow();
        }
        assertThat(stopping.isAlive()).as("shutdown waits for the call in flight").isTrue();

        release.countDown();

        assertThat(inFlight.get(10, TimeUnit.SECONDS).getReady().getValue()).isTrue();
        stopping.join(Duration.ofSeconds(10));
        assertThat(stopping.isAlive()).isFalse();
        if (server.server().endpoint() instanceof Endpoint.Unix unix) {
            assertThat(unix.path()).doesNotExist();
        }
    }

    @Test
    void shutdownCancelsWhatOutlivesTheGracePeriod() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        TestServer server = start(new Endpoint.Unix(dir.resolve("hearth.sock")), slowProbe(entered));
        CompletableFuture<ProbeResponse> inFlight = probeAsync(server.channel());
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        long started = System.nanoTime();
        server.server().shutdown(Duration.ofMillis(200));

        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(10));
        assertThat(inFlight).failsWithin(Duration.ofSeconds(10));
        assertThat(dir.resolve("hearth.sock")).doesNotExist();
    }

    @Test
    void shutdownIsIdempotentAndStopsItsThreads() throws Exception {
        TestServer server = start(new Endpoint.Unix(dir.resolve("hearth.sock")), TestServices.identity());
        assertThat(pluginName(server.channel())).isEqualTo(TestServices.PLUGIN_NAME);

        server.server().shutdown(Duration.ofSeconds(1));
        server.server().shutdown(Duration.ofSeconds(1));
        server.server().close();
        server.server().awaitTermination();

        assertThat(server.server().isShutdown()).isTrue();
        assertThat(dir.resolve("hearth.sock")).doesNotExist();
        waitUntil(() -> Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().startsWith("hearth-grpc-")));
    }

    @Test
    void awaitTerminationReturnsOnceAnotherThreadHasShutItDown() throws Exception {
        TestServer server = start(new Endpoint.Tcp("127.0.0.1", 0), TestServices.identity());
        CompletableFuture<Void> waiting = CompletableFuture.runAsync(() -> {
            try {
                server.server().awaitTermination();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }, Thread.ofVirtual()::start);
        assertThat(waiting).isNotDone();

        server.server().shutdown(Duration.ofSeconds(1));

        assertThat(waiting).succeedsWithin(Duration.ofSeconds(10));
    }
}
