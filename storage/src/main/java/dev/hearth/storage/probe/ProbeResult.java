package dev.hearth.storage.probe;

import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/** What {@link SignatureProbe} found on a device. Only {@link Empty} permits formatting. */
public sealed interface ProbeResult {

    /**
     * No known signature, the first and last MiB (or the whole device) are zeros, and none of the
     * places libblkid looks beyond them holds a header.
     */
    record Empty() implements ProbeResult {
        @Override
        public String describe() {
            return "empty";
        }
    }

    /** At least one known signature, ordered by offset. */
    record Signed(List<Signature> found) implements ProbeResult {
        public Signed {
            if (found.isEmpty()) {
                throw new IllegalArgumentException("a signed result needs at least one signature");
            }
            found = found.stream().sorted(Comparator.comparingLong(Signature::offset)).toList();
        }

        /** Signatures at their primary location: what a mount or an assembler would see. */
        public List<Signature> primary() {
            return found.stream().filter(s -> !s.backup()).toList();
        }

        @Override
        public String describe() {
            return "holds " + String.join(", ", found.stream().map(Signature::toString).toList());
        }
    }

    /** No known signature, but data where an empty device has none. */
    record NotEmpty(String reason) implements ProbeResult {
        public NotEmpty {
            Objects.requireNonNull(reason, "reason");
        }

        @Override
        public String describe() {
            return reason;
        }
    }

    ProbeResult EMPTY = new Empty();

    /** One line for logs and error messages. */
    String describe();

    default boolean isEmpty() {
        return this instanceof Empty;
    }
}
