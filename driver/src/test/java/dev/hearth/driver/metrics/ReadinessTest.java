package dev.hearth.driver.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.driver.server.CapturedLog;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ReadinessTest {

    private static final String GONE = "pool 'default': directory /var/lib/hearth/pools/default is missing or not writable";

    private final AtomicReference<Optional<String>> problem = new AtomicReference<>(Optional.empty());
    private final Readiness readiness = new Readiness(problem::get);
    private CapturedLog log;

    @BeforeEach
    void capture() {
        log = CapturedLog.of(Readiness.class, Level.ALL);
    }

    @AfterEach
    void release() {
        log.close();
    }

    private void check(int times) {
        for (int i = 0; i < times; i++) {
            readiness.get();
        }
    }

    @Test
    void readyFromTheStartLogsNothing() {
        check(3);

        assertThat(readiness.get()).isEmpty();
        assertThat(log.records()).isEmpty();
    }

    @Test
    void losingReadinessIsOneWarningWithTheReasonAndRegainingItOneInfo() {
        check(2);
        problem.set(Optional.of(GONE));
        check(5);
        problem.set(Optional.empty());
        check(5);

        assertThat(log.records()).satisfiesExactly(
                r -> {
                    assertThat(r.getLevel()).isEqualTo(Level.WARNING);
                    assertThat(r.getMessage()).isEqualTo("not ready: " + GONE);
                },
                r -> {
                    assertThat(r.getLevel()).isEqualTo(Level.INFO);
                    assertThat(r.getMessage()).isEqualTo("ready again; it was not ready: " + GONE);
                });
    }

    @Test
    void notReadyAtTheFirstCheckIsLogged() {
        problem.set(Optional.of(GONE));

        check(3);

        assertThat(log.records()).extracting(LogRecord::getMessage).containsExactly("not ready: " + GONE);
    }

    @Test
    void anotherReasonWhileNotReadyIsLoggedAsWell() {
        problem.set(Optional.of(GONE));
        check(2);
        problem.set(Optional.of("pool 'fast': statvfs failed: EIO"));
        check(2);

        assertThat(log.records()).extracting(LogRecord::getMessage)
                .containsExactly("not ready: " + GONE, "not ready: pool 'fast': statvfs failed: EIO");
    }

    @Test
    void theGaugeIsOneWhileReadyAndZeroWhileNot() {
        assertThat(readiness.asGauge()).isEqualTo(1.0);
        problem.set(Optional.of(GONE));
        assertThat(readiness.asGauge()).isEqualTo(0.0);
        assertThat(readiness.get()).hasValue(GONE);
        assertThat(log.records()).hasSize(1);
    }
}
