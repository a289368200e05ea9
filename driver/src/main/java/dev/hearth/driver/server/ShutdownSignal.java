package dev.hearth.driver.server;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * Turns SIGTERM (kubelet stopping the pod) and SIGINT (Ctrl-C) into one run of a shutdown action.
 * A shutdown hook cannot do this: the JVM would still exit with 143 and report the pod as failed;
 * the action here can finish the graceful stop and then {@code System.exit(0)}.
 */
public final class ShutdownSignal implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(ShutdownSignal.class.getName());

    private static final List<String> SIGNALS = List.of("TERM", "INT");

    private final Map<Signal, SignalHandler> previous = new LinkedHashMap<>();
    private final AtomicBoolean fired = new AtomicBoolean();
    private final Consumer<String> action;

    private ShutdownSignal(Consumer<String> action) {
        this.action = action;
    }

    /**
     * Runs {@code action} on the first SIGTERM or SIGINT, in the JVM's signal thread; later signals
     * only log, so a second Ctrl-C cannot start a second shutdown.
     */
    public static ShutdownSignal install(Runnable action) {
        return install(signal -> action.run());
    }

    /** As {@link #install(Runnable)}, telling {@code action} which signal came ("TERM" or "INT"). */
    public static ShutdownSignal install(Consumer<String> action) {
        ShutdownSignal installed = new ShutdownSignal(action);
        for (String name : SIGNALS) {
            Signal signal = new Signal(name);
            try {
                installed.previous.put(signal, Signal.handle(signal, installed::handle));
            } catch (IllegalArgumentException e) {
                // The JVM keeps the signal for itself (-Xrs) or the OS does not allow it.
                LOG.warning(() -> "cannot handle SIG" + name + ": " + e.getMessage());
            }
        }
        return installed;
    }

    /** The signals handled, by name ("TERM", "INT"). */
    public List<String> signals() {
        return previous.keySet().stream().map(Signal::getName).toList();
    }

    private void handle(Signal signal) {
        if (!fired.compareAndSet(false, true)) {
            LOG.info(() -> "received SIG" + signal.getName() + ", already shutting down");
            return;
        }
        LOG.info(() -> "received SIG" + signal.getName() + ", shutting down");
        try {
            action.accept(signal.getName());
        } catch (RuntimeException | Error e) {
            LOG.log(Level.SEVERE, "shutdown failed", e);
            throw e;
        }
    }

    /** Puts back the handlers that were there before. */
    @Override
    public void close() {
        previous.forEach(Signal::handle);
    }
}
