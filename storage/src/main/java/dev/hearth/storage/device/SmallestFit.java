package dev.hearth.storage.device;

import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.StorageException;
import java.util.Comparator;
import java.util.List;

/**
 * Which free disks a request may have, best first. A device pool's volume is a whole disk, so its
 * size is the disk's: a disk fits when it holds {@code required_bytes} and, if a limit is given,
 * is no larger than {@code limit_bytes}. The smallest that fits comes first (the large ones stay
 * for the requests that need them); among equal sizes, the lowest device number (loop5 before
 * loop10), so the choice is the same every time the same disks are free.
 */
final class SmallestFit {

    private SmallestFit() {}

    /**
     * The free disks that fit, smallest first.
     *
     * @throws StorageException.OutOfRange if free disks hold the required size but every one of them
     *     is larger than the limit: the range, not the node's space, is what refuses (the caller may
     *     ask again with another range)
     * @throws StorageException.Exhausted if no free disk holds the required size (a claim that
     *     fits elsewhere: the provisioner lets the scheduler try another node)
     */
    static List<FreeDisks.Free> order(List<FreeDisks.Free> free, CapacityRange range, String pool) {
        List<FreeDisks.Free> large = free.stream().filter(f -> f.size() >= range.requiredBytes())
                .sorted(Comparator.comparingLong(FreeDisks.Free::size).thenComparingInt((FreeDisks.Free f) -> f.disk().major())
                        .thenComparingInt(f -> f.disk().minor()))
                .toList();
        if (large.isEmpty()) {
            throw new StorageException.Exhausted("pool '" + pool + "' has no free disk of "
                    + Quantity.format(range.requiredBytes()) + " or more" + describe(free));
        }
        List<FreeDisks.Free> fitting = large.stream()
                .filter(f -> range.limitBytes() == 0 || f.size() <= range.limitBytes()).toList();
        if (fitting.isEmpty()) {
            throw new StorageException.OutOfRange("a volume of pool '" + pool + "' is a whole disk, and every free "
                    + "disk of " + Quantity.format(range.requiredBytes()) + " or more is larger than limit_bytes "
                    + range.limitBytes() + " (the smallest is " + large.getFirst().size() + " bytes)");
        }
        return fitting;
    }

    private static String describe(List<FreeDisks.Free> free) {
        if (free.isEmpty()) {
            return " (it has no free disk at all)";
        }
        return "; its free disks: " + String.join(", ", free.stream()
                .map(f -> f.disk().path() + " " + Quantity.format(f.size())).toList());
    }
}
