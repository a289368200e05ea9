package dev.hearth.driver.server;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.logging.Logger;
import javax.net.ServerSocketFactory;

/**
 * Accepting connections for grpc-okhttp's server, which ends its accept loop, and so stops serving
 * for good, on the first exception accept throws. Here an error while the socket is still open
 * (out of file descriptors, a connection reset before it was accepted) is logged and accept is
 * tried again after a pause; only a closed socket (the server shutting down) throws.
 */
final class Accepting {

    private static final Logger LOG = Logger.getLogger(Accepting.class.getName());

    /** How long accept waits after an error before it tries again (EMFILE clears as calls end). */
    static final Duration RETRY = Duration.ofMillis(100);

    private Accepting() {}

    @FunctionalInterface
    interface Accept<T> {
        T next() throws IOException;
    }

    /** The next connection from {@code accept}, retried while {@code open} says the socket is. */
    static <T> T retrying(Accept<T> accept, BooleanSupplier open, Object where) throws IOException {
        while (true) {
            try {
                return accept.next();
            } catch (IOException e) {
                if (!open.getAsBoolean()) {
                    throw e;
                }
                LOG.warning(() -> "cannot accept a connection on " + where + ", trying again in " + RETRY.toMillis()
                        + " ms: " + e);
                try {
                    Thread.sleep(RETRY);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while waiting to accept again");
                }
            }
        }
    }

    /**
     * grpc-okhttp asks its factory for an unbound socket and binds it to the builder's address
     * itself; the factory's other ways to make one are never called.
     */
    private abstract static class UnboundSockets extends ServerSocketFactory {

        @Override
        public ServerSocket createServerSocket(int port) {
            throw new UnsupportedOperationException("grpc-okhttp binds the unbound socket itself");
        }

        @Override
        public ServerSocket createServerSocket(int port, int backlog) {
            throw new UnsupportedOperationException("grpc-okhttp binds the unbound socket itself");
        }

        @Override
        public ServerSocket createServerSocket(int port, int backlog, InetAddress address) {
            throw new UnsupportedOperationException("grpc-okhttp binds the unbound socket itself");
        }
    }

    /**
     * TCP listening sockets whose accept retries as above, and keeps to the limit's connections: as
     * on the unix socket, a connection that says nothing for the silence allowed is closed, and the
     * oldest silent one makes room for a new one when the count is full.
     */
    static final class TcpFactory extends UnboundSockets {

        private final ConnectionLimit limit;

        TcpFactory(ConnectionLimit limit) {
            this.limit = limit;
        }

        @Override
        public ServerSocket createServerSocket() throws IOException {
            return new ServerSocket() {
                @Override
                public Socket accept() throws IOException {
                    while (true) {
                        HeardSocket connection = retrying(() -> {
                            HeardSocket next = new HeardSocket();
                            implAccept(next);
                            return next;
                        }, () -> !isClosed(), getLocalSocketAddress());
                        if (limit.admit(() -> !connection.isClosed(), connection::spoke, connection)) {
                            limit.closeIfSilent(connection::spoke, connection);
                            return connection;
                        }
                        limit.refuse(connection);
                    }
                }
            };
        }
    }

    /** A TCP connection that notes whether its peer has sent anything yet (read through its input stream). */
    static final class HeardSocket extends Socket {

        private final Object lock = new Object();
        private HeardInputStream in;

        boolean spoke() {
            synchronized (lock) {
                return in != null && in.heard();
            }
        }

        @Override
        public InputStream getInputStream() throws IOException {
            synchronized (lock) {
                if (in == null) {
                    in = new HeardInputStream(super.getInputStream());
                }
                return in;
            }
        }
    }

    /** Unix listening sockets ({@link UnixServerSocket}) that keep to the limit's connections. */
    static final class UnixFactory extends UnboundSockets {

        private final ConnectionLimit limit;

        UnixFactory(ConnectionLimit limit) {
            this.limit = limit;
        }

        @Override
        public ServerSocket createServerSocket() throws IOException {
            return new UnixServerSocket(limit);
        }
    }
}
