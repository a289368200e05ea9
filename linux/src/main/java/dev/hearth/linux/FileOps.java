package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.nio.file.Path;

/** File calls java.nio lacks: space reservation and allocated size. */
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
}
