package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SelfCheckTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    @TempDir
    Path dir;

    @Test
    void aRealServerAnswersItsCall() throws Exception {
        Path socket = dir.resolve("hearth.sock");
        try (TestServer server = TestServer.start(new Endpoint.Unix(socket), List.of(), TestServices.identity())) {
            assertThatCode(() -> SelfCheck.run(socket, TIMEOUT)).doesNotThrowAnyException();
            // And the server serves on, for the next connection.
            assertThatCode(() -> SelfCheck.run(socket, TIMEOUT)).doesNotThrowAnyException();
        }
    }

    @Test
    void aServerThatNeverAnswersTimesOut() throws Exception {
        Path socket = dir.resolve("silent.sock");
        try (ServerSocketChannel silent = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            // Bound and listening, never accepting: connect(2) succeeds through the backlog.
            silent.bind(UnixDomainSocketAddress.of(socket));

            assertThatThrownBy(() -> SelfCheck.run(socket, Duration.ofMillis(300)))
                    .isInstanceOf(IOException.class)
                    .hasMessage("no answer on " + socket + " within PT0.3S");
        }
    }

    @Test
    void aPeerThatIsNoHttp2ServerIsTold() throws Exception {
        Path socket = dir.resolve("http1.sock");
        serveOnce(socket, peer -> write(peer, "HTTP/1.1 400 Bad Request\r\n\r\n"), () -> assertThatThrownBy(
                        () -> SelfCheck.run(socket, TIMEOUT))
                .isInstanceOf(IOException.class)
                .hasMessageStartingWith("not an HTTP/2 server"));
    }

    @Test
    void aPeerThatHangsUpIsTold() throws Exception {
        Path socket = dir.resolve("hangs-up.sock");
        serveOnce(socket, peer -> {}, () -> assertThatThrownBy(() -> SelfCheck.run(socket, TIMEOUT))
                .isInstanceOf(IOException.class)
                .hasMessage("the server closed the connection before answering"));
    }

    @Test
    void nothingListeningIsAnError() {
        assertThatThrownBy(() -> SelfCheck.run(dir.resolve("absent.sock"), TIMEOUT)).isInstanceOf(IOException.class);
    }

    @Test
    void theCallIsAValidHttp2Request() {
        byte[] request = SelfCheck.request();
        String preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

        assertThat(new String(request, 0, preface.length(), StandardCharsets.US_ASCII)).isEqualTo(preface);
        ByteBuffer frames = ByteBuffer.wrap(request, preface.length(), request.length - preface.length());
        // SETTINGS (4), empty, no flags, on stream 0.
        assertThat(frameHeader(frames)).containsExactly(0, 0x4, 0, 0);
        // HEADERS (1) on stream 1, END_HEADERS and END_STREAM (5), its block the rest of the request.
        int[] headers = frameHeader(frames);
        assertThat(headers).containsExactly(frames.remaining(), 0x1, 0x5, 1);
        int length = headers[0];
        assertThat(new String(request, frames.position(), length, StandardCharsets.US_ASCII))
                .contains(SelfCheck.METHOD, "application/grpc", "trailers");
    }

    /** Length, type, flags and stream of the frame at the buffer's position, which moves past them. */
    private static int[] frameHeader(ByteBuffer frames) {
        int length = (frames.getShort() & 0xffff) << 8 | frames.get() & 0xff;
        return new int[] {length, frames.get() & 0xff, frames.get() & 0xff, frames.getInt()};
    }

    /** Accepts one connection on SOCKET, reads the request, hands the peer to SERVE, then closes it. */
    private static void serveOnce(Path socket, Consumer<SocketChannel> serve, Runnable client) throws Exception {
        try (ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            listener.bind(UnixDomainSocketAddress.of(socket));
            CompletableFuture<Void> served = CompletableFuture.runAsync(() -> {
                try (SocketChannel peer = listener.accept()) {
                    peer.read(ByteBuffer.allocate(1024));
                    serve.accept(peer);
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            client.run();
            served.get();
        }
    }

    private static void write(SocketChannel peer, String text) {
        try {
            peer.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII)));
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
