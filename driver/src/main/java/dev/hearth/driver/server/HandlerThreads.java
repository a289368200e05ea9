package dev.hearth.driver.server;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * The threads the RPC handlers run on: platform threads, made as calls come in and kept a while
 * for the next ones; at most {@code max} at once, and further calls wait in line for one of them.
 *
 * <p>Not virtual threads. A handler spends most of its time in native calls (the FFM downcalls of
 * {@code dev.hearth.linux}: a tool's output polled, fsync, fallocate, ioctl, mount), and a virtual
 * thread inside a native call holds on to its carrier; the scheduler has one carrier per CPU and
 * adds none for such calls. On a 2-CPU node two stages in a slow mkfs (a large disk) or a mount
 * replaying a journal left every other call waiting, Probe and the kubelet's stats included
 * ({@code HandlerThreadsTest}); a burst of creates went through its fsyncs two at a time.
 *
 * <p>The bound keeps a flood of calls from becoming a flood of threads: the CSI sidecars send a
 * few dozen at most, and a call waits in line for a thread instead of failing. No handler waits
 * on a call still in line (volume locks never block), so the line always moves.
 */
public final class HandlerThreads {

    /** Calls at work at once; more wait in line. */
    public static final int MAX = 64;
    /** How long a thread with no call stays for the next one. */
    static final Duration KEEP_ALIVE = Duration.ofSeconds(30);

    private HandlerThreads() {}

    public static ExecutorService create() {
        return create(MAX, KEEP_ALIVE);
    }

    static ExecutorService create(int max, Duration keepAlive) {
        Line line = new Line();
        ThreadPoolExecutor executor = new ThreadPoolExecutor(0, max, keepAlive.toNanos(), TimeUnit.NANOSECONDS, line,
                Thread.ofPlatform().name("hearth-rpc-", 0).daemon().factory(),
                (call, pool) -> {
                    if (pool.isShutdown()) {
                        throw new RejectedExecutionException("the driver is stopping");
                    }
                    line.enqueue(call);
                });
        return executor;
    }

    /**
     * Says, each time it is asked, whether {@code handlers} had work since it was last asked: a call
     * at work now, or one handed to them in between (begun and done between two asks, which a look
     * at the threads at work alone misses); the first ask, since this was made.
     */
    public static BooleanSupplier activity(ExecutorService handlers) {
        if (!(handlers instanceof ThreadPoolExecutor pool)) {
            return () -> false;
        }
        AtomicLong seen = new AtomicLong(pool.getTaskCount());
        return () -> {
            long handed = pool.getTaskCount();
            return seen.getAndSet(handed) != handed || pool.getActiveCount() > 0;
        };
    }

    /**
     * The queue behind the pool, made to grow the pool before it queues: ThreadPoolExecutor offers
     * a call to its queue first and makes a thread only when the queue says no, so this says yes
     * only when an idle thread takes the call at once. Once {@code max} threads are at work the
     * pool rejects the call, and the rejection puts it in line.
     */
    private static final class Line extends LinkedTransferQueue<Runnable> {

        @Override
        public boolean offer(Runnable call) {
            return tryTransfer(call);
        }

        void enqueue(Runnable call) {
            super.offer(call);
        }
    }
}
