package dev.hearth.linux;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The process's effective capabilities (capabilities(7)), for telling an operator which one a
 * refused operation needed: uid 0 in a container often lacks some.
 */
public final class Capabilities {

    /** Online ext4 resize (EXT4_IOC_RESIZE_FS) and writing into reserved blocks. */
    public static final int CAP_SYS_RESOURCE = 24;
    /** mount, FIFREEZE, loop setup and most other storage administration. */
    public static final int CAP_SYS_ADMIN = 21;

    private static final Path STATUS = Path.of("/proc/self/status");

    private Capabilities() {}

    public static boolean effective(int capability) throws IOException {
        return has(Files.readString(STATUS), capability);
    }

    /** Reads the {@code CapEff:} line of a {@code /proc/<pid>/status} text. */
    static boolean has(String status, int capability) {
        if (capability < 0 || capability > 63) {
            throw new IllegalArgumentException("no such capability number: " + capability);
        }
        String mask = status.lines()
                .filter(l -> l.startsWith("CapEff:"))
                .map(l -> l.substring("CapEff:".length()).strip())
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("status has no CapEff line"));
        return (Long.parseUnsignedLong(mask, 16) & (1L << capability)) != 0;
    }
}
