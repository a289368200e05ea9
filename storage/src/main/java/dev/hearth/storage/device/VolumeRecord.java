package dev.hearth.storage.device;

import dev.hearth.storage.Volume;
import java.util.Objects;
import java.util.Optional;

/**
 * What a device pool knows of one of its volumes: the volume, the disk it was given (by identity,
 * never by {@code /dev} name), whether its release has begun, whether it was ever handed to a
 * user, and how its disk was known to be empty.
 *
 * @param releasing its delete has begun: the disk is being (or is to be) wiped, and the volume is
 *     gone for every other purpose; a delete retried, or the pool opened again, finishes it
 * @param handedOut a stage has given it to a user: from then on nothing proves it empty again
 * @param empty how the disk was known to be empty when it was given to the volume (or later, when
 *     a full check at its first stage proved it)
 * @param emptyWrites the disk's write counts when {@code empty} was established: while they stay
 *     the same, nothing has written to the disk since
 */
record VolumeRecord(Volume volume, DiskIdentity disk, boolean releasing, boolean handedOut, Empty empty,
        Optional<DiskWrites> emptyWrites) {

    VolumeRecord {
        Objects.requireNonNull(volume, "volume");
        Objects.requireNonNull(disk, "disk");
        Objects.requireNonNull(empty, "empty");
        Objects.requireNonNull(emptyWrites, "emptyWrites");
    }

    /** How a disk was known to hold nothing. */
    enum Empty {
        /** The pool's sampled check found no signature and zeros where it looked: empty, not proven. */
        SAMPLED("sampled"),
        /** Every byte was read and was zero. */
        FULL("full"),
        /** hearth zeroed the whole disk when it wiped it (zero, or a discard that guarantees zeros). */
        ZEROED("zeroed");

        private final String label;

        Empty(String label) {
            this.label = label;
        }

        String label() {
            return label;
        }

        /** Whether this is proof that every byte is zero (while nothing has written to the disk since). */
        boolean proof() {
            return this != SAMPLED;
        }

        static Empty parse(String text) {
            for (Empty empty : values()) {
                if (empty.label.equals(text)) {
                    return empty;
                }
            }
            throw new IllegalArgumentException("unknown emptiness '" + text + "'");
        }
    }

    VolumeRecord releasingNow() {
        return new VolumeRecord(volume, disk, true, handedOut, empty, emptyWrites);
    }

    VolumeRecord handedOutNow() {
        return new VolumeRecord(volume, disk, releasing, true, empty, emptyWrites);
    }

    VolumeRecord provenFull(Optional<DiskWrites> writes) {
        return new VolumeRecord(volume, disk, releasing, handedOut, Empty.FULL, writes);
    }
}
