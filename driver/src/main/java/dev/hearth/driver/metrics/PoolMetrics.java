package dev.hearth.driver.metrics;

import dev.hearth.storage.Pool;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.List;
import java.util.OptionalDouble;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.ToDoubleFunction;
import java.util.function.ToIntFunction;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Gauges of each pool's health, space and contents, tagged {@code pool} and {@code kind}, read from
 * the pool whenever they are scraped. {@code hearth_pool_healthy} is 1 while the pool is usable (the
 * check {@code /healthz} makes) and 0 otherwise. A number the pool cannot give keeps its last value
 * (0 if it never had one) rather than turning NaN: NaN compares false with everything, so an alert
 * such as "available below 10%" would go quiet exactly when the pool is in trouble.
 */
public final class PoolMetrics implements MeterBinder {

    private static final Logger LOG = Logger.getLogger(PoolMetrics.class.getName());

    private final List<Pool> pools;
    private final ToIntFunction<Pool> snapshotCount;

    /**
     * @param snapshotCount how many snapshots a pool holds; a function because not every pool kind
     *     can tell yet, and one that throws keeps the last count
     */
    public PoolMetrics(List<Pool> pools, ToIntFunction<Pool> snapshotCount) {
        this.pools = List.copyOf(pools);
        this.snapshotCount = snapshotCount;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (Pool pool : pools) {
            Tags tags = Tags.of("pool", pool.name(), "kind", pool.kind());
            Gauge.builder("hearth.pool.healthy", pool, p -> healthy(p) ? 1 : 0)
                    .strongReference(true)
                    .description("1 while the pool is usable, 0 while it is not (/healthz says why)")
                    .tags(tags)
                    .register(registry);
            // capacity() is a statvfs and a directory listing (file) or an lvm report (lvm): read once for
            // the three gauges of one scrape, and again at the next, so a scrape right after a create
            // already shows it.
            Reading capacity = new Reading(pool, "capacity");
            Memo<dev.hearth.storage.Capacity> space = new Memo<>(pool::capacity, 3);
            gauge(registry, "hearth.pool.capacity", "bytes", "The most the pool's volumes may add up to", tags,
                    capacity, p -> space.get().totalBytes());
            gauge(registry, "hearth.pool.allocated", "bytes", "What the pool's volumes hold", tags,
                    capacity, p -> space.get().allocatedBytes());
            gauge(registry, "hearth.pool.available", "bytes", "What one more volume could get", tags,
                    capacity, p -> space.get().availableBytes());
            if (pool instanceof dev.hearth.storage.lvm.LvmPool lvm && lvm.config().thin()) {
                gauge(registry, "hearth.pool.thin.fill", "ratio", "How full the thin pool is, data or metadata "
                        + "whichever is fuller (0 to 1); writes fail at 1, volumes turn abnormal at 0.95", tags,
                        new Reading(pool, "thin pool fill"), p -> lvm.thinPoolFill().orElse(Double.NaN));
            }
            // The IDs, not the volumes: a file pool names them from its kept listing, where a list
            // read every record and sorted them at each scrape (25 ms of a scrape at 1,000 volumes).
            gauge(registry, "hearth.pool.volumes", null, "Volumes in the pool", tags,
                    new Reading(pool, "volumes"), p -> p.ids().size());
            gauge(registry, "hearth.pool.snapshots", null, "Snapshots in the pool", tags,
                    new Reading(pool, "snapshots"), snapshotCount::applyAsInt);
        }
    }

    /**
     * One read shared by the {@code gauges} gauges a scrape reads once each: read afresh by the
     * first of them, reused by the others, and never kept longer than a second.
     */
    private static final class Memo<T> {
        private static final long KEEP_NANOS = 1_000_000_000L;
        private final java.util.function.Supplier<T> read;
        private final int gauges;
        private T value;
        private long readAt;
        private int uses;

        Memo(java.util.function.Supplier<T> read, int gauges) {
            this.read = read;
            this.gauges = gauges;
        }

        synchronized T get() {
            long now = System.nanoTime();
            if (value == null || uses >= gauges || now - readAt > KEEP_NANOS) {
                value = null;
                value = read.get();
                readAt = now;
                uses = 0;
            }
            uses++;
            return value;
        }
    }

    private static boolean healthy(Pool pool) {
        try {
            return pool.problem() == null;
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static void gauge(MeterRegistry registry, String name, String unit, String description, Tags tags,
            Reading reading, ToDoubleFunction<Pool> value) {
        // Held strongly: a Kept has no other owner, and a collected one would read NaN for good.
        Gauge.builder(name, new Kept(reading, value), Kept::read)
                .strongReference(true)
                .baseUnit(unit)
                .description(description)
                .tags(tags)
                .register(registry);
    }

    /** One gauge's value and the last one it read, which it shows while the pool cannot answer. */
    private static final class Kept {

        private final Reading reading;
        private final ToDoubleFunction<Pool> value;
        private volatile double last;

        Kept(Reading reading, ToDoubleFunction<Pool> value) {
            this.reading = reading;
            this.value = value;
        }

        double read() {
            reading.read(value).ifPresent(v -> last = v);
            return last;
        }
    }

    /**
     * One kind of read from one pool, shared by the gauges that make it; logged once when it starts
     * failing, and not again until it has worked.
     */
    private record Reading(Pool pool, String what, AtomicBoolean failing) {

        Reading(Pool pool, String what) {
            this(pool, what, new AtomicBoolean());
        }

        OptionalDouble read(ToDoubleFunction<Pool> value) {
            try {
                double read = value.applyAsDouble(pool);
                failing.set(false);
                return OptionalDouble.of(read);
            } catch (RuntimeException e) {
                if (!failing.getAndSet(true)) {
                    LOG.log(Level.WARNING, () -> "pool '" + pool.name() + "': cannot read its " + what
                            + " for metrics, keeping the last value: " + e);
                }
                return OptionalDouble.empty();
            }
        }
    }
}
