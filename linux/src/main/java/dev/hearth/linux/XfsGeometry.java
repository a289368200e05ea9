package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * What a mounted xfs says of its own size (XFS_IOC_FSGEOMETRY_V1). Unlike the superblock on the
 * device, this is current at once: xfs_growfs logs the new size, and the primary superblock on disk
 * catches up only when the log is next written back, possibly long after.
 */
public final class XfsGeometry {

    /** {@code _IOR('X', 100, struct xfs_fsop_geom_v1)}, the 112-byte version every kernel has. */
    static final long XFS_IOC_FSGEOMETRY_V1 = 0x80705864L;
    static final long GEOMETRY_V1_SIZE = 112;
    private static final long BLOCKSIZE_OFFSET = 0;  // __u32 blocksize
    private static final long DATABLOCKS_OFFSET = 32; // __u64 datablocks, after eight __u32

    private XfsGeometry() {}

    /**
     * Bytes in the data section of the xfs that {@code path} (any file or directory on it) lives on,
     * internal log included. ENOTTY if that is not xfs.
     */
    public static long dataBytes(Path path) throws LinuxException {
        try (Arena arena = Arena.ofConfined();
             Fd fd = Fd.open(arena, path, Libc.O_RDONLY)) {
            MemorySegment geometry = arena.allocate(GEOMETRY_V1_SIZE, 8);
            fd.ioctl("XFS_IOC_FSGEOMETRY_V1", XFS_IOC_FSGEOMETRY_V1, geometry);
            long blockSize = Integer.toUnsignedLong(geometry.get(JAVA_INT, BLOCKSIZE_OFFSET));
            return geometry.get(JAVA_LONG, DATABLOCKS_OFFSET) * blockSize;
        }
    }
}
