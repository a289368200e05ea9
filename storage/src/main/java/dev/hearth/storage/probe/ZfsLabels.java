package dev.hearth.storage.probe;

import dev.hearth.storage.probe.Signature.Kind;
import java.io.IOException;
import java.util.List;

/**
 * A ZFS pool member, found by its vdev labels: four copies of 256 KiB, two at the start of the
 * device and two at its end (aligned down to 256 KiB), each with a ring of uberblocks from 128 KiB
 * into it to its end, one per slot of 1 KiB or more (2^ashift, at most 8 KiB: always on a 1 KiB
 * boundary). An uberblock starts with the magic 0x00bab10c as 64 bits in the byte order of the
 * host that wrote it. These facts are OpenZFS's on-disk format (vdev_impl.h, uberblock_impl.h);
 * libblkid's zfs.c reads the same places.
 *
 * <p>One uberblock in any label is enough here, where libblkid 2.38 wants four (from 2.40 it reads
 * the label's name/value list at 16 KiB instead): a member whose labels were partly wiped is still
 * a member, and this probe errs towards "not empty". A device below ZFS's 64 MiB minimum
 * (SPA_MINDEVSIZE, also libblkid's) is never a member.
 *
 * <p>All four labels lie in the first and last MiB, so a device whose edges read as zeros holds
 * none: {@link SignatureProbe} looks for them only once it has found data there, and an empty
 * device never pays for the 128 reads of a full search.
 */
final class ZfsLabels {

    static final long LABEL_SIZE = 256 << 10;
    static final long UBERBLOCK_RING = 128 << 10;
    static final int SLOT = 1 << 10;
    static final long MAGIC = 0x00bab10cL;
    static final long MINIMUM_DEVICE = 64L << 20;

    private ZfsLabels() {}

    static void detect(DeviceBytes d, List<Signature> found) throws IOException {
        if (d.size() < MINIMUM_DEVICE) {
            return;
        }
        for (long label : labelOffsets(d.size())) {
            for (long slot = label + UBERBLOCK_RING; slot < label + LABEL_SIZE; slot += SLOT) {
                long magic = d.u64(slot);
                if (magic == MAGIC || magic == Long.reverseBytes(MAGIC)) {
                    found.add(new Signature(Kind.VOLUME_MANAGER, "zfs_member", slot));
                    return;
                }
            }
        }
    }

    /** Where the four labels of a device {@code size} bytes long start. */
    static long[] labelOffsets(long size) {
        long end = size - size % LABEL_SIZE;
        return new long[] {0, LABEL_SIZE, end - 2 * LABEL_SIZE, end - LABEL_SIZE};
    }
}
