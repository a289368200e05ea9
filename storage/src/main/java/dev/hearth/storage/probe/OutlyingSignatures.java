package dev.hearth.storage.probe;

import dev.hearth.storage.probe.Signature.Kind;
import java.io.IOException;
import java.util.List;

/**
 * The signatures libblkid looks for outside the first and last MiB, where the emptiness rule does
 * not read: a VMFS volume header at 1 MiB and its filesystem header at 2 MiB, and a Promise FastTrak
 * RAID header 3087 sectors before the end (its other places lie in the last MiB). With the LUKS2
 * second headers and the ext and btrfs backups the other detectors know, these are every place
 * {@code blkid -p} (util-linux 2.38) reads beyond those regions: an strace of it on zero-filled
 * devices of 64 MiB to 5 TiB, with 512- and 4096-byte sectors, shows those reads and no others. A
 * device the probe calls empty is therefore one libblkid finds nothing on either.
 *
 * <p>They are looked for only on a device otherwise empty: behind a signature at the start, the
 * same bytes are some filesystem's data (a VMware image stored in an ext4, say), not a competing
 * header.
 */
final class OutlyingSignatures {

    private static final long VMFS_VOLUME = 1L << 20;
    private static final byte[] VMFS_VOLUME_MAGIC = {0x0d, (byte) 0xd0, 0x01, (byte) 0xc0};
    private static final long VMFS = 2L << 20;
    private static final byte[] VMFS_MAGIC = {0x5e, (byte) 0xf1, (byte) 0xab, 0x2f};
    private static final String PROMISE_MAGIC = "Promise Technology, Inc.";
    // libblkid's promise_raid.c, in its order: sectors before the end of the device.
    private static final int[] PROMISE_SECTORS = {63, 255, 256, 16, 399, 591, 675, 735, 911, 974, 991, 951, 3087};
    private static final long PROMISE_MINIMUM = 0x40000;

    private OutlyingSignatures() {}

    static void detect(DeviceBytes d, List<Signature> found) throws IOException {
        if (d.has(VMFS_VOLUME, VMFS_VOLUME_MAGIC)) {
            found.add(new Signature(Kind.VOLUME_MANAGER, "VMFS_volume_member", VMFS_VOLUME));
        }
        if (d.has(VMFS, VMFS_MAGIC)) {
            found.add(new Signature(Kind.FILESYSTEM, "VMFS", VMFS));
        }
        if (d.size() >= PROMISE_MINIMUM) {
            long sectors = d.size() / 512;
            for (int before : PROMISE_SECTORS) {
                if (before > sectors) {
                    break; // before the device's start: libblkid stops looking there too
                }
                long offset = (sectors - before) * 512;
                if (d.has(offset, PROMISE_MAGIC)) {
                    found.add(new Signature(Kind.VOLUME_MANAGER, "promise_fasttrack_raid_member", offset));
                    break;
                }
            }
        }
    }
}
