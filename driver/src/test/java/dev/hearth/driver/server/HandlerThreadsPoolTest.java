package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The handlers' pool: a thread for each call up to its bound, reused when idle, a line beyond. */
class HandlerThreadsPoolTest {

    private ExecutorService pool;

    @AfterEach
    void stop() throws InterruptedException {
        if (pool != null) {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void callsOneAfterAnotherShareOneIdleThread() throws Exception {
        pool = HandlerThreads.create(8, Duration.ofSeconds(30));
        Set<Thread> threads = ConcurrentHashMap.newKeySet();
        for (int i = 0; i < 20; i++) {
            pool.submit(() -> threads.add(Thread.currentThread())).get(10, TimeUnit.SECONDS);
            // The future is done a moment before its thread waits for the next call: wait for that.
            awaitWaiting((ThreadPoolExecutor) pool);
        }
        assertThat(threads).hasSize(1);
        Thread thread = threads.iterator().next();
        assertThat(thread.isVirtual()).isFalse();
        assertThat(thread.isDaemon()).isTrue();
        assertThat(thread.getName()).startsWith("hearth-rpc-");
    }

    @Test
    void callsAtWorkTogetherEachGetAThreadUpToTheBoundAndTheRestWaitTheirTurn() throws Exception {
        int max = 4;
        pool = HandlerThreads.create(max, Duration.ofSeconds(30));
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger atWork = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        List<Future<?>> calls = new ArrayList<>();
        for (int i = 0; i < 3 * max; i++) {
            calls.add(pool.submit(() -> {
                most.accumulateAndGet(atWork.incrementAndGet(), Math::max);
                release.await();
                atWork.decrementAndGet();
                return null;
            }));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (atWork.get() < max && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(atWork.get()).as("every thread up to the bound took a call").isEqualTo(max);
        assertThat(((ThreadPoolExecutor) pool).getQueue()).as("the rest wait in line").hasSize(2 * max);
        release.countDown();
        for (Future<?> call : calls) {
            call.get(10, TimeUnit.SECONDS);
        }
        assertThat(most.get()).isEqualTo(max);
        assertThat(((ThreadPoolExecutor) pool).getLargestPoolSize()).isEqualTo(max);
    }

    @Test
    void idleThreadsGoAfterTheirKeepAlive() throws Exception {
        pool = HandlerThreads.create(4, Duration.ofMillis(50));
        CountDownLatch release = new CountDownLatch(1);
        List<Future<?>> calls = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            calls.add(pool.submit(() -> {
                release.await();
                return null;
            }));
        }
        release.countDown();
        for (Future<?> call : calls) {
            call.get(10, TimeUnit.SECONDS);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (((ThreadPoolExecutor) pool).getPoolSize() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(((ThreadPoolExecutor) pool).getPoolSize()).isZero();
        assertThat(pool.submit(() -> "later").get(10, TimeUnit.SECONDS)).isEqualTo("later");
    }

    /**
     * What the warm-up asks before each of its steps: whether calls came since it last asked, one
     * at work as it asks or one begun and done in between alike; nothing since, no.
     */
    @Test
    void activitySaysWhetherCallsCameSinceItWasLastAsked() throws Exception {
        pool = HandlerThreads.create(4, Duration.ofSeconds(30));
        pool.submit(() -> {}).get(10, TimeUnit.SECONDS);
        awaitIdle(pool);
        java.util.function.BooleanSupplier activity = HandlerThreads.activity(pool);

        assertThat(activity.getAsBoolean()).as("nothing since it was made").isFalse();
        pool.submit(() -> {}).get(10, TimeUnit.SECONDS);
        awaitIdle(pool); // its thread done with it, not only its result given
        assertThat(activity.getAsBoolean()).as("a call begun and done since").isTrue();
        assertThat(activity.getAsBoolean()).as("nothing since the last ask").isFalse();

        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch started = new CountDownLatch(1);
        Future<?> atWork = pool.submit(() -> {
            started.countDown();
            release.await();
            return null;
        });
        started.await();
        assertThat(activity.getAsBoolean()).isTrue();
        assertThat(activity.getAsBoolean()).as("still at work").isTrue();
        release.countDown();
        atWork.get(10, TimeUnit.SECONDS);
        awaitIdle(pool);
        activity.getAsBoolean(); // may have seen it at work last
        assertThat(activity.getAsBoolean()).isFalse();
    }

    private static void awaitIdle(ExecutorService pool) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (((ThreadPoolExecutor) pool).getActiveCount() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
    }

    @Test
    void aStoppedPoolTakesNoCall() {
        pool = HandlerThreads.create(2, Duration.ofSeconds(30));
        pool.shutdown();
        assertThatThrownBy(() -> pool.submit(() -> null)).isInstanceOf(RejectedExecutionException.class);
    }

    private static void awaitWaiting(ThreadPoolExecutor pool) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!((LinkedTransferQueue<Runnable>) pool.getQueue()).hasWaitingConsumer()
                && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
    }
}
