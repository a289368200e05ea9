package dev.hearth.driver;

import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetPluginInfoResponse;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.csi.v1.ProbeResponse;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code hearth probe}: asks a running driver over its socket whether it is ready, as the
 * livenessprobe sidecar and the external-provisioner do, and says what it answered. For an
 * operator ({@code kubectl exec ds/hearth-node -c hearth -- hearth probe}) and for scripts that
 * wait for a driver.
 */
@Command(name = "probe", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {"Ask a running CSI driver whether it is ready: call Probe (and GetPluginInfo) on its socket.",
                "Exit status: 0 ready, 1 answering but not ready (the reason is printed), 2 a bad command line, 3 no answer."})
final class ProbeCommand implements Callable<Integer> {

    static final int NOT_READY = 1;
    static final int UNREACHABLE = 3;

    @Spec
    CommandSpec spec;

    @Option(names = "--endpoint", defaultValue = "unix:///csi/csi.sock", paramLabel = "URL",
            description = "The driver's socket: unix:///path/to/csi.sock or tcp://host:port. Default: ${DEFAULT-VALUE}.")
    String endpoint;

    @Option(names = "--timeout", defaultValue = "5s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long to wait for the answer (e.g. 500ms, 5s). Default: 5s.")
    Duration timeout;

    @Override
    public Integer call() {
        Endpoint target;
        try {
            target = Endpoint.parse(endpoint);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--endpoint: " + e.getMessage());
        }
        if (timeout.isZero() || timeout.isNegative()) {
            throw new ParameterException(spec.commandLine(), "--timeout must be positive, got " + timeout);
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        ManagedChannel channel = Channels.channelTo(target);
        try {
            var identity = IdentityGrpc.newBlockingStub(channel);
            long deadline = System.nanoTime() + timeout.toNanos();
            ProbeResponse probe = identity.withDeadlineAfter(remaining(deadline), TimeUnit.NANOSECONDS)
                    .probe(ProbeRequest.getDefaultInstance());
            GetPluginInfoResponse info = identity.withDeadlineAfter(remaining(deadline), TimeUnit.NANOSECONDS)
                    .getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
            String who = info.getName() + " " + info.getVendorVersion() + " at " + endpoint;
            // CSI: an unset ready field means ready.
            if (probe.hasReady() && !probe.getReady().getValue()) {
                out.println("not ready: " + who + " (still starting)");
                return NOT_READY;
            }
            out.println("ready: " + who);
            return 0;
        } catch (StatusRuntimeException e) {
            Status status = e.getStatus();
            String description = (status.getDescription() == null ? "" : ": " + status.getDescription())
                    + rootCause(status.getCause()).map(m -> " (" + m + ")").orElse("");
            return switch (status.getCode()) {
                case UNAVAILABLE -> {
                    err.println("cannot reach " + endpoint + " (" + status.getCode() + description
                            + "): is the driver running, and is this its socket?");
                    yield UNREACHABLE;
                }
                case DEADLINE_EXCEEDED -> {
                    err.println("no answer from " + endpoint + " within " + timeout.toMillis() + " ms");
                    yield UNREACHABLE;
                }
                default -> {
                    out.println("not ready: " + endpoint + " answered " + status.getCode() + description);
                    yield NOT_READY;
                }
            };
        } finally {
            out.flush();
            err.flush();
            channel.shutdownNow();
            try {
                channel.awaitTermination(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The innermost message of a failure's causes: what the socket said (connect failed: No such file...). */
    private static java.util.Optional<String> rootCause(Throwable failure) {
        String message = null;
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t.getMessage() != null) {
                message = t.getMessage();
            }
        }
        return java.util.Optional.ofNullable(message);
    }

    private static long remaining(long deadline) {
        return Math.max(1, deadline - System.nanoTime());
    }
}
