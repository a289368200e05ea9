package dev.hearth.storage.device;

import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Objects;

/**
 * How a device pool is set up on this node: which disks it may take (a {@link DiskSelector}), how
 * hard it looks for data on a disk before offering it ({@code check}), and how a deleted volume's
 * disk is wiped before it is offered again.
 *
 * @param check {@link ZeroCheck#SAMPLED} (the default) or {@link ZeroCheck#FULL}; the edges alone
 *     are too little for a whole disk someone else may have used
 * @param stateDirectory {@code <state-dir>/pools/<name>}: the pool's volume records
 * @param claimsDirectory {@code <state-dir>/disks}: the node-wide claims every pool and LVM growth share
 */
public record DevicePoolConfig(String name, DiskSelector selector, Wipe wipe, ZeroCheck check, Path stateDirectory,
        Path claimsDirectory) implements PoolConfig {

    public DevicePoolConfig {
        if (!VolumeId.isPoolName(name)) {
            throw new IllegalArgumentException("pool name '" + name
                    + "' must be 1-32 characters of a-z, 0-9 and '-', starting and ending with a letter or digit");
        }
        Objects.requireNonNull(selector, "selector");
        Objects.requireNonNull(wipe, "wipe");
        if (check != ZeroCheck.SAMPLED && check != ZeroCheck.FULL) {
            throw new IllegalArgumentException("check must be sampled or full, got " + check);
        }
        if (!stateDirectory.isAbsolute() || !claimsDirectory.isAbsolute()) {
            throw new IllegalArgumentException("state directories must be absolute: " + stateDirectory + ", "
                    + claimsDirectory);
        }
        stateDirectory = stateDirectory.normalize();
        claimsDirectory = claimsDirectory.normalize();
    }

    /** A pool under {@code stateDir} as {@code hearth serve} places it. */
    public static DevicePoolConfig under(Path stateDir, String name, DiskSelector selector, Wipe wipe,
            ZeroCheck check) {
        return new DevicePoolConfig(name, selector, wipe, check, stateDir.resolve("pools").resolve(name),
                stateDir.resolve("disks"));
    }

    @Override
    public String kind() {
        return "device";
    }

    /** The pool's rule for the node's disks, as {@code hearth disks} and the assessor apply it. */
    public DiskAssessor.Rule rule() {
        return new DiskAssessor.Rule(name, selector, check);
    }

    @Override
    public java.util.Optional<DiskAssessor.Rule> diskRule() {
        return java.util.Optional.of(rule());
    }

    /** {@code sampled} or {@code full}, as the spec spells it. */
    public static ZeroCheck parseCheck(String text) {
        return switch (text.toLowerCase(Locale.ROOT)) {
            case "sampled" -> ZeroCheck.SAMPLED;
            case "full" -> ZeroCheck.FULL;
            default -> throw new IllegalArgumentException("must be sampled or full");
        };
    }

    public static String label(ZeroCheck check) {
        return check.name().toLowerCase(Locale.ROOT);
    }

    /** {@code disks=…,wipe=zero,check=sampled}: the pool's set-up for the start-up line. */
    public String describe() {
        return selector.describe() + ", wipe " + wipe.label() + ", check " + label(check);
    }

    /**
     * What a deleted volume's disk gets before the pool lets go of it. Each is done through an
     * exclusive open of the disk, and only on the disk whose identity the volume recorded.
     */
    public enum Wipe {
        /**
         * BLKZEROOUT over the whole disk (the device's write-zeroes where it has it, written zeros
         * where not). Afterwards the disk is known to hold nothing but zeros: proven empty for the
         * next volume, as long as nothing writes to it meanwhile. The default.
         */
        ZERO("zero"),
        /**
         * Discard, where a discard is certain to read back as zeros: on a loop device (a hole is
         * punched in its file), and on a disk whose queue says it zeroes by unmapping
         * ({@code write_zeroes_unmap_max_bytes}, as fallocate(PUNCH_HOLE) then asks of it). On any
         * other disk a discard promises nothing (the kernel retired {@code discard_zeroes_data}),
         * so the disk is zeroed as with {@link #ZERO}. Either way it ends proven empty.
         */
        DISCARD("discard"),
        /**
         * Zeros over the first and last MiB and over every signature the probe finds: fast, but
         * the last tenant's data stays in the middle. The disk is then not proven empty; it goes
         * back like any other disk, offered again only if the pool's check finds no data on it.
         */
        SIGNATURES("signatures");

        private final String label;

        Wipe(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }

        public static Wipe parse(String text) {
            for (Wipe wipe : values()) {
                if (wipe.label.equals(text.toLowerCase(Locale.ROOT))) {
                    return wipe;
                }
            }
            throw new IllegalArgumentException("must be zero, discard or signatures");
        }
    }
}
