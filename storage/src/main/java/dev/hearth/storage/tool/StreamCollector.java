package dev.hearth.storage.tool;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Drains one output stream of a child on its own thread, keeping at most {@code limit} bytes.
 * It keeps reading past the limit: a child blocked on a full pipe would never exit.
 */
final class StreamCollector {

    private final int limit;
    private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
    private long total;
    private final CountDownLatch done = new CountDownLatch(1);

    private StreamCollector(int limit) {
        this.limit = limit;
    }

    static StreamCollector start(InputStream in, int limit, String name) {
        StreamCollector collector = new StreamCollector(limit);
        // A platform daemon thread: a blocking pipe read would pin a virtual thread's carrier, and a
        // reader stuck behind an orphaned grandchild must not keep the JVM alive.
        Thread.ofPlatform().daemon().name("tool-" + name).start(() -> collector.drain(in));
        return collector;
    }

    private void drain(InputStream in) {
        byte[] chunk = new byte[8192];
        try (in) {
            int n;
            while ((n = in.read(chunk)) >= 0) {
                append(chunk, n);
            }
        } catch (IOException e) {
            // The pipe went away (the child was killed); what was read so far is all there is.
        } finally {
            done.countDown();
        }
    }

    private synchronized void append(byte[] chunk, int n) {
        kept.write(chunk, 0, Math.min(limit - kept.size(), n));
        total += n;
    }

    /** True once the stream reached end of file within the wait. */
    boolean await(long nanos) throws InterruptedException {
        return done.await(Math.max(0, nanos), TimeUnit.NANOSECONDS);
    }

    synchronized boolean overflowed() {
        return total > limit;
    }

    synchronized String text() {
        return kept.toString(StandardCharsets.UTF_8);
    }
}
