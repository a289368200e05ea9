package dev.hearth.driver.server;

import java.io.Closeable;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.logging.Logger;

/**
 * The most connections a server keeps open at once. grpc-okhttp's server gives each connection a
 * thread that reads it, and each costs about 50 KiB; a client that opens connections and never
 * closes them (a sidecar's leak, a script's loop) would otherwise grow the driver until its
 * container's memory limit kills it, and with it every call in flight (3,000 idle connections held
 * 245 MiB). A node's own clients need a handful: the sidecars keep one each, and the kubelet opens
 * one per call, with at most a few dozen calls at once. A connection over the limit is closed as
 * soon as it is accepted, which its client sees as an unavailable server and retries; the
 * connections already open are not disturbed.
 *
 * <p>Whether a connection is still open is asked of the connection itself when the count is at the
 * limit, not counted on close: the transport may close a socket through its streams, which no
 * wrapper of ours would see.
 */
final class ConnectionLimit {

    private static final Logger LOG = Logger.getLogger(ConnectionLimit.class.getName());

    /** The servers' limit: far above what a node's sidecars and kubelet hold, far below what would exhaust a 256 MiB container. */
    static final int DEFAULT = 512;

    /**
     * How long a new connection may stay silent (not a byte of its HTTP/2 preface) before it is
     * closed: a gRPC client speaks at once, and a connection that never does would hold one of the
     * limit's places for good.
     */
    static final Duration SILENCE = Duration.ofSeconds(10);

    /** At most one warning this often, however many connections are refused. */
    private static final long WARN_EVERY_NANOS = 10_000_000_000L;

    private final int max;
    private final Object where;
    private final Duration silence;
    private final List<BooleanSupplier> open = new ArrayList<>();
    private long refusedSinceWarning;
    private long lastWarning;
    private boolean warned;

    /**
     * At most {@code max} connections open at once to {@code where} (the endpoint, as the log names
     * it), each closed if it says nothing for {@code silence} after it is accepted.
     */
    ConnectionLimit(int max, Object where, Duration silence) {
        if (max < 1) {
            throw new IllegalArgumentException("a connection limit must be at least 1, not " + max);
        }
        this.max = max;
        this.where = where;
        this.silence = silence;
    }

    /**
     * Closes {@code connection} once {@link #SILENCE} has passed if {@code spoke} says it has sent
     * nothing by then. A virtual thread sleeps out the wait: no platform thread per connection.
     */
    void closeIfSilent(BooleanSupplier spoke, Closeable connection) {
        Thread.ofVirtual().name("hearth-silence").start(() -> {
            try {
                Thread.sleep(silence);
            } catch (InterruptedException e) {
                return;
            }
            if (!spoke.getAsBoolean()) {
                LOG.fine(() -> "closing a connection on " + where + " that said nothing for " + silence);
                try {
                    connection.close();
                } catch (IOException e) {
                    // gone either way
                }
            }
        });
    }

    /**
     * Counts a connection just accepted, whose {@code isOpen} says whether it still is; false if
     * {@code max} connections are open already, in which case the caller closes it with {@link #refuse}.
     */
    synchronized boolean admit(BooleanSupplier isOpen) {
        if (open.size() >= max) {
            open.removeIf(connection -> !connection.getAsBoolean());
        }
        if (open.size() >= max) {
            return false;
        }
        open.add(isOpen);
        return true;
    }

    /** Closes a connection {@link #admit} did not take, and says so in the log now and then. */
    void refuse(Closeable connection) {
        try {
            connection.close();
        } catch (IOException e) {
            // it is gone either way
        }
        long refused;
        synchronized (this) {
            refusedSinceWarning++;
            long now = System.nanoTime();
            if (warned && now - lastWarning < WARN_EVERY_NANOS) {
                return;
            }
            warned = true;
            lastWarning = now;
            refused = refusedSinceWarning;
            refusedSinceWarning = 0;
        }
        LOG.warning(() -> "closed " + (refused == 1 ? "a new connection" : refused + " new connections") + " on "
                + where + ": " + max + " connections are open already, the most hearth keeps at once (a client "
                + "that opens connections and does not close them?)");
    }

    /** How many connections are counted as open (some may have closed since the last look). */
    synchronized int counted() {
        return open.size();
    }
}
