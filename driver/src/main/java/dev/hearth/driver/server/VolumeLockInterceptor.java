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
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * Holds the {@link VolumeLocks} locks of a call's volumes and snapshots while its handler works. The
 * driver says which keys a request takes ({@code keysOf}, normally {@link LockKeys#of}); requests
 * without keys run unlocked. A call gets all its keys or none: one that finds any of them busy gives
 * back those it took and is answered ABORTED, never reaching its handler. Nothing waits, so the order
 * of taking cannot deadlock; it is sorted anyway, so the key a busy call names is predictable.
 */
public final class VolumeLockInterceptor implements ServerInterceptor {

    private final VolumeLocks locks;
    private final Function<Message, Set<String>> keysOf;

    public VolumeLockInterceptor(VolumeLocks locks, Function<Message, Set<String>> keysOf) {
        this.locks = Objects.requireNonNull(locks, "locks");
        this.keysOf = Objects.requireNonNull(keysOf, "keysOf");
    }

    static String busyMessage(String key) {
        String what = LockKeys.snapshotOf(key).map(snapshot -> "snapshot " + Quoted.of(snapshot))
                .or(() -> LockKeys.pathOf(key).map(path -> "path " + Quoted.of(path)))
                .orElseGet(() -> "volume " + Quoted.of(key));
        return "an operation on " + what + " is already in progress";
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
                    Set<String> keys;
                    try {
                        keys = message instanceof Message m ? keysOf.apply(m) : Set.of();
                    } catch (RuntimeException e) {
                        reject(ErrorMapping.toStatus(e));
                        return;
                    }
                    Optional<String> busy = takeAll(keys, locked);
                    if (busy.isPresent()) {
                        reject(Status.ABORTED.withDescription(busyMessage(busy.get())));
                        return;
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

    /** Takes every key for {@code call}, or none and answers the first busy one. */
    private Optional<String> takeAll(Set<String> keys, LockedCall<?, ?> call) {
        List<VolumeLocks.Handle> taken = new ArrayList<>(keys.size());
        for (String key : new TreeSet<>(keys)) {
            Optional<VolumeLocks.Handle> handle = locks.tryLock(key);
            if (handle.isEmpty()) {
                taken.forEach(VolumeLocks.Handle::close);
                return Optional.of(key);
            }
            taken.add(handle.get());
        }
        call.hold(taken);
        return Optional.empty();
    }

    /**
     * Frees the locks just before the answer leaves: a client that retries the moment it has its
     * answer must find its volumes free again.
     */
    private static final class LockedCall<Q, R> extends SimpleForwardingServerCall<Q, R> {

        private final AtomicReference<List<VolumeLocks.Handle>> handles = new AtomicReference<>();

        LockedCall(ServerCall<Q, R> delegate) {
            super(delegate);
        }

        void hold(List<VolumeLocks.Handle> held) {
            handles.set(List.copyOf(held));
        }

        void release() {
            List<VolumeLocks.Handle> held = handles.getAndSet(null);
            if (held != null) {
                held.forEach(VolumeLocks.Handle::close);
            }
        }

        @Override
        public void close(Status status, Metadata trailers) {
            release();
            super.close(status, trailers);
        }
    }
}
