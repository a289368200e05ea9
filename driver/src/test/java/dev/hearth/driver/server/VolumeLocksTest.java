package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class VolumeLocksTest {

    private final VolumeLocks locks = new VolumeLocks();

    @Test
    void aHeldKeyCannotBeTakenAgainUntilReleased() {
        Optional<VolumeLocks.Handle> first = locks.tryLock("v1");

        assertThat(first).isPresent();
        assertThat(locks.tryLock("v1")).isEmpty();
        assertThat(locks.isLocked("v1")).isTrue();

        first.orElseThrow().close();

        assertThat(locks.isLocked("v1")).isFalse();
        assertThat(locks.tryLock("v1")).isPresent();
    }

    @Test
    void keysAreIndependent() {
        assertThat(locks.tryLock("v1")).isPresent();

        assertThat(locks.tryLock("v2")).isPresent();
    }

    @Test
    void closingTwiceNeverFreesTheNextHoldersLock() {
        VolumeLocks.Handle first = locks.tryLock("v1").orElseThrow();
        first.close();
        VolumeLocks.Handle second = locks.tryLock("v1").orElseThrow();

        first.close();

        assertThat(locks.isLocked("v1")).isTrue();
        assertThat(locks.tryLock("v1")).isEmpty();
        second.close();
        assertThat(locks.isLocked("v1")).isFalse();
    }

    @Test
    void worksAsTryWithResources() {
        try (VolumeLocks.Handle handle = locks.tryLock("v1").orElseThrow()) {
            assertThat(handle.key()).isEqualTo("v1");
            assertThat(locks.isLocked("v1")).isTrue();
        }
        assertThat(locks.isLocked("v1")).isFalse();
    }

    @Test
    void concurrentTriesOnOneKeyLetExactlyOneIn() throws Exception {
        int contenders = 64;
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger mostInside = new AtomicInteger();
        Callable<Boolean> attempt = () -> {
            Optional<VolumeLocks.Handle> handle = locks.tryLock("v1");
            if (handle.isEmpty()) {
                return false;
            }
            try (VolumeLocks.Handle _ = handle.get()) {
                mostInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                Thread.sleep(1);
                inside.decrementAndGet();
                return true;
            }
        };
        List<Future<Boolean>> results = new ArrayList<>();
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < contenders; i++) {
                results.add(executor.submit(attempt));
            }
        }

        assertThat(mostInside).hasValue(1);
        assertThat(results).anySatisfy(r -> assertThat(r.get()).isTrue());
        assertThat(locks.isLocked("v1")).isFalse();
    }
}
