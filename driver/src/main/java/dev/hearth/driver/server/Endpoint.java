package dev.hearth.driver.server;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Where the daemon listens: a unix domain socket (what kubelet and the CSI sidecars use) or a TCP
 * address (tests and local experiments). {@link #toString()} gives back the form {@link #parse}
 * accepts.
 */
public sealed interface Endpoint permits Endpoint.Unix, Endpoint.Tcp {

    /** Shown in every parse error, so a mistyped flag tells the operator what would have worked. */
    String ACCEPTED_FORMS =
            "unix:///absolute/path.sock, unix:/absolute/path.sock, tcp://host:port, tcp://[ipv6]:port";

    /**
     * sun_path in struct sockaddr_un holds 108 bytes including the terminating NUL, and the JDK's
     * unix sockets, which serve ours, take one byte less than that: 106. A longer path would only
     * fail later, at bind, with a far less helpful message.
     */
    int MAX_UNIX_PATH_BYTES = 106;

    static Endpoint parse(String value) {
        Objects.requireNonNull(value, "endpoint");
        if (value.startsWith("unix://")) {
            return Unix.parse(value, value.substring("unix://".length()));
        }
        if (value.startsWith("unix:")) {
            return Unix.parse(value, value.substring("unix:".length()));
        }
        if (value.startsWith("tcp://")) {
            return Tcp.parse(value);
        }
        throw invalid(value, "unknown scheme");
    }

    private static IllegalArgumentException invalid(String value, String reason) {
        return new IllegalArgumentException(
                "invalid endpoint \"" + value + "\": " + reason + "; accepted forms: " + ACCEPTED_FORMS);
    }

    record Unix(Path path) implements Endpoint {
        public Unix {
            Objects.requireNonNull(path, "path");
            if (!path.isAbsolute()) {
                throw new IllegalArgumentException("unix socket path must be absolute: " + path);
            }
        }

        private static Unix parse(String value, String rest) {
            // unix://host/path has an authority; the CSI spec (and grpc) only know the local form.
            if (!rest.startsWith("/")) {
                throw invalid(value, "the socket path must be absolute");
            }
            if (rest.endsWith("/")) {
                throw invalid(value, "the socket path names a directory");
            }
            if (rest.getBytes(StandardCharsets.UTF_8).length > MAX_UNIX_PATH_BYTES) {
                throw invalid(value, "the socket path is longer than " + MAX_UNIX_PATH_BYTES + " bytes");
            }
            try {
                return new Unix(Path.of(rest));
            } catch (InvalidPathException e) {
                throw invalid(value, e.getReason());
            }
        }

        @Override
        public String toString() {
            return "unix://" + path;
        }
    }

    record Tcp(String host, int port) implements Endpoint {
        public Tcp {
            Objects.requireNonNull(host, "host");
            if (host.isBlank()) {
                throw new IllegalArgumentException("tcp host must not be blank");
            }
            if (port < 0 || port > 65_535) {
                throw new IllegalArgumentException("tcp port out of range 0-65535: " + port);
            }
        }

        private static Tcp parse(String value) {
            URI uri;
            try {
                uri = new URI(value);
            } catch (URISyntaxException e) {
                throw invalid(value, e.getReason());
            }
            // URI falls back to a "registry-based" authority (host null) when host or port do not
            // parse, e.g. tcp://host:abc or an unbracketed IPv6 address.
            if (uri.getHost() == null || uri.getRawUserInfo() != null) {
                throw invalid(value, "expected host:port");
            }
            if (uri.getPort() == -1) {
                throw invalid(value, "the port is missing");
            }
            if (uri.getPort() > 65_535) {
                throw invalid(value, "the port is out of range 0-65535");
            }
            boolean hasPath = uri.getRawPath() != null && !uri.getRawPath().isEmpty();
            if (hasPath || uri.getRawQuery() != null || uri.getRawFragment() != null) {
                throw invalid(value, "a tcp endpoint has no path, query or fragment");
            }
            String host = uri.getHost();
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            return new Tcp(host, uri.getPort());
        }

        @Override
        public String toString() {
            return host.contains(":") ? "tcp://[" + host + "]:" + port : "tcp://" + host + ":" + port;
        }
    }
}
