package dev.hearth.storage;

/** What a new volume starts with instead of zeros: a snapshot's content or another volume's. */
public sealed interface VolumeSource {

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
