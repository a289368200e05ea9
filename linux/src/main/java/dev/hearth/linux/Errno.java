package dev.hearth.linux;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Linux errno numbers (x86_64/aarch64 share them) with their symbolic names and glibc's texts.
 * The table keeps messages identical whatever libc or locale the process runs with; numbers it
 * does not know are named by glibc's {@code strerrorname_np} when present.
 */
public final class Errno {

    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int ENXIO = 6;
    public static final int E2BIG = 7;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int ENOTBLK = 15;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int EXDEV = 18;
    public static final int ENODEV = 19;
    public static final int ENOTDIR = 20;
    public static final int EISDIR = 21;
    public static final int EINVAL = 22;
    public static final int ENFILE = 23;
    public static final int EMFILE = 24;
    public static final int ENOTTY = 25;
    public static final int ETXTBSY = 26;
    public static final int EFBIG = 27;
    public static final int ENOSPC = 28;
    public static final int EROFS = 30;
    public static final int ERANGE = 34;
    public static final int ENAMETOOLONG = 36;
    public static final int ENOSYS = 38;
    public static final int ENOTEMPTY = 39;
    public static final int ELOOP = 40;
    public static final int ENODATA = 61;
    /** Also EFSBADCRC: a filesystem's metadata failed its checksum. */
    public static final int EBADMSG = 74;
    public static final int EOVERFLOW = 75;
    public static final int EOPNOTSUPP = 95;
    public static final int ENOTCONN = 107;
    public static final int ETIMEDOUT = 110;
    public static final int ESTALE = 116;
    /** What ext4/xfs report for a corrupted filesystem, e.g. on mount. */
    public static final int EUCLEAN = 117;
    public static final int EDQUOT = 122;

    private record Info(String name, String text) {}

    private static final Map<Integer, Info> TABLE = Map.ofEntries(
            entry(EPERM, "EPERM", "Operation not permitted"),
            entry(ENOENT, "ENOENT", "No such file or directory"),
            entry(ESRCH, "ESRCH", "No such process"),
            entry(EINTR, "EINTR", "Interrupted system call"),
            entry(EIO, "EIO", "Input/output error"),
            entry(ENXIO, "ENXIO", "No such device or address"),
            entry(E2BIG, "E2BIG", "Argument list too long"),
            entry(EBADF, "EBADF", "Bad file descriptor"),
            entry(EAGAIN, "EAGAIN", "Resource temporarily unavailable"),
            entry(ENOMEM, "ENOMEM", "Cannot allocate memory"),
            entry(EACCES, "EACCES", "Permission denied"),
            entry(EFAULT, "EFAULT", "Bad address"),
            entry(ENOTBLK, "ENOTBLK", "Block device required"),
            entry(EBUSY, "EBUSY", "Device or resource busy"),
            entry(EEXIST, "EEXIST", "File exists"),
            entry(EXDEV, "EXDEV", "Invalid cross-device link"),
            entry(ENODEV, "ENODEV", "No such device"),
            entry(ENOTDIR, "ENOTDIR", "Not a directory"),
            entry(EISDIR, "EISDIR", "Is a directory"),
            entry(EINVAL, "EINVAL", "Invalid argument"),
            entry(ENFILE, "ENFILE", "Too many open files in system"),
            entry(EMFILE, "EMFILE", "Too many open files"),
            entry(ENOTTY, "ENOTTY", "Inappropriate ioctl for device"),
            entry(ETXTBSY, "ETXTBSY", "Text file busy"),
            entry(EFBIG, "EFBIG", "File too large"),
            entry(ENOSPC, "ENOSPC", "No space left on device"),
            entry(EROFS, "EROFS", "Read-only file system"),
            entry(ERANGE, "ERANGE", "Numerical result out of range"),
            entry(ENAMETOOLONG, "ENAMETOOLONG", "File name too long"),
            entry(ENOSYS, "ENOSYS", "Function not implemented"),
            entry(ENOTEMPTY, "ENOTEMPTY", "Directory not empty"),
            entry(ELOOP, "ELOOP", "Too many levels of symbolic links"),
            entry(ENODATA, "ENODATA", "No data available"),
            entry(EBADMSG, "EBADMSG", "Bad message"),
            entry(EOVERFLOW, "EOVERFLOW", "Value too large for defined data type"),
            entry(EOPNOTSUPP, "EOPNOTSUPP", "Operation not supported"),
            entry(ENOTCONN, "ENOTCONN", "Transport endpoint is not connected"),
            entry(ETIMEDOUT, "ETIMEDOUT", "Connection timed out"),
            entry(ESTALE, "ESTALE", "Stale file handle"),
            entry(EUCLEAN, "EUCLEAN", "Structure needs cleaning"),
            entry(EDQUOT, "EDQUOT", "Disk quota exceeded"));

    private Errno() {}

    /**
     * Whether a mount's errno says the filesystem itself is damaged: EUCLEAN is the kernel's
     * EFSCORRUPTED, EBADMSG its EFSBADCRC (metadata failing its checksum).
     */
    public static boolean damagedFilesystem(int errno) {
        return errno == EUCLEAN || errno == EBADMSG;
    }

    /** The symbolic name, e.g. {@code "EBUSY"}; {@code "errno 200"} for numbers nobody knows. */
    public static String name(int errno) {
        Info info = TABLE.get(errno);
        if (info != null) {
            return info.name();
        }
        return fromLibc(Libc.strerrorname(), errno).orElse("errno " + errno);
    }

    /** The text {@code strerror} would give in the C locale, e.g. {@code "Device or resource busy"}. */
    public static String description(int errno) {
        Info info = TABLE.get(errno);
        if (info != null) {
            return info.text();
        }
        return fromLibc(Libc.strerrordesc(), errno).orElse("Unknown error " + errno);
    }

    /** The number for a symbolic name this class has a constant for, e.g. {@code "EBUSY"} -> 16. */
    public static OptionalInt byName(String name) {
        return TABLE.entrySet().stream()
                .filter(e -> e.getValue().name().equals(name))
                .mapToInt(Map.Entry::getKey)
                .findFirst();
    }

    private static Map.Entry<Integer, Info> entry(int errno, String name, String text) {
        return Map.entry(errno, new Info(name, text));
    }

    // Both functions return a pointer to static storage, or NULL for an unknown number.
    @SuppressWarnings("restricted")
    private static Optional<String> fromLibc(Optional<MethodHandle> function, int errno) {
        return function.map(f -> {
            try {
                MemorySegment text = (MemorySegment) f.invokeExact(errno);
                return text.equals(MemorySegment.NULL) ? null : text.reinterpret(256).getString(0);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        });
    }
}
