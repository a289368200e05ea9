package dev.hearth.storage.lvm;

import dev.hearth.linux.Disk;
import dev.hearth.storage.device.DiskClaims;
import dev.hearth.storage.device.DiskIdentity;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Optional;

/**
 * Where a disk an LVM pool claimed for its volume group stands, read from the disk's LVM label
 * and metadata (read-only, O_DIRECT, no lvm process: {@code hearth disks} reads it beside a
 * running driver). The PV hearth makes of a disk has a UUID derived from the disk's identity and
 * the group ({@link #uuid}), so the PV hearth made is told from any other with nothing recorded
 * but the claim.
 *
 * @param detail the state in words, for logs and {@code hearth disks}
 */
public record ClaimedPv(State state, String detail) {

    private static final String HOLDER_PREFIX = "pv of vg ";
    private static final String UUID_CHARACTERS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    private static final int[] UUID_GROUPS = {6, 4, 4, 4, 4, 4, 6};

    public enum State {
        /** A PV of the group. */
        MEMBER,
        /** The PV hearth made for the group, not yet in it (a crash between pvcreate and vgextend). */
        PREPARED,
        /** No LVM label: nothing written yet (a crash between the claim and pvcreate). */
        UNWRITTEN,
        /** Its label or metadata failed a checksum: LVM is writing it. */
        TORN,
        /** Once a PV of the group, and taken out of it since (vgreduce, pvremove): not hearth's to add again. */
        REMOVED,
        /** Something hearth did not write: another PV, a PV of another group, a label it cannot read. */
        FOREIGN
    }

    /** The holder a disk claimed for {@code group} is recorded under in {@link DiskClaims}. */
    public static String holder(String group) {
        return HOLDER_PREFIX + group;
    }

    /** The group a claim took its disk for, if an LVM pool's growth made it. */
    public static Optional<String> groupOf(DiskClaims.Claim claim) {
        return claim.holder().startsWith(HOLDER_PREFIX)
                ? Optional.of(claim.holder().substring(HOLDER_PREFIX.length())) : Optional.empty();
    }

    /**
     * What {@code disk}, claimed by {@code claim} for a volume group, holds now.
     *
     * @param added whether the pool recorded that it added the disk to the group (without it, a PV
     *     in no group and a disk without a label are a crash's leftovers to finish)
     */
    public static ClaimedPv of(DiskClaims.Claim claim, Disk disk, boolean added) {
        String group = groupOf(claim).orElseThrow(() -> new IllegalArgumentException(claim.describe()
                + " is no volume group's"));
        PhysicalVolumeLabel.Contents label;
        try {
            label = PhysicalVolumeLabel.read(disk.path());
        } catch (PhysicalVolumeLabel.NoLabel e) {
            return added ? new ClaimedPv(State.REMOVED, "it was a physical volume of " + group
                    + " and is no physical volume now (pvremove)")
                    : new ClaimedPv(State.UNWRITTEN, "not yet a physical volume of " + group);
        } catch (PhysicalVolumeLabel.Torn e) {
            return new ClaimedPv(State.TORN, e.getMessage());
        } catch (IOException e) {
            return new ClaimedPv(State.FOREIGN, "its LVM label cannot be read: " + e.getMessage());
        }
        String ours = uuid(claim.disk(), group).replace("-", "");
        if (!label.pvUuid().equals(ours)) {
            return new ClaimedPv(State.FOREIGN, "it holds physical volume " + label.pvUuid()
                    + ", not the one hearth makes (" + ours + ")");
        }
        for (String text : label.texts()) {
            String holds;
            try {
                holds = GroupMetadata.of(MetadataText.parse(text)).name();
            } catch (IllegalArgumentException e) {
                return new ClaimedPv(State.FOREIGN, "its LVM metadata cannot be read: " + e.getMessage());
            }
            if (!holds.equals(group)) {
                return new ClaimedPv(State.FOREIGN, "it is a physical volume of volume group " + holds);
            }
        }
        if (!label.texts().isEmpty()) {
            return new ClaimedPv(State.MEMBER, "a physical volume of " + group);
        }
        return added ? new ClaimedPv(State.REMOVED, "it was taken out of " + group + " (vgreduce)")
                : new ClaimedPv(State.PREPARED, "a physical volume made for " + group + ", not yet in it");
    }

    /**
     * The PV UUID hearth gives a disk it adds to {@code group}, in LVM's form: 32 characters of
     * [0-9a-zA-Z] in groups of 6-4-4-4-4-4-6.
     */
    public static String uuid(DiskIdentity disk, String group) {
        byte[] digest;
        try {
            digest = MessageDigest.getInstance("SHA-256").digest(("hearth pv\0" + group + "\0" + disk.source() + "\0"
                    + disk.value() + "\0" + disk.sizeBytes()).getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
        StringBuilder uuid = new StringBuilder();
        int i = 0;
        for (int length : UUID_GROUPS) {
            if (!uuid.isEmpty()) {
                uuid.append('-');
            }
            for (int k = 0; k < length; k++, i++) {
                uuid.append(UUID_CHARACTERS.charAt((digest[i] & 0xff) % UUID_CHARACTERS.length()));
            }
        }
        return uuid.toString();
    }
}
