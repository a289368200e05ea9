package dev.hearth.driver.server;

import dev.hearth.storage.StorageException;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.nio.channels.ClosedByInterruptException;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The one place where a failure becomes a gRPC status. Handlers just throw: a {@link
 * StorageException} says what went wrong in storage terms, anything else is a bug and reaches the
 * client as INTERNAL. The hearth services throw only the former (HandlersThrowNoRawStatusTest
 * holds them to it); a {@link StatusRuntimeException}, from grpc itself or a test's service,
 * passes unchanged.
 *
 * <p>Without this interceptor grpc-java would answer UNKNOWN for every exception a handler throws.
 *
 * <p>The failure is told once, by {@link RequestLogging}'s line for the call, which carries the
 * code, the description and, for INTERNAL, the cause's stack trace; here it is logged only at
 * FINE. The exception: a handler that fails after it has answered, which no line would tell.
 */
public final class ErrorMapping implements ServerInterceptor {

    private static final Logger LOG = Logger.getLogger(ErrorMapping.class.getName());

    /**
     * The most a status description may take on the wire, where grpc percent-encodes it into the
     * {@code grpc-message} header: clients refuse headers past 8 KiB by default (and then see a
     * transport error, not the status). Messages quote request values shortly ({@code Quoted});
     * this bound holds even for one that does not.
     */
    static final int MAX_DESCRIPTION_BYTES = 2048;

    /** What the client sees for the throwable; the throwable rides along as the status' cause. */
    public static Status toStatus(Throwable failure) {
        return bounded(switch (failure) {
            case StatusRuntimeException e -> e.getStatus();
            case StatusException e -> e.getStatus();
            case StorageException.Failed f when cutShortByInterrupt(f) -> cutShort(f);
            // No default: adding a StorageException kind breaks this switch until it is mapped.
            case StorageException e -> explained(e, switch (e) {
                case StorageException.NotFound _ -> Status.NOT_FOUND;
                case StorageException.Exhausted _ -> Status.RESOURCE_EXHAUSTED;
                case StorageException.Conflict _ -> Status.ALREADY_EXISTS;
                case StorageException.InvalidArgument _ -> Status.INVALID_ARGUMENT;
                case StorageException.OutOfRange _ -> Status.OUT_OF_RANGE;
                case StorageException.Precondition _ -> Status.FAILED_PRECONDITION;
                case StorageException.Busy _ -> Status.ABORTED;
                case StorageException.UnknownToken _ -> Status.ABORTED;
                case StorageException.Failed _ -> Status.INTERNAL;
            });
            case Throwable t when cutShortByInterrupt(t) -> cutShort(t);
            default -> explained(failure, Status.INTERNAL);
        });
    }

    /**
     * ABORTED for a call the driver's stop interrupted past its grace: nothing is wrong that the
     * caller's retry (on this driver's successor) would not do again. A cause without a message
     * leaves ": null" at the end of the failure's; that part goes.
     */
    private static Status cutShort(Throwable failure) {
        String message = Objects.requireNonNullElse(failure.getMessage(), "the call");
        return Status.ABORTED.withDescription((message.endsWith(": null")
                ? message.substring(0, message.length() - ": null".length()) : message)
                + ": cut short, the driver is stopping; retry").withCause(failure);
    }

    /**
     * Whether the failure comes from an interrupt of the handler's thread: a tool killed for it
     * ({@code Failed.interrupted}), or an interruptible channel closed by it.
     */
    static boolean cutShortByInterrupt(Throwable failure) {
        if (failure instanceof StorageException.Failed f && f.interrupted()) {
            return true;
        }
        Throwable t = failure;
        for (int depth = 0; t != null && depth < 16; depth++, t = t.getCause()) {
            if (t instanceof ClosedByInterruptException || t instanceof InterruptedException
                    || (t instanceof InterruptedIOException && !(t instanceof SocketTimeoutException))) {
                return true;
            }
        }
        return false;
    }

    /** The status with its description cut to {@link #MAX_DESCRIPTION_BYTES} on the wire, if it is longer. */
    static Status bounded(Status status) {
        String description = status.getDescription();
        if (description == null || wireBytes(description) <= MAX_DESCRIPTION_BYTES) {
            return status;
        }
        String ending = "… (" + description.length() + " chars in all)";
        int budget = MAX_DESCRIPTION_BYTES - wireBytes(ending);
        int end = 0;
        for (int used = wireBytes(description.codePointAt(end)); used <= budget;
                used += wireBytes(description.codePointAt(end))) {
            end += Character.charCount(description.codePointAt(end));
        }
        return status.withDescription(description.substring(0, end) + ending);
    }

    private static int wireBytes(String text) {
        return text.codePoints().map(ErrorMapping::wireBytes).sum();
    }

    /** Bytes of the character in UTF-8 (a lone surrogate is sent as '?'), three for each that is percent-encoded. */
    private static int wireBytes(int c) {
        if (c < 0x80) {
            return c >= ' ' && c <= '~' && c != '%' ? 1 : 3;
        }
        if (c >= Character.MIN_SURROGATE && c <= Character.MAX_SURROGATE) {
            return 1;
        }
        return 3 * (c < 0x800 ? 2 : c < 0x10000 ? 3 : 4);
    }

    private static Status explained(Throwable failure, Status status) {
        String message = Objects.requireNonNullElse(failure.getMessage(), failure.getClass().getName());
        return status.withDescription(message).withCause(failure);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        MappingCall<Q, R> mapping = new MappingCall<>(call);
        ServerCall.Listener<Q> listener;
        try {
            listener = next.startCall(mapping, headers);
        } catch (Exception e) {
            mapping.fail(e);
            return new ServerCall.Listener<>() {};
        }
        return new SimpleForwardingServerCallListener<>(listener) {
            @Override
            public void onMessage(Q message) {
                try {
                    super.onMessage(message);
                } catch (Exception e) {
                    mapping.fail(e);
                }
            }

            @Override
            public void onHalfClose() {
                // A unary handler runs here.
                try {
                    super.onHalfClose();
                } catch (Exception e) {
                    mapping.fail(e);
                }
            }

            @Override
            public void onReady() {
                try {
                    super.onReady();
                } catch (Exception e) {
                    mapping.fail(e);
                }
            }
        };
    }

    /** Which exception became which code; the call's line has the rest, the stack trace included. */
    private static void log(Throwable failure, Status status) {
        LOG.fine(() -> "answering " + status.getCode() + " for " + failure);
    }

    /** Remembers whether the call was closed, so that a failure closes it at most once. */
    private static final class MappingCall<Q, R> extends SimpleForwardingServerCall<Q, R> {

        private final AtomicBoolean closed = new AtomicBoolean();

        MappingCall(ServerCall<Q, R> delegate) {
            super(delegate);
        }

        @Override
        public void close(Status status, Metadata trailers) {
            closed.set(true);
            // StreamObserver.onError(storageException) arrives here as UNKNOWN with the cause kept.
            if (status.getCode() == Status.Code.UNKNOWN && status.getCause() != null) {
                Throwable cause = status.getCause();
                Status mapped = toStatus(cause);
                log(cause, mapped);
                super.close(mapped, trailers);
                return;
            }
            super.close(bounded(status), trailers);
        }

        void fail(Exception failure) {
            if (closed.getAndSet(true)) {
                LOG.log(Level.WARNING, "handler failed after it had answered; nothing more to tell the client", failure);
                return;
            }
            Status status = toStatus(failure);
            log(failure, status);
            Metadata trailers = Status.trailersFromThrowable(failure);
            super.close(status, trailers != null ? trailers : new Metadata());
        }
    }
}
