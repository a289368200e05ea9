package dev.hearth.storage.lvm;

import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.device.DiskAssessor;
import dev.hearth.storage.device.DiskSelector;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * How an LVM pool is set up on this node. The volume group (and a thin pool in it) is the
 * admin's: hearth makes logical volumes in it and never creates or removes the group; it extends
 * the group only when {@code growth} names disks to grow onto, and only onto empty ones.
 *
 * @param thinPool the thin pool inside the group that thin volumes come from; empty for thick
 *     volumes, which take their extents from the group's free space
 * @param overprovision for a thin pool: how many times its data size the volumes' sizes may add
 *     up to (1 = no overprovisioning)
 * @param wipe what happens to a thick volume's extents when it is deleted
 * @param stateDirectory where the pool keeps what LVM cannot hold: its freeze records and which
 *     volumes were never handed to a user
 * @param growth the disks the group may grow onto; empty: the group is left as the admin made it
 */
public record LvmPoolConfig(String name, String volumeGroup, Optional<String> thinPool, double overprovision,
        Wipe wipe, long defaultVolumeBytes, Path stateDirectory, Optional<Growth> growth) implements PoolConfig {

    public static final long DEFAULT_VOLUME_BYTES = 1L << 30;
    public static final double DEFAULT_OVERPROVISION = 1.0;
    /** LVM's own rule for VG and LV names (lvm(8), "VALID NAMES"). */
    private static final Pattern LVM_NAME = Pattern.compile("[A-Za-z0-9+_.][A-Za-z0-9+_.-]{0,126}");

    public LvmPoolConfig {
        if (!VolumeId.isPoolName(name)) {
            throw new IllegalArgumentException("pool name '" + name
                    + "' must be 1-32 characters of a-z, 0-9 and '-', starting and ending with a letter or digit");
        }
        requireLvmName("volume group", volumeGroup);
        thinPool.ifPresent(t -> requireLvmName("thin pool", t));
        if (!(overprovision >= 1.0) || overprovision > 1000 || Double.isNaN(overprovision)) {
            throw new IllegalArgumentException("overprovision must be a ratio from 1 to 1000, got " + overprovision);
        }
        if (thinPool.isEmpty() && overprovision != 1.0) {
            throw new IllegalArgumentException("overprovision applies to a thin pool only; name one with thinpool=");
        }
        if (defaultVolumeBytes <= 0) {
            throw new IllegalArgumentException("default-size must be positive");
        }
        Objects.requireNonNull(wipe, "wipe");
        if (!stateDirectory.isAbsolute()) {
            throw new IllegalArgumentException("state directory must be absolute: " + stateDirectory);
        }
        Objects.requireNonNull(growth, "growth");
    }

    /** A pool that never grows its group. */
    public LvmPoolConfig(String name, String volumeGroup, Optional<String> thinPool, double overprovision, Wipe wipe,
            long defaultVolumeBytes, Path stateDirectory) {
        this(name, volumeGroup, thinPool, overprovision, wipe, defaultVolumeBytes, stateDirectory, Optional.empty());
    }

    /**
     * Which of the node's disks the pool adds to its volume group as physical volumes: those the
     * selector picks that are empty by {@code check}, unused and recognisable, each claimed under
     * {@code claims} (the node's {@code <state-dir>/disks}, shared with every pool that takes disks)
     * before anything is written to it.
     */
    public record Growth(DiskSelector disks, ZeroCheck check, Path claims) {
        public Growth {
            Objects.requireNonNull(disks, "disks");
            Objects.requireNonNull(check, "check");
            if (check == ZeroCheck.EDGES) {
                throw new IllegalArgumentException("check must be sampled or full: the edges alone prove nothing "
                        + "about a disk's middle");
            }
            if (!claims.isAbsolute()) {
                throw new IllegalArgumentException("claims directory must be absolute: " + claims);
            }
        }

        /** As a pool spec spells it: {@code disks=/dev/sd[b-d],min-size=100Gi,check=sampled}. */
        public String describe() {
            return disks.describe() + ",check=" + check.name().toLowerCase(Locale.ROOT);
        }
    }

    @Override
    public String kind() {
        return "lvm";
    }

    /** The disks the group grows onto, if any. */
    @Override
    public Optional<DiskAssessor.Rule> diskRule() {
        return growth.map(g -> new DiskAssessor.Rule(name, g.disks(), g.check()));
    }

    public boolean thin() {
        return thinPool.isPresent();
    }

    /** "vg0" or "vg0/thinpool", as LVM names them. */
    public String describeTarget() {
        return thinPool.map(t -> volumeGroup + "/" + t).orElse(volumeGroup);
    }

    private static void requireLvmName(String what, String value) {
        if (value == null || !LVM_NAME.matcher(value).matches() || value.equals(".") || value.equals("..")
                || value.startsWith("-")) {
            throw new IllegalArgumentException(what + " name '" + value
                    + "' is not a valid LVM name (A-Z a-z 0-9 + _ . -, not starting with '-')");
        }
    }

    /**
     * What a thick volume's extents get when it is deleted, before they return to the group where
     * the next volume can be given them.
     */
    public enum Wipe {
        /**
         * BLKZEROOUT over the whole volume: the kernel offloads it (write-zeroes, or an unmap that
         * guarantees zeros) where the device can, and writes zeros where it cannot. The default.
         */
        ZERO("zero"),
        /** BLKDISCARD: fast, but only devices that read back zeros after a discard isolate tenants with it. */
        DISCARD("discard"),
        /** Nothing: the next volume on these extents can read this one's bytes. For a single-tenant node only. */
        NONE("none");

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
            throw new IllegalArgumentException("must be zero, discard or none");
        }
    }
}
