package dev.hearth.driver.server;

import com.google.protobuf.Message;
import dev.hearth.storage.Quoted;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * Holds the {@link VolumeLocks} lock of a call's volume while its handler works. The driver says
 * which volume a request is about ({@code keyOf}); requests without a key run unlocked. A call
 * whose volume is busy is answered ABORTED and never reaches its handler.
 */
public final class VolumeLockInterceptor implements ServerInterceptor {

    private final VolumeLocks locks;
    private final Function<Message, Optional<String>> keyOf;

    public VolumeLockInterceptor(VolumeLocks locks, Function<Message, Optional<String>> keyOf) {
        this.locks = Objects.requireNonNull(locks, "locks");
        this.keyOf = Objects.requireNonNull(keyOf, "keyOf");
    }

    static String busyMessage(String key) {
        return "an operation on volume " + Quoted.of(key) + " is already in progress";
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        LockedCall<Q, R> locked = new LockedCall<>(call);
        ServerCall.Listener<Q> listener = next.startCall(locked, headers);
        return new SimpleForwardingServerCallListener<>(listener) {
            // Listener callbacks of one call never overlap, so plain fields are enough here.
            private boolean keyed;
            private boolean rejected;

            @Override
            public void onMessage(Q message) {
                if (rejected) {
                    return;
                }
                if (!keyed) {
                    keyed = true;
                    Optional<String> key;
                    try {
                        key = message instanceof Message m ? keyOf.apply(m) : Optional.empty();
                    } catch (RuntimeException e) {
                        reject(ErrorMapping.toStatus(e));
                        return;
                    }
                    if (key.isPresent()) {
                        Optional<VolumeLocks.Handle> handle = locks.tryLock(key.get());
                        if (handle.isEmpty()) {
                            reject(Status.ABORTED.withDescription(busyMessage(key.get())));
                            return;
                        }
                        locked.hold(handle.get());
                    }
                }
                try {
                    super.onMessage(message);
                } catch (RuntimeException | Error e) {
                    locked.release();
                    throw e;
                }
            }

            private void reject(Status status) {
                rejected = true;
                call.close(status, new Metadata());
            }

            @Override
            public void onHalfClose() {
                if (rejected) {
                    return;
                }
                try {
                    super.onHalfClose();
                } catch (RuntimeException | Error e) {
                    locked.release();
                    throw e;
                }
            }

            @Override
            public void onReady() {
                if (!rejected) {
                    super.onReady();
                }
            }

            @Override
            public void onCancel() {
                try {
                    super.onCancel();
                } finally {
                    locked.release();
                }
            }

            @Override
            public void onComplete() {
                try {
                    super.onComplete();
                } finally {
                    locked.release();
                }
            }
        };
    }

    /**
     * Frees the lock just before the answer leaves: a client that retries the moment it has its
     * answer must find the volume free again.
     */
    private static final class LockedCall<Q, R> extends SimpleForwardingServerCall<Q, R> {

        private final AtomicReference<VolumeLocks.Handle> handle = new AtomicReference<>();

        LockedCall(ServerCall<Q, R> delegate) {
            super(delegate);
        }

        void hold(VolumeLocks.Handle held) {
            handle.set(held);
        }

        void release() {
            VolumeLocks.Handle held = handle.getAndSet(null);
            if (held != null) {
                held.close();
            }
        }

        @Override
        public void close(Status status, Metadata trailers) {
            release();
            super.close(status, trailers);
        }
    }
}
