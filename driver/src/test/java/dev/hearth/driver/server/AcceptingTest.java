package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.UnixDomainSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AcceptingTest {

    @Test
    void anErrorWhileTheSocketIsOpenIsTriedAgain() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        Socket accepted = new Socket();

        Socket next = Accepting.retrying(() -> {
            if (calls.incrementAndGet() < 3) {
                throw new IOException("Too many open files");
            }
            return accepted;
        }, () -> true, "test");

        assertThat(next).isSameAs(accepted);
        assertThat(calls).hasValue(3);
    }

    @Test
    void aClosedSocketEndsTheAcceptLoop() {
        IOException closed = new SocketException("Socket closed");

        assertThatThrownBy(() -> Accepting.retrying(() -> {
            throw closed;
        }, () -> false, "test")).isSameAs(closed);
    }

    /** The TCP socket the server gets: closing it from another thread ends a waiting accept. */
    @Test
    void closingTheTcpSocketEndsAWaitingAccept() throws Exception {
        ServerSocket socket = new Accepting.TcpFactory(limit()).createServerSocket();
        socket.bind(new InetSocketAddress("127.0.0.1", 0));
        Thread closer = closeSoon(socket);

        assertThatThrownBy(socket::accept).isInstanceOf(SocketException.class);
        closer.join();
    }

    @Test
    void closingTheUnixSocketEndsAWaitingAccept(@TempDir Path dir) throws Exception {
        ServerSocket socket = new Accepting.UnixFactory(limit()).createServerSocket();
        socket.bind(UnixDomainSocketAddress.of(dir.resolve("s")));
        assertThat(socket.isBound()).isTrue();
        Thread closer = closeSoon(socket);

        assertThatThrownBy(socket::accept).isInstanceOf(IOException.class);
        assertThat(socket.isClosed()).isTrue();
        closer.join();
    }

    /** Closes the socket 200 ms from now, from a thread of its own. */
    private static Thread closeSoon(ServerSocket socket) {
        return Thread.ofVirtual().start(() -> {
            try {
                Thread.sleep(200);
                socket.close();
            } catch (InterruptedException | IOException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    private static ConnectionLimit limit() {
        return new ConnectionLimit(ConnectionLimit.DEFAULT, "test", ConnectionLimit.SILENCE);
    }
}
