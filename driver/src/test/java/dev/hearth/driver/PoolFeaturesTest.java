package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.POOL_CAPACITY;
import static dev.hearth.driver.TestDriver.fromSnapshot;
import static dev.hearth.driver.TestDriver.fromVolume;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGetCapabilitiesRequest;
import dev.hearth.csi.v1.ControllerGetVolumeRequest;
import dev.hearth.csi.v1.ControllerServiceCapability;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.GetPluginCapabilitiesRequest;
import dev.hearth.csi.v1.ListSnapshotsRequest;
import dev.hearth.csi.v1.NodeGetCapabilitiesRequest;
import dev.hearth.csi.v1.NodeServiceCapability;
import dev.hearth.csi.v1.PluginCapability;
import dev.hearth.csi.v1.VolumeContentSource;
import dev.hearth.storage.PoolFeature;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.file.FilePoolConfig;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Two pools, one without a feature: the driver still advertises it, because the other pool has it,
 * and refuses it only for the volumes of the pool that lacks it, naming that pool and its kind.
 */
class PoolFeaturesTest extends DriverFixture {

    private static final String LIMITED = "limited";

    @Test
    void snapshotsStayAdvertisedAndAreRefusedOnlyInThePoolWithout() throws IOException {
        startWithLimitedPoolWithout(PoolFeature.SNAPSHOTS);
        String full = driver.create("pvc-full", 16 * MIB, mount("ext4")).getVolumeId();
        String limited = createInLimited("pvc-limited", null);

        assertThat(controllerCapabilities()).contains(ControllerServiceCapability.RPC.Type.CREATE_DELETE_SNAPSHOT,
                ControllerServiceCapability.RPC.Type.LIST_SNAPSHOTS);
        String taken = driver.snapshot("snap-full", full).getSnapshotId();
        assertFails(() -> driver.controller().createSnapshot(CreateSnapshotRequest.newBuilder().setName("snap-limited")
                .setSourceVolumeId(limited).build()), Code.INVALID_ARGUMENT,
                "pool 'limited' (kind file) cannot take snapshots");

        assertThat(driver.controller().listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesList())
                .extracting(e -> e.getSnapshot().getSnapshotId()).containsExactly(taken);
        assertThat(entries(dir.resolve(LIMITED).resolve("snapshots"))).isEmpty();
    }

    /** A snapshot taken before the operator switched snapshots off in its pool is not restored there. */
    @Test
    void restoreIsRefusedInAPoolWhoseSnapshotsWereSwitchedOff() throws IOException {
        startWith(List.of(fullPool(), limitedPool()));
        String volume = createInLimited("pvc-limited", null);
        String snapshot = driver.snapshot("snap-limited", volume).getSnapshotId();
        List<String> before = entries(dir.resolve(LIMITED));

        startWithLimitedPoolWithout(PoolFeature.SNAPSHOTS);

        assertFails(() -> createInLimited("pvc-restore", fromSnapshot(snapshot)), Code.INVALID_ARGUMENT,
                "pool 'limited' (kind file) cannot restore snapshots");
        assertThat(entries(dir.resolve(LIMITED))).isEqualTo(before);
    }

    /** A pool without snapshots has none to look up: a restore naming it is refused by its name, not NOT_FOUND. */
    @Test
    void aSnapshotIdOfAPoolWithoutSnapshotsIsRefusedThereAndOtherwiseNamesNothing() throws IOException {
        startWithLimitedPoolWithout(PoolFeature.SNAPSHOTS);
        String never = SnapshotId.mint(LIMITED, "snap-never").toString();
        List<String> before = entries(dir.resolve(LIMITED));

        assertFails(() -> createInLimited("pvc-restore", fromSnapshot(never)), Code.INVALID_ARGUMENT,
                "pool 'limited' (kind file) cannot restore snapshots");
        assertThat(driver.controller().listSnapshots(ListSnapshotsRequest.newBuilder().setSnapshotId(never).build())
                .getEntriesList()).isEmpty();
        driver.controller().deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(never).build());

        assertThat(entries(dir.resolve(LIMITED))).isEqualTo(before);
    }

    @Test
    void clonesStayAdvertisedAndAreRefusedOnlyInThePoolWithout() throws IOException {
        startWithLimitedPoolWithout(PoolFeature.CLONES);
        String full = driver.create("pvc-full", 16 * MIB, mount("ext4")).getVolumeId();
        String limited = createInLimited("pvc-limited", null);
        List<String> before = entries(dir.resolve(LIMITED));

        assertThat(controllerCapabilities()).contains(ControllerServiceCapability.RPC.Type.CLONE_VOLUME);
        assertThat(driver.create("pvc-full-clone", 16 * MIB, mount("ext4"), fromVolume(full)).getVolumeId())
                .isNotEmpty();
        assertFails(() -> createInLimited("pvc-limited-clone", fromVolume(limited)), Code.INVALID_ARGUMENT,
                "pool 'limited' (kind file) cannot clone volumes");

        assertThat(entries(dir.resolve(LIMITED))).isEqualTo(before);
    }

    @Test
    void expansionStaysAdvertisedAndIsRefusedOnlyInThePoolWithout() throws IOException {
        startWithLimitedPoolWithout(PoolFeature.EXPANSION);
        String full = driver.create("pvc-full", 16 * MIB, mount("ext4")).getVolumeId();
        String limited = createInLimited("pvc-limited", null);

        assertThat(driver.node().nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance())
                .getCapabilitiesList()).extracting(c -> c.getRpc().getType())
                .contains(NodeServiceCapability.RPC.Type.EXPAND_VOLUME);
        assertThat(driver.identity().getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance())
                .getCapabilitiesList()).filteredOn(PluginCapability::hasVolumeExpansion)
                .extracting(c -> c.getVolumeExpansion().getType())
                .containsExactly(PluginCapability.VolumeExpansion.Type.ONLINE);
        assertThat(kubelet.expand(full, dir, 32 * MIB)).isEqualTo(32 * MIB);
        assertFails(() -> kubelet.expand(limited, dir, 32 * MIB), Code.INVALID_ARGUMENT,
                "pool 'limited' (kind file) cannot expand volumes");

        assertThat(sizeOf(limited)).isEqualTo(16 * MIB);
    }

    private FilePoolConfig fullPool() {
        return new FilePoolConfig("default", dir.resolve("default"), POOL_CAPACITY);
    }

    private FilePoolConfig limitedPool() {
        return new FilePoolConfig(LIMITED, dir.resolve(LIMITED), POOL_CAPACITY);
    }

    /** Replaces the fixture's driver with one of a full pool, the default, and a pool without {@code off}. */
    private void startWithLimitedPoolWithout(PoolFeature off) throws IOException {
        startWith(List.of(fullPool(), limitedPool().without(off)));
    }

    private void startWith(List<FilePoolConfig> pools) throws IOException {
        driver.close();
        driver = TestDriver.start(dir, pools);
        kubelet = new Kubelet(driver);
    }

    private String createInLimited(String name, VolumeContentSource source) {
        CreateVolumeRequest.Builder request = CreateVolumeRequest.newBuilder().setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(16 * MIB))
                .addVolumeCapabilities(mount("ext4")).putParameters("hearth.dev/pool", LIMITED);
        if (source != null) {
            request.setVolumeContentSource(source);
        }
        return driver.controller().createVolume(request.build()).getVolume().getVolumeId();
    }

    private List<ControllerServiceCapability.RPC.Type> controllerCapabilities() {
        return driver.controller().controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance())
                .getCapabilitiesList().stream().map(c -> c.getRpc().getType()).toList();
    }

    private long sizeOf(String volumeId) {
        return driver.controller().controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(volumeId)
                .build()).getVolume().getCapacityBytes();
    }

    private static List<String> entries(Path directory) throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            return files.map(f -> f.getFileName().toString()).sorted().toList();
        }
    }
}
