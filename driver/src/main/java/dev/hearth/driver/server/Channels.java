package dev.hearth.driver.server;

import io.grpc.ManagedChannel;
import io.grpc.okhttp.OkHttpChannelBuilder;

/**
 * The client side of an {@link Endpoint}, for {@code hearth probe}, the demo and tests: grpc-okhttp,
 * the server's transport too. A unix socket is reached through {@link UnixSocketFactory}: the
 * channel's target is a loopback address nobody dials, and every connection it makes goes to the
 * socket.
 */
public final class Channels {

    /** The target a unix socket's channel resolves (an address, so no name is looked up). */
    private static final String LOOPBACK = "127.0.0.1";

    private Channels() {}

    /** A plaintext channel to the endpoint; the caller shuts it down. */
    public static ManagedChannel channelTo(Endpoint endpoint) {
        return switch (endpoint) {
            case Endpoint.Unix unix -> OkHttpChannelBuilder.forAddress(LOOPBACK, 1)
                    .socketFactory(new UnixSocketFactory(unix.path()))
                    // No proxy between us and a unix socket, whatever the environment says.
                    .proxyDetector(address -> null)
                    .overrideAuthority("localhost")
                    .usePlaintext()
                    .build();
            case Endpoint.Tcp tcp -> OkHttpChannelBuilder.forAddress(tcp.host(), tcp.port()).usePlaintext().build();
        };
    }
}
