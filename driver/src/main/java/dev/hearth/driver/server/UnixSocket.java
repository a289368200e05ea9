package dev.hearth.driver.server;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketImpl;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;

/**
 * One accepted connection of a {@link UnixServerSocket}, as the {@link Socket} grpc-okhttp's server
 * transport reads and writes through. The streams are the JDK's own for a socket channel, which
 * let one thread read while another writes (the transport does both at once). Options that only
 * TCP has (no-delay, keepalive, linger) are accepted and mean nothing here: a unix socket sends at
 * once.
 */
final class UnixSocket extends Socket {

    /** What a peer's or our name reads as when the kernel gives none: an unnamed unix socket. */
    private static final SocketAddress UNNAMED = UnixDomainSocketAddress.of("");

    private final SocketChannel channel;
    private final HeardInputStream in;
    private final OutputStream out;
    // Read once: the transport names the connection after its peer, and a name must never be null.
    private final SocketAddress local;
    private final SocketAddress remote;

    UnixSocket(SocketChannel channel) throws IOException {
        super((SocketImpl) null); // no OS socket of its own: everything goes to the channel
        this.channel = channel;
        this.in = new HeardInputStream(Channels.newInputStream(channel));
        this.out = Channels.newOutputStream(channel);
        this.local = addressOr(channel::getLocalAddress);
        this.remote = addressOr(channel::getRemoteAddress);
    }

    private interface AddressRead {
        SocketAddress read() throws IOException;
    }

    private static SocketAddress addressOr(AddressRead read) {
        try {
            SocketAddress address = read.read();
            return address != null ? address : UNNAMED;
        } catch (IOException e) {
            return UNNAMED; // closed already: the transport will find out when it reads
        }
    }

    /** Whether the peer has sent anything yet. */
    boolean spoke() {
        return in.heard();
    }

    @Override
    public InputStream getInputStream() {
        return in;
    }

    @Override
    public OutputStream getOutputStream() {
        return out;
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
    public boolean isConnected() {
        return true;
    }

    @Override
    public boolean isBound() {
        return true;
    }

    @Override
    public void shutdownInput() throws IOException {
        channel.shutdownInput();
    }

    @Override
    public void shutdownOutput() throws IOException {
        channel.shutdownOutput();
    }

    @Override
    public boolean isInputShutdown() {
        return !channel.isOpen();
    }

    @Override
    public boolean isOutputShutdown() {
        return !channel.isOpen();
    }

    @Override
    public void setTcpNoDelay(boolean on) {}

    @Override
    public boolean getTcpNoDelay() {
        return true;
    }

    @Override
    public void setKeepAlive(boolean on) {}

    @Override
    public boolean getKeepAlive() {
        return false;
    }

    @Override
    public void setSoLinger(boolean on, int linger) {}

    @Override
    public int getSoLinger() {
        return -1;
    }

    /** Reads never time out: the transport ends a stalled connection by closing it. */
    @Override
    public void setSoTimeout(int timeout) {}

    @Override
    public int getSoTimeout() {
        return 0;
    }

    @Override
    public InetAddress getInetAddress() {
        return null;
    }

    @Override
    public int getPort() {
        return 0;
    }

    @Override
    public int getLocalPort() {
        return -1;
    }

    @Override
    public SocketAddress getLocalSocketAddress() {
        return local;
    }

    /** The peer of a unix socket is usually unnamed: an empty path. */
    @Override
    public SocketAddress getRemoteSocketAddress() {
        return remote;
    }

    @Override
    public String toString() {
        return "UnixSocket[" + local + "]";
    }
}
