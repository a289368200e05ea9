package dev.hearth.linux;

import java.io.IOException;

/**
 * A Linux call failed with an errno. The message reads like
 * {@code mount(/dev/loop3 -> /mnt/x, ext4): EBUSY (Device or resource busy)} so a log line alone
 * says what was attempted on what, and callers branch on {@link #is(int)} rather than on text.
 */
public class LinuxException extends IOException {

    private static final long serialVersionUID = 1L;

    private final String call;
    private final String arguments;
    private final int errno;

    /**
     * @param call      the function or ioctl, e.g. {@code "mount"} or {@code "ioctl LOOP_CONFIGURE"}
     * @param arguments what it was called on, as a human reads it
     * @param errno     the positive errno value
     */
    public LinuxException(String call, String arguments, int errno) {
        super(call + "(" + arguments + "): " + Errno.name(errno) + " (" + Errno.description(errno) + ")");
        this.call = call;
        this.arguments = arguments;
        this.errno = errno;
    }

    public String call() {
        return call;
    }

    public String arguments() {
        return arguments;
    }

    public int errno() {
        return errno;
    }

    /** The symbolic errno, e.g. {@code "EBUSY"}. */
    public String errnoName() {
        return Errno.name(errno);
    }

    public boolean is(int errno) {
        return this.errno == errno;
    }
}
