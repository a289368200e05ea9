package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/** File calls java.nio lacks: space reservation, allocated size, reflinks and the map of a sparse file's data. */
public final class FileOps {

    /**
     * The leading part of {@code struct statx} (linux/stat.h); the layout is the same on every
     * architecture, unlike {@code struct stat}. The full struct is 256 bytes.
     */
    static final StructLayout STATX_HEAD = MemoryLayout.structLayout(
            JAVA_INT.withName("stx_mask"),
            JAVA_INT.withName("stx_blksize"),
            JAVA_LONG.withName("stx_attributes"),
            JAVA_INT.withName("stx_nlink"),
            JAVA_INT.withName("stx_uid"),
            JAVA_INT.withName("stx_gid"),
            JAVA_SHORT.withName("stx_mode"),
            JAVA_SHORT.withName("__spare0"),
            JAVA_LONG.withName("stx_ino"),
            JAVA_LONG.withName("stx_size"),
            JAVA_LONG.withName("stx_blocks"));
    static final long STATX_SIZE = 256;
    private static final int STATX_BLOCKS = 0x400;
    /** {@code _IOW(0x94, 9, int)}: the target fd's file becomes a copy-on-write clone of the argument fd's. */
    static final long FICLONE = 0x40049409L;

    private FileOps() {}

    /**
     * Reserves {@code [offset, offset + length)} in {@code file} (mode 0: may extend the size), so
     * later writes cannot fail for lack of space. ENOSPC and EOPNOTSUPP surface as {@link LinuxException}.
     */
    public static void fallocate(Path file, long offset, long length) throws LinuxException {
        try (Arena arena = Arena.ofConfined();
             Fd fd = Fd.open(arena, file, Libc.O_RDWR)) {
            int rc = Libc.fallocate(arena, fd.value(), 0, offset, length);
            if (rc < 0) {
                throw new LinuxException("fallocate", file + ", offset=" + offset + ", length=" + length, -rc);
            }
        }
    }

    /**
     * Makes the file, or the directory's entries (renames, deletions), durable: {@code fsync}.
     * Unlike {@code FileChannel.force} an interrupt of the calling thread does not abort it: a
     * record the driver commits is committed whole even by a call that the driver's stop cuts short.
     */
    public static void sync(Path fileOrDirectory) throws LinuxException {
        try (Arena arena = Arena.ofConfined();
             Fd fd = Fd.open(arena, fileOrDirectory, Libc.O_RDONLY)) {
            int rc = Libc.fsync(arena, fd.value());
            if (rc < 0) {
                throw new LinuxException("fsync", fileOrDirectory.toString(), -rc);
            }
        }
    }

    /**
     * Removes a file, or with {@code directory} an empty directory ({@code unlinkat}, {@code rmdir}'s
     * flag): unlike {@code Files.delete}, a refusal says its errno, so that a caller can tell the
     * node's state (EBUSY: a mount point somewhere on the node; EROFS: on a read-only mount) from a
     * failure.
     */
    public static void remove(Path path, boolean directory) throws LinuxException {
        try (Arena arena = Arena.ofConfined()) {
            int rc = Libc.unlinkat(arena, path.toString(), directory ? Libc.AT_REMOVEDIR : 0);
            if (rc < 0) {
                throw new LinuxException(directory ? "rmdir" : "unlink", path.toString(), -rc);
            }
        }
    }

    /** Bytes of storage the file occupies ({@code st_blocks * 512}); less than its size when sparse. */
    public static long allocatedBytes(Path file) throws LinuxException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(STATX_SIZE, 8);
            int rc = Libc.statx(arena, file.toString(), 0, STATX_BLOCKS, buf);
            if (rc < 0) {
                throw new LinuxException("statx", file.toString(), -rc);
            }
            return buf.get(JAVA_LONG, STATX_HEAD.byteOffset(MemoryLayout.PathElement.groupElement("stx_blocks"))) * 512;
        }
    }

    /**
     * Makes {@code target} (created, or truncated if it exists) share all of {@code source}'s blocks
     * copy-on-write (FICLONE): instant, no extra space, and later writes to either file leave the other
     * alone. Filesystems without reflinks refuse: EOPNOTSUPP (ext4, tmpfs, xfs made with reflink=0),
     * EXDEV (the two files are on different filesystems), EINVAL or ENOTTY (see
     * {@link #isReflinkRefusal(LinuxException)}); then {@code target} is left empty.
     *
     * @throws LinuxException for the clone itself, carrying its errno; other {@link IOException}s when
     *     {@code target} cannot be created
     * @throws IllegalArgumentException if both paths name the same file, which truncating would destroy
     */
    public static void reflink(Path source, Path target) throws IOException {
        if (Files.exists(target) && Files.isSameFile(source, target)) {
            throw new IllegalArgumentException("cannot reflink " + source + " onto itself (" + target + ")");
        }
        try (Arena arena = Arena.ofConfined();
             Fd from = Fd.open(arena, source, Libc.O_RDONLY)) {
            // java.nio creates it with the usual 0666 & ~umask; the ioctl needs it open for writing.
            try (FileChannel created = FileChannel.open(target, StandardOpenOption.CREATE,
                    StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                // only created or emptied here
            }
            try (Fd to = Fd.open(arena, target, Libc.O_RDWR)) {
                int rc = to.ioctlRaw(FICLONE, from.value());
                if (rc < 0) {
                    throw new LinuxException("ioctl", target + ", FICLONE from " + source, -rc);
                }
            }
        }
    }

    /**
     * Whether the failure means "this filesystem (pair) cannot reflink", as opposed to a real error
     * such as ENOSPC or EIO: the cue to fall back to copying.
     */
    public static boolean isReflinkRefusal(LinuxException e) {
        return e.is(Errno.EOPNOTSUPP) || e.is(Errno.EXDEV) || e.is(Errno.EINVAL) || e.is(Errno.ENOTTY);
    }

    /**
     * Whether files in {@code directory} can be reflinked to each other: tries it on a small probe file
     * of its own there and removes what it made, also on failure.
     */
    public static boolean reflinkSupported(Path directory) throws IOException {
        Path probe = Files.createTempFile(directory, ".hearth-reflink-", ".probe");
        Path clone = probe.resolveSibling(probe.getFileName() + ".clone");
        try {
            Files.write(probe, new byte[] {'h', 'e', 'a', 'r', 't', 'h'});
            reflink(probe, clone);
            return true;
        } catch (LinuxException e) {
            if (isReflinkRefusal(e)) {
                return false;
            }
            throw e;
        } finally {
            try {
                Files.deleteIfExists(clone);
            } finally {
                Files.delete(probe);
            }
        }
    }

    /**
     * Where {@code file} holds data, in order: its extents between holes, found with
     * {@code lseek(SEEK_DATA / SEEK_HOLE)}. Unwritten (preallocated) ranges may count as holes, since
     * they read as zeros. A filesystem without hole tracking reports the whole file as one extent.
     * An empty or fully sparse file has none.
     */
    public static List<Extent> dataExtents(Path file) throws LinuxException {
        try (Arena arena = Arena.ofConfined();
             Fd fd = Fd.open(arena, file, Libc.O_RDONLY)) {
            List<Extent> extents = new ArrayList<>();
            long position = 0;
            while (true) {
                long data = Libc.lseek(arena, fd.value(), position, Libc.SEEK_DATA);
                if (data == -Errno.ENXIO) { // no data at or after position: the rest is hole, or EOF
                    break;
                }
                checkSeek(data, file, "SEEK_DATA", position);
                long hole = Libc.lseek(arena, fd.value(), data, Libc.SEEK_HOLE);
                if (hole == -Errno.ENXIO) { // truncated under us since the SEEK_DATA
                    break;
                }
                checkSeek(hole, file, "SEEK_HOLE", data);
                extents.add(new Extent(data, hole - data));
                position = hole;
            }
            return List.copyOf(extents);
        }
    }

    private static void checkSeek(long rc, Path file, String whence, long from) throws LinuxException {
        if (rc < 0) {
            throw new LinuxException("lseek", file + ", " + whence + " from " + from, (int) -rc);
        }
    }
}
