package dev.hearth.storage;

import java.util.Objects;
import java.util.Optional;

/**
 * Something on this node that looks like hearth's and belongs to no volume, or a volume's record
 * without the data it describes: what {@code hearth volumes} lists for an operator to look into.
 * Finding one changes nothing; hearth removes only what its own start-up cleanup removes.
 *
 * @param pool the pool it was found in or belongs to; empty when no pool can be named (a mount of
 *     a device no pool knows)
 * @param subject what it is about: an image or metadata file, an LV, a loop device, a mount point
 * @param volume the volume its name stands for, when its name is one hearth gives
 * @param detail what is wrong with it, and what usually made it so
 */
public record Orphan(String pool, Kind kind, String subject, Optional<VolumeId> volume, String detail) {

    public Orphan {
        Objects.requireNonNull(pool, "pool");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(subject, "subject");
        Objects.requireNonNull(volume, "volume");
        Objects.requireNonNull(detail, "detail");
    }

    /** What kind of leftover it is; {@link #label()} is its stable name in {@code hearth volumes --output json}. */
    public enum Kind {
        /** Data with no record of what it is: an image without its metadata, an LV without hearth's tags. */
        BACKING_WITHOUT_RECORD("backing-without-record"),
        /** A volume's record whose data is gone: metadata without its image. */
        RECORD_WITHOUT_BACKING("record-without-backing"),
        /** What an operation in progress, or one cut short, leaves: a partial image, a temporary file or LV. */
        UNFINISHED("unfinished"),
        /** A loop device serving an image of a pool whose volume is gone (deleted, or without a record). */
        LOOP_DEVICE("loop-device"),
        /** A mount, in hearth's or the kubelet's CSI places, of a device that belongs to no volume. */
        MOUNT("mount");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }
}
