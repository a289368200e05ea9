package dev.hearth.storage.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.storage.Claim;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.device.VolumeRecord.Empty;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class VolumeRecordsTest {

    private static final VolumeId ID = VolumeId.mint("nvme", "pvc-1");
    private static final DiskIdentity DISK = new DiskIdentity("wwn", "eui.0025388b91b2c3d4", 1_000_204_886_016L);
    private static final DiskWrites WRITES = new DiskWrites("087d8c9e-820d-478b-861c-594d9bc8b739", 60980,
            "170711091,7809142", "");

    @TempDir
    Path dir;

    private static VolumeRecord record() {
        Volume volume = new Volume(ID, "pvc-1", DISK.sizeBytes(), Map.of(), Optional.empty(),
                Instant.parse("2026-11-30T10:00:00.123Z"), Optional.of(new Claim("db", "data-db-0", "pvc-1")));
        return new VolumeRecord(volume, DISK, false, false, Empty.ZEROED, Optional.of(WRITES));
    }

    @Test
    void aRecordReadsBackAsItWasWrittenThroughEachChange() {
        VolumeRecords records = new VolumeRecords(dir.resolve("volumes"));

        records.write(record());
        assertThat(records.read(ID)).contains(record());
        records.write(record().handedOutNow());
        assertThat(records.read(ID).orElseThrow().handedOut()).isTrue();
        records.write(record().releasingNow());
        assertThat(records.read(ID).orElseThrow().releasing()).isTrue();
        assertThat(records.all("nvme")).hasSize(1);
        assertThat(records.all("other")).isEmpty();

        records.delete(ID);
        assertThat(records.read(ID)).isEmpty();
        assertThat(records.all("nvme")).isEmpty();
    }

    @Test
    void aRecordWithoutAClaimReadsAsAVolumeOfNoClaim() throws Exception {
        VolumeRecords records = new VolumeRecords(dir);
        String text = VolumeRecords.encode(record()).lines().filter(l -> !l.startsWith("claim."))
                .reduce("", (a, b) -> a + b + "\n");
        Files.writeString(dir.resolve(ID.toString()), text);

        assertThat(records.read(ID).orElseThrow().volume().claim()).isEmpty();
        assertThat(VolumeRecords.encode(record())).contains("claim.namespace=db", "claim.name=data-db-0",
                "claim.pv=pvc-1");
    }

    @Test
    void anUnreadableHandedOutFlagCountsAsHandedOutAndUnknownKeysAreIgnored() throws Exception {
        VolumeRecords records = new VolumeRecords(dir);
        String text = VolumeRecords.encode(record()).replace("handed-out=false", "handed-out=maybe")
                + "some.future.key=1\n";
        Files.writeString(dir.resolve(ID.toString()), text);

        assertThat(records.read(ID).orElseThrow().handedOut()).isTrue();
    }

    @Test
    void aRecordOfAnotherIdOrWithoutItsDiskIsRefusedNotGuessed() throws Exception {
        VolumeRecords records = new VolumeRecords(dir);
        Files.writeString(dir.resolve(ID.toString()), VolumeRecords.encode(record()).replace("disk.value=", "x="));

        assertThatThrownBy(() -> records.read(ID)).isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("is malformed: no disk.value");
        VolumeId other = VolumeId.mint("nvme", "pvc-2");
        Files.writeString(dir.resolve(other.toString()), VolumeRecords.encode(record()));
        assertThatThrownBy(() -> records.read(other)).isInstanceOf(StorageException.Precondition.class);
    }

    @Test
    void writeCountsRoundTripAndGarbageIsNoCount() {
        assertThat(DiskWrites.parse(WRITES.encode())).contains(WRITES);
        DiskWrites loop = new DiskWrites("b", 7, "8,0", "67108864,1764000000.123456789");
        assertThat(DiskWrites.parse(loop.encode())).contains(loop);
        assertThat(DiskWrites.parse("b/x/1/2")).isEmpty();
        assertThat(DiskWrites.parse(null)).isEmpty();
    }
}
