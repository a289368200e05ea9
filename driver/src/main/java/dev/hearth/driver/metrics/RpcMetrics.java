package dev.hearth.driver.metrics;

import io.grpc.Context;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.micrometer.core.instrument.Clock;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Counts and times every finished call by method and status code, as
 * {@code hearth_rpc_requests_total} and the histogram {@code hearth_rpc_duration_seconds}. Goes
 * outside {@code ErrorMapping}, so it sees the code the client gets; a call the client gave up on
 * (cancelled, or past its deadline) counts as CANCELLED, whatever its handler answered later.
 */
public final class RpcMetrics implements ServerInterceptor {

    /**
     * Bucket bounds from a GetPluginInfo (well under a millisecond) to a mkfs or a thick allocation
     * of a large volume (tens of seconds). Fixed bounds rather than micrometer's percentile
     * histogram, whose ~70 buckets per method and code would outweigh every other series.
     */
    private static final List<Duration> BUCKETS = List.of(
            Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25),
            Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500),
            Duration.ofSeconds(1), Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10),
            Duration.ofSeconds(30), Duration.ofSeconds(60));

    private final MeterRegistry registry;
    private final Clock clock;
    /** Meters by method, then by code's ordinal: a call finds its pair without building an ID. */
    private final ConcurrentHashMap<String, AtomicReferenceArray<Meters>> meters = new ConcurrentHashMap<>();

    public RpcMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.clock = registry.config().clock();
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Rpc rpc = new Rpc(call.getMethodDescriptor().getBareMethodName(), Context.current(), clock.monotonicTime());
        ServerCall<Q, R> measured = new SimpleForwardingServerCall<>(call) {
            @Override
            public void close(Status status, Metadata trailers) {
                // Counted before the answer leaves, so a scrape after the client has it includes it.
                // The call's context learns of a cancel at once; onCancel waits for a blocked handler.
                finish(rpc, rpc.context.isCancelled() ? Status.Code.CANCELLED : status.getCode());
                super.close(status, trailers);
            }
        };
        return new SimpleForwardingServerCallListener<>(next.startCall(measured, headers)) {
            @Override
            public void onCancel() {
                finish(rpc, Status.Code.CANCELLED);
                super.onCancel();
            }
        };
    }

    /**
     * Registers these methods' meters for code OK now, off any call's time: a method's first call
     * otherwise builds its counter and its histogram of 14 buckets in the registry (0.2-0.4 ms each
     * once the registry's code has run, several ms before), and their series are there, at zero,
     * from the start, which is what Prometheus' rate() and increase() need of a first sample.
     */
    public void prepare(Collection<String> methods) {
        for (String method : methods) {
            metersOf(method, Status.Code.OK);
        }
    }

    private void finish(Rpc rpc, Status.Code code) {
        if (rpc.finished.getAndSet(true)) {
            return;
        }
        Meters pair = metersOf(rpc.method, code);
        pair.requests.increment();
        pair.duration.record(clock.monotonicTime() - rpc.started, TimeUnit.NANOSECONDS);
    }

    private Meters metersOf(String method, Status.Code code) {
        AtomicReferenceArray<Meters> byCode =
                meters.computeIfAbsent(method, m -> new AtomicReferenceArray<>(Status.Code.values().length));
        Meters found = byCode.get(code.ordinal());
        if (found == null) {
            // A race registers the same meters twice; the registry hands both callers the same ones.
            found = Meters.register(registry, method, code);
            byCode.set(code.ordinal(), found);
        }
        return found;
    }

    private record Meters(Counter requests, Timer duration) {

        static Meters register(MeterRegistry registry, String method, Status.Code code) {
            String name = code.name();
            return new Meters(
                    Counter.builder("hearth.rpc.requests")
                            .description("CSI calls finished, by method and gRPC status code")
                            .tags("method", method, "code", name)
                            .register(registry),
                    Timer.builder("hearth.rpc.duration")
                            .description("How long CSI calls took, from arrival to answer")
                            .tags("method", method, "code", name)
                            .serviceLevelObjectives(BUCKETS.toArray(Duration[]::new))
                            .register(registry));
        }
    }

    /** One call: its method, context and start; finished once, by the answer or the cancel. */
    private record Rpc(String method, Context context, long started, AtomicBoolean finished) {
        Rpc(String method, Context context, long started) {
            this(method, context, started, new AtomicBoolean());
        }
    }
}
