package dev.hearth.storage;

/**
 * What a pool knows for certain about whether a volume has ever been written: the proof that a
 * blank-looking volume may be formatted. A signature probe only samples a device (its first and
 * last MiB); a raw block user may have written anywhere in between. Only {@link Proven} permits a
 * format.
 */
public sealed interface Emptiness {

    /** Nothing but zeros anywhere, known from the pool's own records (an image's extent map, say). */
    record Proven() implements Emptiness {}

    /** Something was written, and where. */
    record Written(String evidence) implements Emptiness {}

    /** The pool cannot tell (history unknown, or more written than it checks): never formatted. */
    record Unknown(String why) implements Emptiness {}

    Emptiness PROVEN = new Proven();

    /** For error messages: why this is not proof of emptiness. */
    default String describe() {
        return switch (this) {
            case Proven _ -> "proven empty";
            case Written w -> w.evidence();
            case Unknown u -> u.why();
        };
    }
}
