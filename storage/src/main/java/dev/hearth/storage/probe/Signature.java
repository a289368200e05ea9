package dev.hearth.storage.probe;

import java.util.Objects;

/**
 * One on-disk signature: what it belongs to, its type in blkid's spelling ({@code ext4},
 * {@code LVM2_member}, {@code gpt}, ...) so operators can compare with {@code wipefs}, and the
 * byte offset of its magic. {@code backup} marks a secondary copy (ext backup superblock, btrfs
 * mirror, GPT backup header, LUKS2 second header): proof that a format was there even after
 * its primary copy was wiped.
 */
public record Signature(Kind kind, String type, long offset, boolean backup) {

    public enum Kind {
        FILESYSTEM,
        VOLUME_MANAGER,
        PARTITION_TABLE,
        SWAP
    }

    public Signature {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(type, "type");
        if (offset < 0) {
            throw new IllegalArgumentException("negative offset: " + offset);
        }
    }

    public Signature(Kind kind, String type, long offset) {
        this(kind, type, offset, false);
    }

    @Override
    public String toString() {
        return type + (backup ? " (backup copy)" : "") + " at offset 0x" + Long.toHexString(offset);
    }
}
