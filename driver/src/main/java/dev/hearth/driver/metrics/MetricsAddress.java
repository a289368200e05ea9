package dev.hearth.driver.metrics;

import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * Where the metrics server listens: {@code host:port}, {@code [ipv6]:port}, or {@code :port} for
 * every interface. {@link #toString()} gives back the form {@link #parse} accepts.
 *
 * @param host a name or literal address without brackets; empty for every interface
 * @param port 0 lets the system choose (tests)
 */
public record MetricsAddress(String host, int port) {

    /** Shown in every parse error, so a mistyped flag tells the operator what would have worked. */
    public static final String ACCEPTED_FORMS = "host:port, [ipv6]:port, :port (every interface)";

    public MetricsAddress {
        Objects.requireNonNull(host, "host");
        if (port < 0 || port > 65_535) {
            throw new IllegalArgumentException("metrics port out of range 0-65535: " + port);
        }
    }

    public static MetricsAddress parse(String value) {
        Objects.requireNonNull(value, "metrics address");
        int colon = value.lastIndexOf(':');
        if (colon < 0) {
            throw invalid(value, "the port is missing");
        }
        String host = value.substring(0, colon);
        boolean bracketed = host.startsWith("[") && host.endsWith("]");
        if (bracketed) {
            host = host.substring(1, host.length() - 1);
            if (host.isEmpty()) {
                throw invalid(value, "the brackets hold no address");
            }
        }
        if (host.chars().anyMatch(c -> c <= ' ' || c == '/' || c == '[' || c == ']' || c == '@')) {
            throw invalid(value, "the host is not a name or an address");
        }
        if (!bracketed && host.contains(":")) {
            throw invalid(value, "an IPv6 address needs brackets");
        }
        return new MetricsAddress(host, port(value, value.substring(colon + 1)));
    }

    private static int port(String value, String digits) {
        // Not Integer.parseInt alone: it takes "+80", and a flag's port is plain digits.
        if (digits.isEmpty() || digits.length() > 5 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw invalid(value, "the port is not a number");
        }
        int port = Integer.parseInt(digits);
        if (port > 65_535) {
            throw invalid(value, "the port is out of range 0-65535");
        }
        return port;
    }

    private static IllegalArgumentException invalid(String value, String reason) {
        return new IllegalArgumentException(
                "invalid metrics address \"" + value + "\": " + reason + "; accepted forms: " + ACCEPTED_FORMS);
    }

    /** The socket address to bind; a host name is resolved here, so it may come back unresolved. */
    InetSocketAddress socketAddress() {
        return host.isEmpty() ? new InetSocketAddress(port) : new InetSocketAddress(host, port);
    }

    @Override
    public String toString() {
        return host.contains(":") ? "[" + host + "]:" + port : host + ":" + port;
    }
}
