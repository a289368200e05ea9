package dev.hearth.linux;

/** Process attributes the JDK does not expose. */
public final class Posix {

    private Posix() {}

    /** Sets the process-wide file mode creation mask and returns the previous one. */
    public static int umask(int mask) {
        return Libc.umask(mask);
    }

    public static int geteuid() {
        return Libc.geteuid();
    }
}
