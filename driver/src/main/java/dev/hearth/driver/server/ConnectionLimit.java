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
 * <p>A place held by a connection that has said nothing for a tenth of the silence allowed (1 s: a
 * gRPC client sends its preface at once) is given to a new one when the count is full: the oldest
 * such connection is closed to make room. So a flood of silent connections keeps the node's own
 * clients out for a second, not until the flood's connections time out.
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
    /** How long a connection must have said nothing before its place may go to a new one. */
    private final long makeRoomAfterNanos;
    /** The connections counted, oldest first. */
    private final List<Counted> open = new ArrayList<>();
    private long refusedSinceWarning;
    private long closedSinceWarning;
    private long lastWarning;
    private boolean warned;

    /** A connection counted: whether it is still open, whether it has spoken, how to close it, and when it came. */
    private record Counted(BooleanSupplier isOpen, BooleanSupplier spoke, Closeable connection, long admitted) {}

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
        this.makeRoomAfterNanos = silence.toNanos() / 10;
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
     * Counts a connection just accepted, whose {@code isOpen} says whether it still is, and
     * {@code spoke} whether it has sent anything yet; when {@code max} are open already, the oldest one
     * that has not {@code spoke}n for a tenth of the silence allowed is closed and this one takes its
     * place. False if there is none, in which case the caller closes this one with {@link #refuse}.
     */
    boolean admit(BooleanSupplier isOpen, BooleanSupplier spoke, Closeable connection) {
        Closeable silent = null;
        synchronized (this) {
            long now = System.nanoTime();
            if (open.size() >= max) {
                open.removeIf(counted -> !counted.isOpen().getAsBoolean());
            }
            if (open.size() >= max) {
                for (int i = 0; i < open.size() && silent == null; i++) {
                    Counted counted = open.get(i);
                    if (now - counted.admitted() < makeRoomAfterNanos) {
                        break; // the rest came later still
                    }
                    if (!counted.spoke().getAsBoolean()) {
                        silent = open.remove(i).connection();
                    }
                }
                if (silent == null) {
                    return false;
                }
            }
            open.add(new Counted(isOpen, spoke, connection, now));
        }
        if (silent != null) {
            closeQuietly(silent);
            warn(false);
        }
        return true;
    }

    /** Closes a connection {@link #admit} did not take, and says so in the log now and then. */
    void refuse(Closeable connection) {
        closeQuietly(connection);
        warn(true);
    }

    /** Notes a connection refused, or one closed to make room, and logs what was noted at most every 10 s. */
    private void warn(boolean refusedOne) {
        long refused;
        long closed;
        synchronized (this) {
            if (refusedOne) {
                refusedSinceWarning++;
            } else {
                closedSinceWarning++;
            }
            long now = System.nanoTime();
            if (warned && now - lastWarning < WARN_EVERY_NANOS) {
                return;
            }
            warned = true;
            lastWarning = now;
            refused = refusedSinceWarning;
            closed = closedSinceWarning;
            refusedSinceWarning = 0;
            closedSinceWarning = 0;
        }
        LOG.warning(() -> max + " connections are open on " + where + ", the most hearth keeps at once (a client "
                + "that opens connections and does not close them?): " + (refused == 0 ? ""
                : "closed " + count(refused, "new connection") + " at once" + (closed == 0 ? "" : ", and "))
                + (closed == 0 ? "" : "closed " + count(closed, "connection") + " that had said nothing for "
                + Duration.ofNanos(makeRoomAfterNanos).toMillis() + " ms, to make room"));
    }

    private static String count(long n, String what) {
        return n == 1 ? "a " + what : n + " " + what + "s";
    }

    private static void closeQuietly(Closeable connection) {
        try {
            connection.close();
        } catch (IOException e) {
            // it is gone either way
        }
    }

    /** How many connections are counted as open (some may have closed since the last look). */
    synchronized int counted() {
        return open.size();
    }
}
