package dev.hearth.driver.server;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * A listening unix socket as a {@link ServerSocket}, which is what grpc-okhttp's server accepts
 * from (the JDK's own ServerSocket speaks TCP only). It is the JDK's {@link ServerSocketChannel} of
 * the UNIX family underneath, in blocking mode; each accepted connection is a {@link UnixSocket}.
 *
 * <p>Closing it does not remove the socket file ({@link SocketFile} does).
 */
final class UnixServerSocket extends ServerSocket {

    private final ServerSocketChannel channel;
    private final ConnectionLimit limit;

    UnixServerSocket(ConnectionLimit limit) throws IOException {
        // The superclass makes no OS socket until it is bound, and it never is: every use goes here.
        this.channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        this.limit = limit;
    }

    @Override
    public void bind(SocketAddress address) throws IOException {
        bind(address, 0);
    }

    @Override
    public void bind(SocketAddress address, int backlog) throws IOException {
        if (!(address instanceof UnixDomainSocketAddress)) {
            throw new SocketException("not a unix socket address: " + address);
        }
        channel.bind(address, backlog);
    }

    /**
     * The next connection within the limit (one over it is closed at once unless a silent one's place
     * can be given to it, and one that says nothing for {@link ConnectionLimit#SILENCE} is closed
     * then); see {@link Accepting} for what an error does.
     */
    @Override
    public Socket accept() throws IOException {
        while (true) {
            SocketChannel connection = Accepting.retrying(channel::accept, channel::isOpen, this);
            UnixSocket socket = new UnixSocket(connection);
            if (limit.admit(connection::isOpen, socket::spoke, socket)) {
                limit.closeIfSilent(socket::spoke, socket);
                return socket;
            }
            limit.refuse(connection);
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public boolean isClosed() {
        return !channel.isOpen();
    }

    @Override
    public boolean isBound() {
        return localAddress() != null;
    }

    @Override
    public SocketAddress getLocalSocketAddress() {
        return localAddress();
    }

    @Override
    public int getLocalPort() {
        return -1;
    }

    private SocketAddress localAddress() {
        try {
            return channel.getLocalAddress();
        } catch (IOException e) {
            return null; // closed
        }
    }

    @Override
    public String toString() {
        return "UnixServerSocket[" + localAddress() + "]";
    }
}
