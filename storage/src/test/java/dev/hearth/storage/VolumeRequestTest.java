package dev.hearth.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The repeated-create check every pool kind shares, without a pool. */
class VolumeRequestTest {

    private static final long MIB = 1 << 20;
    private static final Map<String, String> THIN = Map.of("hearth.dev/provisioning", "thin");
    private static final VolumeSource SNAPSHOT = new VolumeSource.FromSnapshot(SnapshotId.mint("default", "snap-1"));
    private static final Volume RESTORED = new Volume(VolumeId.mint("default", "pvc-1"), "pvc-1", 4 * MIB, THIN,
            Optional.of(SNAPSHOT), Instant.parse("2026-11-23T12:00:00Z"));

    private static VolumeRequest request(String name, long required, Map<String, String> parameters,
            Optional<VolumeSource> source) {
        return new VolumeRequest(name, new CapacityRange(required, 0), parameters, source);
    }

    @Test
    void theSameRequestAgainGetsTheVolumeItMade() {
        assertThat(request("pvc-1", 4 * MIB, THIN, Optional.of(SNAPSHOT)).sameRequestAgain(RESTORED, THIN))
                .isSameAs(RESTORED);
    }

    @Test
    void theClaimIsALabelNotPartOfTheRequest() {
        Optional<Claim> other = Optional.of(new Claim("other", "data", "pvc-9"));
        VolumeRequest again = new VolumeRequest("pvc-1", new CapacityRange(4 * MIB, 0), THIN, Optional.of(SNAPSHOT),
                other);

        assertThat(again.sameRequestAgain(RESTORED, THIN)).isSameAs(RESTORED);
        assertThat(RESTORED.withSize(8 * MIB).claim()).isEmpty();
    }

    @Test
    void anotherSourceOrNoneConflicts() {
        VolumeSource other = new VolumeSource.FromVolume(VolumeId.mint("default", "pvc-0"));

        assertThatThrownBy(() -> request("pvc-1", 4 * MIB, THIN, Optional.of(other)).sameRequestAgain(RESTORED, THIN))
                .isInstanceOf(StorageException.Conflict.class)
                .hasMessageContaining("from " + SNAPSHOT).hasMessageContaining("not from " + other);
        assertThatThrownBy(() -> request("pvc-1", 4 * MIB, THIN, Optional.empty()).sameRequestAgain(RESTORED, THIN))
                .isInstanceOf(StorageException.Conflict.class).hasMessageContaining("not from nowhere");
    }

    @Test
    void otherParametersAnotherNameOrASizeOutsideTheRangeConflict() {
        Optional<VolumeSource> same = Optional.of(SNAPSHOT);

        assertThatThrownBy(() -> request("pvc-1", 4 * MIB, Map.of(), same).sameRequestAgain(RESTORED, Map.of()))
                .isInstanceOf(StorageException.Conflict.class).hasMessageContaining("parameters");
        assertThatThrownBy(() -> request("pvc-2", 4 * MIB, THIN, same).sameRequestAgain(RESTORED, THIN))
                .isInstanceOf(StorageException.Conflict.class).hasMessageContaining("shares its key");
        assertThatThrownBy(() -> request("pvc-1", 8 * MIB, THIN, same).sameRequestAgain(RESTORED, THIN))
                .isInstanceOf(StorageException.Conflict.class).hasMessageContaining("outside the requested range");
    }

    @Test
    void aSourceReadsBackFromItsText() {
        VolumeSource clone = new VolumeSource.FromVolume(VolumeId.mint("default", "pvc-0"));

        assertThat(VolumeSource.parse(SNAPSHOT.toString())).contains(SNAPSHOT);
        assertThat(VolumeSource.parse(clone.toString())).contains(clone);
        assertThat(VolumeSource.parse("snapshot:not an id")).isEmpty();
    }
}
