package dev.hearth.driver.server;

import static dev.hearth.driver.server.TestServer.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import org.junit.jupiter.api.Test;
import sun.misc.Signal;

class ShutdownSignalTest {

    @Test
    void firstSigtermRunsTheActionAndLaterOnesDoNot() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        try (CapturedLog log = CapturedLog.of(ShutdownSignal.class, Level.INFO);
                ShutdownSignal signals = ShutdownSignal.install(runs::incrementAndGet)) {
            // Without our handler a raised SIGTERM would end the test JVM.
            assumeTrue(signals.signals().contains("TERM"), "SIGTERM cannot be handled here");

            Signal.raise(new Signal("TERM"));
            waitUntil(() -> runs.get() == 1);
            Signal.raise(new Signal("TERM"));
            // Closing before the second one is handled would hand it to the JVM's default handler.
            waitUntil(() -> log.messages().contains("received SIGTERM, already shutting down"));

            assertThat(runs).hasValue(1);
            assertThat(log.messages()).contains("received SIGTERM, shutting down");
        }
    }

    @Test
    void handlesTermAndInt() {
        try (ShutdownSignal signals = ShutdownSignal.install(() -> {})) {
            assertThat(signals.signals()).containsExactly("TERM", "INT");
        }
    }
}
