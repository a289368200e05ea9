package dev.hearth.driver.metrics;

import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * The readiness check behind {@code /healthz} and {@code hearth_ready}, which logs when the answer
 * changes: a WARNING with the reason when the driver stops being ready (or is not ready for another
 * reason), an INFO when it is ready again. Once per change, however often it is asked: the kubelet
 * probes every few seconds and Prometheus scrapes as often. Being ready at the first check is no
 * change and logs nothing; the start line has said that the driver serves.
 */
final class Readiness implements Supplier<Optional<String>> {

    private static final Logger LOG = Logger.getLogger(Readiness.class.getName());

    /** What the last check found: null before the first, else empty when ready or the reason why not. */
    private final AtomicReference<Optional<String>> last = new AtomicReference<>();
    private final Supplier<Optional<String>> problem;

    /** @param problem what keeps the driver from serving, empty when nothing does */
    Readiness(Supplier<Optional<String>> problem) {
        this.problem = problem;
    }

    /** Checks now; empty when ready, else the reason. */
    @Override
    public Optional<String> get() {
        Optional<String> now = Objects.requireNonNull(problem.get(), "readiness check answered null");
        Optional<String> before = last.getAndSet(now);
        if (!now.equals(before == null ? Optional.empty() : before)) {
            // Two checks racing over one change both see it; getAndSet lets only the first log it.
            if (now.isPresent()) {
                LOG.warning(() -> "not ready: " + now.get());
            } else {
                LOG.info(() -> "ready again; it was not ready: " + before.orElseThrow());
            }
        }
        return now;
    }

    /** 1 when ready, else 0: the gauge's view of the same check, logged the same way. */
    double asGauge() {
        return get().isEmpty() ? 1 : 0;
    }
}
