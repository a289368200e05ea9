package dev.hearth.storage.device;

import dev.hearth.linux.Disk;
import dev.hearth.storage.Quantity;
import java.util.List;

/**
 * Where a volume's disk is on the node now, found by its identity in a scan, never by a {@code /dev}
 * name: there, changed (its WWN, serial or loop file is on the node with another size), or missing.
 */
sealed interface Located {

    record Found(Disk disk) implements Located {}

    /** A disk with the volume's disk's WWN, serial or loop file, but not its size: not the volume's disk. */
    record Changed(Disk disk, DiskIdentity recorded) implements Located {}

    record Missing(DiskIdentity recorded) implements Located {}

    static Located find(DiskIdentity identity, List<Disk> disks) {
        for (Disk disk : disks) {
            if (identity.matches(disk)) {
                return new Found(disk);
            }
        }
        for (Disk disk : disks) {
            var other = DiskIdentity.of(disk);
            if (other.isPresent() && other.get().source().equals(identity.source())
                    && other.get().value().equals(identity.value())) {
                return new Changed(disk, identity);
            }
        }
        return new Missing(identity);
    }

    /** Why the volume cannot use its disk, for its condition and for a refused attach; empty when found. */
    default String problem() {
        return switch (this) {
            case Found _ -> "";
            case Changed(Disk disk, DiskIdentity recorded) -> "the volume's disk (" + recorded.source() + " "
                    + recorded.value() + ") is now " + disk.path() + " of " + disk.sizeBytes() + " bytes ("
                    + Quantity.format(disk.sizeBytes()) + "), not the " + recorded.sizeBytes()
                    + " bytes it had when the volume was given it: hearth does not use a disk that changed";
            case Missing(DiskIdentity recorded) -> "the volume's disk (" + recorded
                    + ") is not on this node any more: removed, failed, or (a loop device) detached";
        };
    }
}
