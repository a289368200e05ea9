package dev.hearth.storage;

import java.util.Optional;

/** What a new volume starts with instead of zeros: a snapshot's content or another volume's. */
public sealed interface VolumeSource {

    /** The source {@link #toString()} wrote ({@code snapshot:<id>} or {@code volume:<id>}); empty for anything else. */
    static Optional<VolumeSource> parse(String text) {
        if (text.startsWith("snapshot:")) {
            return SnapshotId.parse(text.substring("snapshot:".length())).map(FromSnapshot::new);
        }
        return VolumeId.parse(text.substring(text.indexOf(':') + 1)).map(FromVolume::new);
    }

    record FromSnapshot(SnapshotId snapshot) implements VolumeSource {
        @Override
        public String toString() {
            return "snapshot:" + snapshot;
        }
    }

    record FromVolume(VolumeId volume) implements VolumeSource {
        @Override
        public String toString() {
            return "volume:" + volume;
        }
    }
}
