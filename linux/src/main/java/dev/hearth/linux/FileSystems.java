package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.nio.file.Path;

/** {@code statvfs(3)}. */
public final class FileSystems {

    /** glibc's {@code struct statvfs} on 64-bit Linux (bits/statvfs.h): 112 bytes. */
    static final StructLayout STATVFS = MemoryLayout.structLayout(
            JAVA_LONG.withName("f_bsize"),
            JAVA_LONG.withName("f_frsize"),
            JAVA_LONG.withName("f_blocks"),
            JAVA_LONG.withName("f_bfree"),
            JAVA_LONG.withName("f_bavail"),
            JAVA_LONG.withName("f_files"),
            JAVA_LONG.withName("f_ffree"),
            JAVA_LONG.withName("f_favail"),
            JAVA_LONG.withName("f_fsid"),
            JAVA_LONG.withName("f_flag"),
            JAVA_LONG.withName("f_namemax"),
            MemoryLayout.sequenceLayout(6, JAVA_INT).withName("__f_spare"));

    private FileSystems() {}

    public static FsStats statvfs(Path path) throws LinuxException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(STATVFS);
            int rc = Libc.statvfs(arena, path.toString(), buf);
            if (rc < 0) {
                throw new LinuxException("statvfs", path.toString(), -rc);
            }
            return new FsStats(field(buf, "f_bsize"), field(buf, "f_frsize"),
                    field(buf, "f_blocks"), field(buf, "f_bfree"), field(buf, "f_bavail"),
                    field(buf, "f_files"), field(buf, "f_ffree"), field(buf, "f_favail"),
                    field(buf, "f_flag"));
        }
    }

    private static long field(MemorySegment buf, String name) {
        return buf.get(JAVA_LONG, STATVFS.byteOffset(MemoryLayout.PathElement.groupElement(name)));
    }
}
