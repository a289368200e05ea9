package dev.hearth.driver.server;

import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One operation per volume at a time, without waiting: the CSI sidecars retry with backoff, so a
 * call that finds its volume busy is answered ABORTED at once instead of queueing behind a slow
 * mkfs. Keys are independent; nothing here ever blocks.
 */
public final class VolumeLocks {

    private final ConcurrentHashMap<String, Handle> held = new ConcurrentHashMap<>();

    /** The lock on {@code key}, or empty when someone holds it. */
    public Optional<Handle> tryLock(String key) {
        Objects.requireNonNull(key, "key");
        Handle handle = new Handle(key);
        return held.putIfAbsent(key, handle) == null ? Optional.of(handle) : Optional.empty();
    }

    public boolean isLocked(String key) {
        return held.containsKey(key);
    }

    /** A held lock. Closing it more than once is harmless and never frees a later holder's lock. */
    public final class Handle implements AutoCloseable {

        private final String key;
        private final AtomicBoolean released = new AtomicBoolean();

        private Handle(String key) {
            this.key = key;
        }

        public String key() {
            return key;
        }

        @Override
        public void close() {
            if (released.compareAndSet(false, true)) {
                held.remove(key, this);
            }
        }
    }
}
