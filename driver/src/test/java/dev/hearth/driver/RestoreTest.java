package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.POOL_CAPACITY;
import static dev.hearth.driver.TestDriver.fromSnapshot;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGetVolumeRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.ListVolumesResponse;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.hearth.csi.v1.Volume;
import dev.hearth.driver.Kubelet.Published;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.file.FilePoolConfig;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * CreateVolume from a snapshot: what the restored volume holds once a pod mounts it, how large its
 * filesystem is, and the requests that cannot be served. Real loop devices, mkfs and mounts.
 */
class RestoreTest extends DriverFixture {

    private static final String BEFORE = "written before the snapshot";

    /** A source volume with a.bin and a.txt written before the snapshot, and b.txt and changes to both after. */
    private record Taken(String snapshotId, Published source, String shaOfA) {}

    private Taken snapshotBetweenWrites(String fsType, long size) throws IOException {
        String id = driver.create("pvc-source", size, mount(fsType)).getVolumeId();
        Published source = kubelet.stageAndPublish(id, mount(fsType), "pod-source");
        String shaOfA = writeA(source.target());

        String snapshot = driver.snapshot("snap-1", id).getSnapshotId();

        changeAfterTheSnapshot(source.target(), shaOfA);
        return new Taken(snapshot, source, shaOfA);
    }

    private static String writeA(Path root) throws IOException {
        String sha = TestData.writeSynced(root.resolve("a.bin"), TestData.random(3 * (int) MIB, 1));
        TestData.writeSynced(root.resolve("a.txt"), BEFORE);
        return sha;
    }

    /** Overwrites a.bin's first MiB in place, rewrites a.txt and adds b.txt, all synced. */
    private static void changeAfterTheSnapshot(Path root, String shaOfA) throws IOException {
        try (FileChannel a = FileChannel.open(root.resolve("a.bin"), StandardOpenOption.WRITE)) {
            a.write(ByteBuffer.wrap(TestData.random((int) MIB, 2)), 0);
            a.force(true);
        }
        TestData.writeSynced(root.resolve("a.txt"), "changed after the snapshot");
        TestData.writeSynced(root.resolve("b.txt"), "written after the snapshot");
        assertThat(TestData.sha256(root.resolve("a.bin"))).as("a.bin changed in the source").isNotEqualTo(shaOfA);
    }

    private static void assertHoldsWhatWasWrittenBeforeTheSnapshot(Path root, String shaOfA) throws IOException {
        assertThat(TestData.sha256(root.resolve("a.bin"))).isEqualTo(shaOfA);
        assertThat(Files.readString(root.resolve("a.txt"))).isEqualTo(BEFORE);
        assertThat(root.resolve("b.txt")).doesNotExist();
    }

    private Published restoreAndMount(String name, Taken taken, long size, String fsType) throws IOException {
        String restored = driver.create(name, size, mount(fsType), fromSnapshot(taken.snapshotId())).getVolumeId();
        return kubelet.stageAndPublish(restored, mount(fsType), "pod-" + name);
    }

    // What a restored volume holds

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.ext4", "e2fsck", "resize2fs"})
    void restoredExt4HoldsTheSnapshotsContentAndNothingWrittenAfter() throws IOException {
        Taken taken = snapshotBetweenWrites("ext4", 64 * MIB);

        Published restored = restoreAndMount("pvc-restored", taken, 64 * MIB, "ext4");

        assertHoldsWhatWasWrittenBeforeTheSnapshot(restored.target(), taken.shaOfA());
        assertThat(TestData.filesystemBytes(restored.target()))
                .isEqualTo(TestData.filesystemBytes(taken.source().target()));
    }

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.ext4", "e2fsck", "resize2fs"})
    void restoreIntoALargerVolumeGrowsItsExt4ToFillIt() throws IOException {
        Taken taken = snapshotBetweenWrites("ext4", 64 * MIB);

        Published restored = restoreAndMount("pvc-restored-large", taken, 128 * MIB, "ext4");

        assertHoldsWhatWasWrittenBeforeTheSnapshot(restored.target(), taken.shaOfA());
        long sourceFs = TestData.filesystemBytes(taken.source().target());
        // Each MiB added to an ext4 this small gives it over 0.9 MiB; the rest goes to inode tables.
        assertThat(TestData.filesystemBytes(restored.target())).isGreaterThan(sourceFs + 64 * MIB * 9 / 10);
    }

    /** xfs refuses to mount a second filesystem with a UUID already mounted: the restore needs a fresh one. */
    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.xfs", "xfs_admin", "xfs_growfs"})
    void restoredXfsMountsBesideItsSourceGrownAndHoldsTheSnapshotsContent() throws IOException {
        Taken taken = snapshotBetweenWrites("xfs", 320 * MIB);

        Published restored = restoreAndMount("pvc-restored-xfs", taken, 640 * MIB, "xfs");

        assertThat(MountInfo.at(taken.source().staging())).get().extracting(MountEntry::fsType).isEqualTo("xfs");
        assertThat(MountInfo.at(restored.staging())).get().extracting(MountEntry::fsType).isEqualTo("xfs");
        assertHoldsWhatWasWrittenBeforeTheSnapshot(restored.target(), taken.shaOfA());
        assertThat(taken.source().target().resolve("b.txt")).exists();
        long sourceFs = TestData.filesystemBytes(taken.source().target());
        assertThat(TestData.filesystemBytes(restored.target())).isGreaterThan(sourceFs + 320 * MIB * 9 / 10);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aSnapshotOfAnUnstagedVolumeHoldsWhatWasWrittenBeforeIt() throws IOException {
        String id = driver.create("pvc-source", 64 * MIB, mount("ext4")).getVolumeId();
        Published first = kubelet.stageAndPublish(id, mount("ext4"), "pod-1");
        String shaOfA = writeA(first.target());
        kubelet.takeDown(first);

        String snapshot = driver.snapshot("snap-1", id).getSnapshotId();
        Published again = kubelet.stageAndPublish(id, mount("ext4"), "pod-2");
        changeAfterTheSnapshot(again.target(), shaOfA);

        Published restored = restoreAndMount("pvc-restored", new Taken(snapshot, again, shaOfA), 64 * MIB, "ext4");
        assertHoldsWhatWasWrittenBeforeTheSnapshot(restored.target(), shaOfA);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aSnapshotStillRestoresAfterItsSourceVolumeIsDeleted() throws IOException {
        Taken taken = snapshotBetweenWrites("ext4", 64 * MIB);
        kubelet.takeDown(taken.source());
        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder()
                .setVolumeId(taken.source().volumeId()).build());

        Published restored = restoreAndMount("pvc-restored", taken, 64 * MIB, "ext4");

        assertHoldsWhatWasWrittenBeforeTheSnapshot(restored.target(), taken.shaOfA());
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aRestoredVolumeKeepsItsContentAfterItsSnapshotIsDeleted() throws IOException {
        Taken taken = snapshotBetweenWrites("ext4", 64 * MIB);
        String restored = driver.create("pvc-restored", 64 * MIB, mount("ext4"), fromSnapshot(taken.snapshotId()))
                .getVolumeId();

        driver.controller().deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(taken.snapshotId())
                .build());

        Published mounted = kubelet.stageAndPublish(restored, mount("ext4"), "pod-restored");
        assertHoldsWhatWasWrittenBeforeTheSnapshot(mounted.target(), taken.shaOfA());
    }

    // What the controller says about a restore

    @Test
    void restoredVolumeNamesItsSnapshotAsContentSourceWhereverItIsReported() {
        String source = driver.create("pvc-source", 64 * MIB, mount("ext4")).getVolumeId();
        String snapshot = driver.snapshot("snap-1", source).getSnapshotId();

        Volume restored = driver.create("pvc-restored", 64 * MIB, mount("ext4"), fromSnapshot(snapshot));

        assertThat(restored.getContentSource()).isEqualTo(fromSnapshot(snapshot));
        assertThat(restored.getCapacityBytes()).isEqualTo(64 * MIB);
        assertThat(driver.controller().controllerGetVolume(ControllerGetVolumeRequest.newBuilder()
                .setVolumeId(restored.getVolumeId()).build()).getVolume()).isEqualTo(restored);
        assertThat(driver.controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
                .extracting(ListVolumesResponse.Entry::getVolume).contains(restored);
    }

    @Test
    void restoreWithoutACapacityRangeGetsTheSnapshotsSize() {
        String source = driver.create("pvc-source", 48 * MIB, mount("ext4")).getVolumeId();
        String snapshot = driver.snapshot("snap-1", source).getSnapshotId();

        Volume restored = driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-restored")
                .addVolumeCapabilities(mount("ext4")).setVolumeContentSource(fromSnapshot(snapshot)).build())
                .getVolume();

        assertThat(restored.getCapacityBytes()).isEqualTo(48 * MIB);
    }

    @Test
    void restoreIsIdempotentAndTheNameWithAnotherSourceIsAlreadyExists() throws IOException {
        String source = driver.create("pvc-source", 64 * MIB, mount("ext4")).getVolumeId();
        String first = driver.snapshot("snap-1", source).getSnapshotId();
        String second = driver.snapshot("snap-2", source).getSnapshotId();
        Volume restored = driver.create("pvc-restored", 64 * MIB, mount("ext4"), fromSnapshot(first));
        List<Path> files = driver.poolFiles();

        assertThat(driver.create("pvc-restored", 64 * MIB, mount("ext4"), fromSnapshot(first))).isEqualTo(restored);
        assertFails(() -> driver.create("pvc-restored", 64 * MIB, mount("ext4"), fromSnapshot(second)),
                Code.ALREADY_EXISTS, "pvc-restored");
        assertFails(() -> driver.create("pvc-restored", 64 * MIB, mount("ext4")), Code.ALREADY_EXISTS,
                "pvc-restored");
        assertThat(driver.poolFiles()).isEqualTo(files);
    }

    @Test
    void restoreIntoLessThanTheSnapshotsSizeIsOutOfRangeAndCreatesNothing() throws IOException {
        String source = driver.create("pvc-source", 64 * MIB, mount("ext4")).getVolumeId();
        String snapshot = driver.snapshot("snap-1", source).getSnapshotId();
        List<Path> files = driver.poolFiles();

        assertFails(() -> driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-small")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(32 * MIB).setLimitBytes(32 * MIB))
                .addVolumeCapabilities(mount("ext4")).setVolumeContentSource(fromSnapshot(snapshot)).build()),
                Code.OUT_OF_RANGE, String.valueOf(64 * MIB));

        assertThat(driver.poolFiles()).isEqualTo(files);
        assertThat(driver.available()).isEqualTo(POOL_CAPACITY - 2 * 64 * MIB);
    }

    @Test
    void restoreFromASnapshotThatDoesNotExistIsNotFoundAndCreatesNothing() throws IOException {
        for (String id : List.of("default_aaaaaaaaaaaaaaaaaaaaaaaaaa", "snap-1", "../../etc/passwd",
                "other_aaaaaaaaaaaaaaaaaaaaaaaaaa")) {
            assertFails(() -> driver.create("pvc-restored", 64 * MIB, mount("ext4"), fromSnapshot(id)),
                    Code.NOT_FOUND, id, "does not exist on node " + TestDriver.NODE, "restore it there");
        }

        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    void restoreIntoAnotherPoolThanTheSnapshotsIsInvalidArgument() throws IOException {
        driver.close();
        driver = TestDriver.start(dir, List.of(new FilePoolConfig("default", dir.resolve("pool"), POOL_CAPACITY),
                new FilePoolConfig("other", dir.resolve("pool-other"), POOL_CAPACITY)));
        String source = driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-source")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(64 * MIB))
                .addVolumeCapabilities(mount("ext4")).putParameters("hearth.dev/pool", "other").build())
                .getVolume().getVolumeId();
        String snapshot = driver.snapshot("snap-1", source).getSnapshotId();

        assertFails(() -> driver.create("pvc-restored", 64 * MIB, mount("ext4"), fromSnapshot(snapshot)),
                Code.INVALID_ARGUMENT, "'other'", "'default'");

        assertThat(driver.poolFiles()).isEmpty();
        Volume inItsPool = driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-restored")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(64 * MIB))
                .addVolumeCapabilities(mount("ext4")).putParameters("hearth.dev/pool", "other")
                .setVolumeContentSource(fromSnapshot(snapshot)).build()).getVolume();
        assertThat(inItsPool.getVolumeContextMap()).containsEntry("hearth.dev/pool", "other");
    }

    /** The CO asks with the StorageClass's parameters; the snapshot a volume came from is not one of them. */
    @Test
    void validateConfirmsARestoredVolumeWithTheParametersItWasMadeWith() {
        String source = driver.create("pvc-source", 64 * MIB, mount("ext4")).getVolumeId();
        String snapshot = driver.snapshot("snap-1", source).getSnapshotId();
        Volume restored = driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-restored")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(64 * MIB))
                .addVolumeCapabilities(mount("ext4")).putParameters("hearth.dev/provisioning", "thin")
                .setVolumeContentSource(fromSnapshot(snapshot)).build()).getVolume();

        ValidateVolumeCapabilitiesResponse response = driver.controller().validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(restored.getVolumeId())
                        .addVolumeCapabilities(mount("ext4"))
                        .putParameters("hearth.dev/provisioning", "thin").build());

        assertThat(response.hasConfirmed()).as("confirmed, message: %s", response.getMessage()).isTrue();
    }
}
