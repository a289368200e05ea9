package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.GIB;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.POOL_CAPACITY;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Timestamp;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.ListSnapshotsRequest;
import dev.hearth.csi.v1.ListSnapshotsResponse;
import dev.hearth.csi.v1.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.VolumeId;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * CreateSnapshot, DeleteSnapshot and ListSnapshots of a running driver, through its unix socket,
 * on a 2 GiB file pool. What a snapshot holds is seen by restoring it ({@link RestoreTest}).
 */
class SnapshotServiceTest extends DriverFixture {

    private String volume(String name, long size) {
        return driver.create(name, size, mount("ext4")).getVolumeId();
    }

    private List<Snapshot> list(ListSnapshotsRequest request) {
        return driver.controller().listSnapshots(request).getEntriesList().stream()
                .map(ListSnapshotsResponse.Entry::getSnapshot).toList();
    }

    private List<Snapshot> listAll() {
        return list(ListSnapshotsRequest.getDefaultInstance());
    }

    private void deleteSnapshot(String id) {
        driver.controller().deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(id).build());
    }

    private List<Path> snapshotFiles() throws IOException {
        try (Stream<Path> files = Files.list(driver.poolDir().resolve("snapshots"))) {
            return files.sorted().toList();
        }
    }

    private static Instant instant(Timestamp t) {
        return Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
    }

    // CreateSnapshot

    @Test
    void snapshotHasTheSourcesSizeATimeWithinTheCallAndIsReady() {
        String source = volume("pvc-1", 64 * MIB);
        Instant before = Instant.now();

        Snapshot snapshot = driver.snapshot("snap-1", source);

        Instant after = Instant.now();
        assertThat(SnapshotId.parse(snapshot.getSnapshotId())).get().extracting(SnapshotId::pool).isEqualTo("default");
        assertThat(snapshot.getSourceVolumeId()).isEqualTo(source);
        assertThat(snapshot.getSizeBytes()).isEqualTo(64 * MIB);
        assertThat(instant(snapshot.getCreationTime())).isBetween(before, after);
        assertThat(snapshot.getReadyToUse()).isTrue();
    }

    @Test
    void createSnapshotIsIdempotentForTheSameNameAndSource() throws IOException {
        String source = volume("pvc-1", 64 * MIB);
        Snapshot first = driver.snapshot("snap-1", source);
        List<Path> filesAfterFirst = snapshotFiles();

        Snapshot second = driver.snapshot("snap-1", source);

        assertThat(second).isEqualTo(first);
        assertThat(snapshotFiles()).isEqualTo(filesAfterFirst);
        assertThat(listAll()).containsExactly(first);
    }

    @Test
    void createSnapshotWithTheNameOfASnapshotOfAnotherVolumeIsAlreadyExists() throws IOException {
        String first = volume("pvc-1", 64 * MIB);
        String second = volume("pvc-2", 64 * MIB);
        Snapshot taken = driver.snapshot("snap-1", first);

        assertFails(() -> driver.snapshot("snap-1", second), Code.ALREADY_EXISTS, "snap-1");

        assertThat(listAll()).containsExactly(taken);
    }

    @ParameterizedTest
    @ValueSource(strings = {"default-aaaaaaaaaaaaaaaaaaaaaaaaaa", "no-such-volume", "../../etc/passwd",
            "other-aaaaaaaaaaaaaaaaaaaaaaaaaa"})
    void createSnapshotOfAVolumeThatDoesNotExistIsNotFound(String source) throws IOException {
        assertFails(() -> driver.snapshot("snap-1", source), Code.NOT_FOUND, source);

        assertThat(listAll()).isEmpty();
        assertThat(snapshotFiles()).isEmpty();
    }

    @Test
    void createSnapshotWithoutNameOrSourceIsInvalidArgument() {
        String source = volume("pvc-1", 64 * MIB);

        assertFails(() -> driver.snapshot("", source), Code.INVALID_ARGUMENT, "name");
        assertFails(() -> driver.snapshot("snap-1", ""), Code.INVALID_ARGUMENT, "source_volume_id");
        assertThat(listAll()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"foo", "hearth.dev/provisioning", "hearth.dev/pool"})
    void createSnapshotRejectsAParameterNamingIt(String key) throws IOException {
        String source = volume("pvc-1", 64 * MIB);

        assertFails(() -> driver.controller().createSnapshot(CreateSnapshotRequest.newBuilder().setName("snap-1")
                .setSourceVolumeId(source).putParameters(key, "x").build()), Code.INVALID_ARGUMENT, key);

        assertThat(snapshotFiles()).isEmpty();
    }

    @Test
    void createSnapshotAcceptsWhatTheExternalSnapshotterAdds() {
        String source = volume("pvc-1", 64 * MIB);

        Snapshot snapshot = driver.controller().createSnapshot(CreateSnapshotRequest.newBuilder().setName("snap-1")
                .setSourceVolumeId(source)
                .putParameters("csi.storage.k8s.io/volumesnapshot/name", "nightly")
                .putParameters("csi.storage.k8s.io/volumesnapshot/namespace", "default")
                .putParameters("csi.storage.k8s.io/volumesnapshotcontent/name", "snapcontent-1")
                .build()).getSnapshot();

        assertThat(snapshot.getSizeBytes()).isEqualTo(64 * MIB);
    }

    @Test
    void snapshotsOutliveARestartOfTheDriver() throws IOException {
        Snapshot snapshot = driver.snapshot("snap-1", volume("pvc-1", 64 * MIB));

        driver.restart();

        assertThat(listAll()).containsExactly(snapshot);
        assertThat(driver.snapshot("snap-1", snapshot.getSourceVolumeId())).isEqualTo(snapshot);
    }

    @Test
    void whatAnInterruptedSnapshotLeftIsClearedWhenTheDriverStarts() throws IOException {
        volume("pvc-1", 64 * MIB);
        driver.close();
        Path snapshots = dir.resolve("pool/snapshots");
        Path partial = snapshots.resolve(SnapshotId.mint("default", "snap-crashed") + ".img.part");
        Path unrecorded = snapshots.resolve(SnapshotId.mint("default", "snap-unrecorded") + ".img");
        for (Path file : List.of(partial, unrecorded)) {
            try (var image = new java.io.RandomAccessFile(file.toFile(), "rw")) {
                image.setLength(256 * MIB);
            }
        }

        driver = TestDriver.start(dir);

        assertThat(snapshotFiles()).isEmpty();
        assertThat(listAll()).isEmpty();
        assertThat(driver.available()).isEqualTo(POOL_CAPACITY - 64 * MIB);
    }

    @Test
    void aSnapshotOutlivesItsSourceVolume() {
        String source = volume("pvc-1", 64 * MIB);
        Snapshot snapshot = driver.snapshot("snap-1", source);

        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(source).build());

        assertThat(listAll()).containsExactly(snapshot);
    }

    // Space

    @Test
    void aSnapshotCountsAgainstThePoolsCapacityUntilItIsDeleted() {
        String source = volume("pvc-1", 256 * MIB);
        long before = driver.available();

        Snapshot snapshot = driver.snapshot("snap-1", source);
        long withSnapshot = driver.available();
        deleteSnapshot(snapshot.getSnapshotId());

        assertThat(before).isEqualTo(POOL_CAPACITY - 256 * MIB);
        assertThat(withSnapshot).isEqualTo(before - 256 * MIB);
        assertThat(driver.available()).isEqualTo(before);
    }

    @Test
    void aSnapshotThePoolHasNoRoomForIsResourceExhaustedAndLeavesNothing() throws IOException {
        String source = driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-big")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(GIB + 512 * MIB))
                .addVolumeCapabilities(mount("ext4")).putParameters("hearth.dev/provisioning", "thin")
                .build()).getVolume().getVolumeId();

        assertFails(() -> driver.snapshot("snap-1", source), Code.RESOURCE_EXHAUSTED, "pool 'default'");

        assertThat(listAll()).isEmpty();
        assertThat(snapshotFiles()).isEmpty();
        assertThat(driver.available()).isEqualTo(POOL_CAPACITY - GIB - 512 * MIB);
    }

    // DeleteSnapshot

    @Test
    void deleteSnapshotIsIdempotentAndRemovesItsFiles() throws IOException {
        Snapshot snapshot = driver.snapshot("snap-1", volume("pvc-1", 64 * MIB));

        deleteSnapshot(snapshot.getSnapshotId());
        deleteSnapshot(snapshot.getSnapshotId());

        assertThat(listAll()).isEmpty();
        assertThat(snapshotFiles()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"garbage", "../../etc/passwd", "default_aaaaaaaaaaaaaaaaaaaaaaaaaa",
            "other_aaaaaaaaaaaaaaaaaaaaaaaaaa", "default_../../../etc/passwd"})
    void deleteSnapshotOfAnIdThatNamesNoSnapshotSucceedsAndTouchesNothing(String id) throws IOException {
        Snapshot kept = driver.snapshot("snap-kept", volume("pvc-1", 64 * MIB));
        List<Path> before = snapshotFiles();

        deleteSnapshot(id);

        assertThat(listAll()).containsExactly(kept);
        assertThat(snapshotFiles()).isEqualTo(before);
        assertThat(Path.of("/etc/passwd")).exists();
    }

    @Test
    void deleteSnapshotOfAVolumesIdLeavesTheVolume() {
        String source = volume("pvc-1", 64 * MIB);

        deleteSnapshot(source);

        assertThat(driver.image(source)).exists();
    }

    @Test
    void deleteSnapshotWithoutIdIsInvalidArgument() {
        assertFails(() -> deleteSnapshot(""), Code.INVALID_ARGUMENT, "snapshot_id");
    }

    // ListSnapshots

    @Test
    void listSnapshotsBySnapshotIdGivesJustThatOne() {
        String source = volume("pvc-1", 64 * MIB);
        driver.snapshot("snap-1", source);
        Snapshot wanted = driver.snapshot("snap-2", source);

        assertThat(list(ListSnapshotsRequest.newBuilder().setSnapshotId(wanted.getSnapshotId()).build()))
                .containsExactly(wanted);
    }

    @ParameterizedTest
    @ValueSource(strings = {"default_aaaaaaaaaaaaaaaaaaaaaaaaaa", "garbage", "other_aaaaaaaaaaaaaaaaaaaaaaaaaa"})
    void listSnapshotsByAnIdThatNamesNoSnapshotIsEmpty(String id) {
        driver.snapshot("snap-1", volume("pvc-1", 64 * MIB));

        ListSnapshotsResponse response = driver.controller().listSnapshots(
                ListSnapshotsRequest.newBuilder().setSnapshotId(id).build());

        assertThat(response.getEntriesList()).isEmpty();
        assertThat(response.getNextToken()).isEmpty();
    }

    @Test
    void listSnapshotsBySourceVolumeGivesOnlyThatVolumesSnapshots() {
        String first = volume("pvc-1", 64 * MIB);
        String second = volume("pvc-2", 64 * MIB);
        Snapshot a = driver.snapshot("snap-a", first);
        driver.snapshot("snap-b", second);
        Snapshot c = driver.snapshot("snap-c", first);

        assertThat(list(ListSnapshotsRequest.newBuilder().setSourceVolumeId(first).build()))
                .containsExactlyInAnyOrder(a, c);
        assertThat(list(ListSnapshotsRequest.newBuilder()
                .setSourceVolumeId(VolumeId.mint("default", "pvc-never").toString()).build())).isEmpty();
    }

    @Test
    void listSnapshotsBySnapshotIdAndAnotherSourceIsEmpty() {
        String first = volume("pvc-1", 64 * MIB);
        String second = volume("pvc-2", 64 * MIB);
        Snapshot snapshot = driver.snapshot("snap-1", first);

        assertThat(list(ListSnapshotsRequest.newBuilder().setSnapshotId(snapshot.getSnapshotId())
                .setSourceVolumeId(second).build())).isEmpty();
    }

    @Test
    void listSnapshotsPagesThroughEverySnapshotExactlyOnce() {
        String source = volume("pvc-1", 16 * MIB);
        List<Snapshot> taken = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            taken.add(driver.snapshot("snap-" + i, source));
        }

        List<Snapshot> seen = new ArrayList<>();
        List<Integer> pageSizes = new ArrayList<>();
        String token = "";
        do {
            ListSnapshotsResponse page = driver.controller().listSnapshots(ListSnapshotsRequest.newBuilder()
                    .setMaxEntries(2).setStartingToken(token).build());
            seen.addAll(page.getEntriesList().stream().map(ListSnapshotsResponse.Entry::getSnapshot).toList());
            pageSizes.add(page.getEntriesCount());
            token = page.getNextToken();
        } while (!token.isEmpty() && pageSizes.size() < 10);

        assertThat(pageSizes).containsExactly(2, 2, 1);
        assertThat(seen).doesNotHaveDuplicates().containsExactlyInAnyOrderElementsOf(taken);
    }

    @Test
    void listSnapshotsKeepsPagingWhenTheSnapshotATokenNamesIsDeleted() {
        String source = volume("pvc-1", 16 * MIB);
        for (int i = 0; i < 3; i++) {
            driver.snapshot("snap-" + i, source);
        }
        ListSnapshotsResponse first = driver.controller().listSnapshots(
                ListSnapshotsRequest.newBuilder().setMaxEntries(1).build());
        deleteSnapshot(first.getNextToken());

        ListSnapshotsResponse rest = driver.controller().listSnapshots(ListSnapshotsRequest.newBuilder()
                .setStartingToken(first.getNextToken()).build());

        assertThat(rest.getEntriesList()).hasSize(1);
        assertThat(rest.getNextToken()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"garbage", "42", "default-aaaaaaaaaaaaaaaaaaaaaaaaaa"})
    void listSnapshotsWithATokenItDidNotIssueIsAborted(String token) {
        driver.snapshot("snap-1", volume("pvc-1", 16 * MIB));

        assertFails(() -> driver.controller().listSnapshots(ListSnapshotsRequest.newBuilder()
                .setStartingToken(token).build()), Code.ABORTED, token);
    }

    @Test
    void listSnapshotsWithNegativeMaxEntriesIsInvalidArgument() {
        assertFails(() -> driver.controller().listSnapshots(ListSnapshotsRequest.newBuilder().setMaxEntries(-1)
                .build()), Code.INVALID_ARGUMENT, "-1");
    }
}
