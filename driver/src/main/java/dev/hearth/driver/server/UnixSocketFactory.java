package dev.hearth.driver.server;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import javax.net.SocketFactory;

/**
 * Connections to one unix socket, for grpc-okhttp's client ({@link Channels}): it asks its socket
 * factory for a connection to the address its target resolved to, and every address it asks for
 * is answered with a connection to this socket (the way grpc's Android UdsChannelBuilder does it).
 */
final class UnixSocketFactory extends SocketFactory {

    private final Path socket;

    UnixSocketFactory(Path socket) {
        this.socket = socket;
    }

    private Socket connect() throws IOException {
        SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            channel.connect(UnixDomainSocketAddress.of(socket));
            return new UnixSocket(channel);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        return connect();
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
        return connect();
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
        return connect();
    }

    @Override
    public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
            throws IOException {
        return connect();
    }
}
