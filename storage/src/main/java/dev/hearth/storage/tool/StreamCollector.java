package dev.hearth.storage.tool;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Drains one output stream of a {@link Process} on its own thread into a {@link Captured}. It keeps
 * reading past the limit: a child blocked on a full pipe would never exit.
 */
final class StreamCollector {

    private final Captured captured;
    private final CountDownLatch done = new CountDownLatch(1);

    private StreamCollector(Captured captured) {
        this.captured = captured;
    }

    static StreamCollector start(InputStream in, Captured into, String name) {
        StreamCollector collector = new StreamCollector(into);
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
                captured.accept(chunk, n);
            }
        } catch (IOException e) {
            // The pipe went away (the child was killed); what was read so far is all there is.
        } finally {
            done.countDown();
        }
    }

    /** True once the stream reached end of file within the wait. */
    boolean await(long nanos) throws InterruptedException {
        return done.await(Math.max(0, nanos), TimeUnit.NANOSECONDS);
    }
}
