package dev.hearth.driver.server;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import java.net.URI;
import java.net.URISyntaxException;

/** The client side of an {@link Endpoint}, for the demo and for tests. */
public final class Channels {

    private Channels() {}

    /**
     * A plaintext channel to the endpoint. For a unix socket grpc-netty-shaded's "unix" resolver
     * picks its epoll domain-socket transport, whose event loop is shared and released with the
     * last channel using it, so the caller only has to shut the channel down.
     */
    public static ManagedChannel channelTo(Endpoint endpoint) {
        return switch (endpoint) {
            case Endpoint.Unix unix -> {
                ManagedChannelBuilder<?> builder = Grpc.newChannelBuilder(unixTarget(unix), InsecureChannelCredentials.create());
                if (builder instanceof NettyChannelBuilder netty) {
                    // grpc asks for TCP keepalive on every connection; netty warns that a unix socket has none.
                    netty.withOption(ChannelOption.SO_KEEPALIVE, null);
                }
                yield builder.build();
            }
            case Endpoint.Tcp tcp ->
                Grpc.newChannelBuilderForAddress(tcp.host(), tcp.port(), InsecureChannelCredentials.create())
                        .build();
        };
    }

    private static String unixTarget(Endpoint.Unix unix) {
        try {
            // Through URI so that a path with spaces or '%' survives as one percent-encoded target.
            return new URI("unix", null, unix.path().toString(), null).toASCIIString();
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("not usable as a grpc target: " + unix, e);
        }
    }
}
