package dev.hearth.storage.device;

import dev.hearth.storage.Quantity;
import dev.hearth.storage.probe.Signature;
import java.util.List;

/**
 * Whether a disk may be taken by a pool, or exactly why not. {@link #code()} is stable (scripts
 * read it from {@code hearth disks --output json}); {@link #reason()} is for people.
 */
public sealed interface DiskVerdict {

    /** Selected by a pool, unused, with a stable identity, no signature and zeros where checked. */
    record Eligible() implements DiskVerdict {
        @Override
        public String code() {
            return "eligible";
        }

        @Override
        public String reason() {
            return "empty and unused";
        }
    }

    /** Taken by hearth already: a volume's disk, or a PV an LVM pool grew onto. */
    record Claimed(DiskClaims.Claim claim) implements DiskVerdict {
        @Override
        public String code() {
            return "claimed";
        }

        @Override
        public String reason() {
            return "claimed by " + claim.describe();
        }
    }

    record NotSelected(String why) implements DiskVerdict {
        @Override
        public String code() {
            return "not-selected";
        }

        @Override
        public String reason() {
            return "not matched by any pool's selector" + (why.isEmpty() ? "" : " (" + why + ")");
        }
    }

    record ReadOnly() implements DiskVerdict {
        @Override
        public String code() {
            return "read-only";
        }

        @Override
        public String reason() {
            return "read-only";
        }
    }

    /** Mounted, swap, held by device-mapper, md or bcache, or opened exclusively by something. */
    record InUse(List<String> uses) implements DiskVerdict {
        public InUse {
            uses = List.copyOf(uses);
        }

        @Override
        public String code() {
            return "in-use";
        }

        @Override
        public String reason() {
            return "in use: " + String.join("; ", uses);
        }
    }

    record TooSmall(long sizeBytes, long minSizeBytes) implements DiskVerdict {
        @Override
        public String code() {
            return "too-small";
        }

        @Override
        public String reason() {
            return "too small: " + Quantity.format(sizeBytes) + ", the pool takes " + Quantity.format(minSizeBytes)
                    + " or more";
        }
    }

    /** Reports no WWN, no serial (and is no loop device): it could not be recognised after a reboot. */
    record NoIdentity() implements DiskVerdict {
        @Override
        public String code() {
            return "no-identity";
        }

        @Override
        public String reason() {
            return "no stable identity (the disk reports no WWN and no serial number)";
        }
    }

    record Signed(List<Signature> signatures) implements DiskVerdict {
        public Signed {
            signatures = List.copyOf(signatures);
        }

        @Override
        public String code() {
            return "signature";
        }

        @Override
        public String reason() {
            return "holds " + String.join(", ", signatures.stream().map(Signature::toString).toList());
        }
    }

    /** No signature, but non-zero bytes where an unused disk has zeros. */
    record NotEmpty(String where) implements DiskVerdict {
        @Override
        public String code() {
            return "not-empty";
        }

        @Override
        public String reason() {
            return where;
        }
    }

    record Unreadable(String error) implements DiskVerdict {
        @Override
        public String code() {
            return "unreadable";
        }

        @Override
        public String reason() {
            return "cannot be read: " + error;
        }
    }

    DiskVerdict ELIGIBLE = new Eligible();

    String code();

    String reason();

    default boolean eligible() {
        return this instanceof Eligible;
    }
}
