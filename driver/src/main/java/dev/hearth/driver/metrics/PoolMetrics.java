package dev.hearth.driver.metrics;

import dev.hearth.storage.Pool;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.ToDoubleFunction;
import java.util.function.ToIntFunction;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Gauges of each pool's space and contents, tagged {@code pool} and {@code kind}, read from the
 * pool whenever they are scraped. A pool that cannot answer shows NaN for that gauge, so one broken
 * pool leaves the rest of the scrape intact; {@code /healthz} is where its problem is told.
 */
public final class PoolMetrics implements MeterBinder {

    private static final Logger LOG = Logger.getLogger(PoolMetrics.class.getName());

    private final List<Pool> pools;
    private final ToIntFunction<Pool> snapshotCount;

    /**
     * @param snapshotCount how many snapshots a pool holds; a function because not every pool kind
     *     can tell yet, and one that throws shows as NaN
     */
    public PoolMetrics(List<Pool> pools, ToIntFunction<Pool> snapshotCount) {
        this.pools = List.copyOf(pools);
        this.snapshotCount = snapshotCount;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (Pool pool : pools) {
            Tags tags = Tags.of("pool", pool.name(), "kind", pool.kind());
            // capacity() is a statvfs and a directory listing: read once per gauge rather than cached,
            // so that a scrape right after a create already shows it.
            Reading capacity = new Reading(pool, "capacity");
            gauge(registry, "hearth.pool.capacity", "bytes", "The most the pool's volumes may add up to", tags,
                    capacity, p -> p.capacity().totalBytes());
            gauge(registry, "hearth.pool.allocated", "bytes", "What the pool's volumes hold", tags,
                    capacity, p -> p.capacity().allocatedBytes());
            gauge(registry, "hearth.pool.available", "bytes", "What one more volume could get", tags,
                    capacity, p -> p.capacity().availableBytes());
            gauge(registry, "hearth.pool.volumes", null, "Volumes in the pool", tags,
                    new Reading(pool, "volumes"), p -> p.list().size());
            gauge(registry, "hearth.pool.snapshots", null, "Snapshots in the pool", tags,
                    new Reading(pool, "snapshots"), snapshotCount::applyAsInt);
        }
    }

    private static void gauge(MeterRegistry registry, String name, String unit, String description, Tags tags,
            Reading reading, ToDoubleFunction<Pool> value) {
        // Held strongly: a Reading has no other owner, and a collected one would read NaN for good.
        Gauge.builder(name, reading, r -> r.read(value))
                .strongReference(true)
                .baseUnit(unit)
                .description(description)
                .tags(tags)
                .register(registry);
    }

    /** One kind of read from one pool; logged when it starts failing, not again until it has worked. */
    private record Reading(Pool pool, String what, AtomicBoolean failing) {

        Reading(Pool pool, String what) {
            this(pool, what, new AtomicBoolean());
        }

        double read(ToDoubleFunction<Pool> value) {
            try {
                double read = value.applyAsDouble(pool);
                failing.set(false);
                return read;
            } catch (RuntimeException e) {
                if (!failing.getAndSet(true)) {
                    LOG.log(Level.FINE, e, () -> "pool '" + pool.name() + "': cannot read its " + what
                            + " for metrics, reporting NaN: " + e);
                }
                return Double.NaN;
            }
        }
    }
}
