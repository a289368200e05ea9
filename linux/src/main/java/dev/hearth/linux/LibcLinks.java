package dev.hearth.linux;

/**
 * The libc functions hearth calls are linked on their first use, so that a start links only the
 * few it needs (each costs a cold JVM about 5 ms). {@link #linkAll} links the rest ahead of a
 * request: the driver's warm-up calls it.
 */
public final class LibcLinks {

    private LibcLinks() {}

    /** Links every function not linked yet, calling none; returns how many there are. */
    public static int linkAll() {
        return Libc.linkAll();
    }
}
