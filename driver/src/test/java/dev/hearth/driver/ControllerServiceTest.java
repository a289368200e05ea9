package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.GIB;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.NODE;
import static dev.hearth.driver.TestDriver.POOL_CAPACITY;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static dev.hearth.driver.TestDriver.withMode;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGetCapabilitiesRequest;
import dev.hearth.csi.v1.ControllerGetVolumeRequest;
import dev.hearth.csi.v1.ControllerGetVolumeResponse;
import dev.hearth.csi.v1.ControllerServiceCapability;
import dev.hearth.csi.v1.ControllerServiceCapability.RPC.Type;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.GetCapacityResponse;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.ListVolumesResponse;
import dev.hearth.csi.v1.Topology;
import dev.hearth.csi.v1.TopologyRequirement;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.hearth.csi.v1.Volume;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.hearth.csi.v1.VolumeContentSource;
import dev.hearth.linux.FileOps;
import dev.hearth.storage.VolumeId;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The Controller service of a running driver, through its unix socket, on a 2 GiB file pool. */
class ControllerServiceTest extends DriverFixture {

    private static final String TOPOLOGY_KEY = "topology.hearth.dev/node";

    private static CreateVolumeRequest.Builder request(String name, long requiredBytes) {
        return CreateVolumeRequest.newBuilder()
                .setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(requiredBytes))
                .addVolumeCapabilities(mount("ext4"));
    }

    private Volume create(CreateVolumeRequest.Builder request) {
        return driver.controller().createVolume(request.build()).getVolume();
    }

    private List<Volume> listAll() {
        return driver.controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
                .map(ListVolumesResponse.Entry::getVolume).toList();
    }

    private static Topology node(String name) {
        return Topology.newBuilder().putSegments(TOPOLOGY_KEY, name).build();
    }

    private long available() {
        return driver.controller().getCapacity(GetCapacityRequest.getDefaultInstance()).getAvailableCapacity();
    }

    // CreateVolume

    @Test
    void createReturnsAnIdTheCapacityRoundedUpToAMibAndThisNodesTopology() throws IOException {
        Volume volume = create(request("pvc-1", 10 * MIB + 1));

        assertThat(VolumeId.parse(volume.getVolumeId())).isPresent();
        assertThat(volume.getCapacityBytes()).isEqualTo(11 * MIB);
        assertThat(volume.getAccessibleTopologyList()).containsExactly(node(NODE));
        assertThat(Files.size(driver.image(volume.getVolumeId()))).isEqualTo(11 * MIB);
    }

    @Test
    void createWithoutCapacityRangeMakesAOneGibVolume() {
        Volume volume = create(request("pvc-default", 0).clearCapacityRange());

        assertThat(volume.getCapacityBytes()).isEqualTo(GIB);
    }

    @Test
    void createWithOnlyALimitBelowTheDefaultMakesTheLimit() {
        Volume volume = create(request("pvc-limited", 0)
                .setCapacityRange(CapacityRange.newBuilder().setLimitBytes(100 * MIB)));

        assertThat(volume.getCapacityBytes()).isEqualTo(100 * MIB);
    }

    @Test
    void createIsIdempotentForTheSameRequest() throws IOException {
        Volume first = create(request("pvc-1", 64 * MIB));
        List<Path> filesAfterFirst = driver.poolFiles();

        Volume second = create(request("pvc-1", 64 * MIB));

        assertThat(second).isEqualTo(first);
        assertThat(driver.poolFiles()).isEqualTo(filesAfterFirst);
        assertThat(listAll()).hasSize(1);
    }

    @Test
    void createWithTheSameNameAndParametersOnlyKubernetesAddsIsTheSameVolume() {
        Volume first = create(request("pvc-1", 64 * MIB));

        Volume second = create(request("pvc-1", 64 * MIB)
                .putParameters("csi.storage.k8s.io/pvc/name", "data")
                .putParameters("csi.storage.k8s.io/pvc/namespace", "default")
                .putParameters("csi.storage.k8s.io/pv/name", "pvc-1"));

        assertThat(second.getVolumeId()).isEqualTo(first.getVolumeId());
    }

    @Test
    void createWithTheSameNameButAnotherSizeIsAlreadyExists() {
        create(request("pvc-1", 64 * MIB));

        assertFails(() -> create(request("pvc-1", 128 * MIB)), Code.ALREADY_EXISTS, "pvc-1");
        assertFails(() -> create(request("pvc-1", 0)
                .setCapacityRange(CapacityRange.newBuilder().setLimitBytes(32 * MIB))), Code.ALREADY_EXISTS, "pvc-1");
        assertThat(listAll()).singleElement().extracting(Volume::getCapacityBytes).isEqualTo(64 * MIB);
    }

    @Test
    void createWithTheSameNameButOtherParametersIsAlreadyExists() {
        create(request("pvc-1", 64 * MIB).putParameters("hearth.dev/provisioning", "thick"));

        assertFails(() -> create(request("pvc-1", 64 * MIB).putParameters("hearth.dev/provisioning", "thin")),
                Code.ALREADY_EXISTS, "pvc-1");
    }

    @ParameterizedTest
    @ValueSource(strings = {"foo", "hearth.dev/bogus", "csi.storage.k8s.io", "HEARTH.DEV/pool"})
    void createRejectsAnUnknownParameterNamingIt(String key) throws IOException {
        assertFails(() -> create(request("pvc-1", 64 * MIB).putParameters(key, "x")), Code.INVALID_ARGUMENT, key);

        assertThat(driver.poolFiles()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"foo", "hearth.dev/bogus"})
    void anUnknownParameterIsRefusedListingEveryKeyHearthAccepts(String key) {
        assertFails(() -> create(request("pvc-1", 64 * MIB).putParameters(key, "x")), Code.INVALID_ARGUMENT,
                "unknown parameter '" + key + "'; accepted: csi.storage.k8s.io/*, hearth.dev/pool, "
                        + "hearth.dev/provisioning");
        assertFails(() -> driver.controller().getCapacity(GetCapacityRequest.newBuilder().putParameters(key, "x")
                .build()), Code.INVALID_ARGUMENT, "accepted: csi.storage.k8s.io/*, hearth.dev/pool, "
                        + "hearth.dev/provisioning");
    }

    @Test
    void createAcceptsWhatTheExternalProvisionerAdds() {
        Volume volume = create(request("pvc-1", 64 * MIB)
                .putParameters("csi.storage.k8s.io/pvc/name", "data")
                .putParameters("csi.storage.k8s.io/pvc/namespace", "default")
                .putParameters("csi.storage.k8s.io/pv/name", "pvc-1"));

        assertThat(volume.getCapacityBytes()).isEqualTo(64 * MIB);
    }

    @Test
    void thePvcAndPvTheProvisionerNamesAreRecordedWithTheVolume() throws IOException {
        Volume volume = create(request("pvc-3f1c", 64 * MIB)
                .putParameters("csi.storage.k8s.io/pvc/name", "data-db-0")
                .putParameters("csi.storage.k8s.io/pvc/namespace", "shop")
                .putParameters("csi.storage.k8s.io/pv/name", "pvc-3f1c"));

        String metadata = Files.readString(driver.poolDir().resolve(volume.getVolumeId() + ".meta"));
        assertThat(metadata).contains("claim.namespace=shop", "claim.name=data-db-0", "claim.pv=pvc-3f1c")
                .doesNotContain("param.csi.storage.k8s.io");
        assertThat(volume.getVolumeContextMap()).doesNotContainKeys("csi.storage.k8s.io/pvc/name");
    }

    @Test
    void createInTheNamedPoolWorks() {
        Volume volume = create(request("pvc-1", 64 * MIB).putParameters("hearth.dev/pool", "default"));

        assertThat(VolumeId.parse(volume.getVolumeId())).get().extracting(VolumeId::pool).isEqualTo("default");
        assertThat(volume.getVolumeContextMap()).containsEntry("hearth.dev/pool", "default");
    }

    @Test
    void createRejectsAPoolThisNodeDoesNotHave() {
        assertFails(() -> create(request("pvc-1", 64 * MIB).putParameters("hearth.dev/pool", "nope")),
                Code.INVALID_ARGUMENT, "nope");
    }

    @Test
    void createRejectsAnUnknownProvisioningNamingTheValue() {
        assertFails(() -> create(request("pvc-1", 64 * MIB).putParameters("hearth.dev/provisioning", "thickest")),
                Code.INVALID_ARGUMENT, "thickest");
    }

    @ParameterizedTest
    @EnumSource(value = Mode.class, names = {"MULTI_NODE_MULTI_WRITER", "MULTI_NODE_READER_ONLY",
            "MULTI_NODE_SINGLE_WRITER"})
    void createRejectsMultiNodeAccessModes(Mode mode) throws IOException {
        assertFails(() -> create(request("pvc-1", 64 * MIB).clearVolumeCapabilities()
                .addVolumeCapabilities(withMode(mount("ext4"), mode))), Code.INVALID_ARGUMENT, mode.name());

        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    void createRejectsAnAccessModeOfANumberCsiDoesNotDefineNamingTheNumber() {
        VolumeCapability unknown = mount("ext4").toBuilder()
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setModeValue(117)).build();

        assertFails(() -> create(request("pvc-1", 64 * MIB).clearVolumeCapabilities().addVolumeCapabilities(unknown)),
                Code.INVALID_ARGUMENT, "access mode 117 (a number CSI does not define) is not supported");
    }

    @Test
    void createRejectsARequestWithoutCapabilities() {
        assertFails(() -> create(request("pvc-1", 64 * MIB).clearVolumeCapabilities()),
                Code.INVALID_ARGUMENT, "volume_capabilities");
    }

    @Test
    void createRejectsACapabilityWithoutAccessType() {
        VolumeCapability noType = mount("ext4").toBuilder().clearMount().build();

        assertFails(() -> create(request("pvc-1", 64 * MIB).clearVolumeCapabilities().addVolumeCapabilities(noType)),
                Code.INVALID_ARGUMENT, "mount nor block");
    }

    @Test
    void createRejectsAFilesystemHearthDoesNotMake() {
        assertFails(() -> create(request("pvc-1", 64 * MIB).clearVolumeCapabilities()
                .addVolumeCapabilities(mount("ntfs"))), Code.INVALID_ARGUMENT, "ntfs");
    }

    @Test
    void createAcceptsBlockVolumes() {
        Volume volume = create(request("pvc-1", 64 * MIB).clearVolumeCapabilities().addVolumeCapabilities(block()));

        assertThat(volume.getCapacityBytes()).isEqualTo(64 * MIB);
    }

    @Test
    void createWithAContentSourceNamingNeitherSnapshotNorVolumeIsInvalidAndCreatesNothing() throws IOException {
        assertFails(() -> create(request("pvc-1", 64 * MIB).setVolumeContentSource(
                VolumeContentSource.getDefaultInstance())), Code.INVALID_ARGUMENT, "volume_content_source");

        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    void createRejectsARequestWithoutName() {
        assertFails(() -> create(request("", 64 * MIB)), Code.INVALID_ARGUMENT, "name");
    }

    @Test
    void createForAnotherNodesTopologyIsResourceExhaustedAndCreatesNothing() throws IOException {
        TopologyRequirement elsewhere = TopologyRequirement.newBuilder()
                .addRequisite(node("node-b"))
                .addPreferred(node("node-b"))
                .build();

        assertFails(() -> create(request("pvc-1", 64 * MIB).setAccessibilityRequirements(elsewhere)),
                Code.RESOURCE_EXHAUSTED, NODE);

        assertThat(listAll()).isEmpty();
        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    void createForATopologyIncludingThisNodeWorks() {
        TopologyRequirement here = TopologyRequirement.newBuilder()
                .addRequisite(node("node-b"))
                .addRequisite(node(NODE))
                .addPreferred(node(NODE))
                .build();

        Volume volume = create(request("pvc-1", 64 * MIB).setAccessibilityRequirements(here));

        assertThat(volume.getAccessibleTopologyList()).containsExactly(node(NODE));
    }

    @Test
    void createTooLargeForThePoolIsResourceExhaustedAndLeavesNothing() throws IOException {
        assertFails(() -> create(request("pvc-huge", POOL_CAPACITY + MIB)), Code.RESOURCE_EXHAUSTED,
                String.valueOf(POOL_CAPACITY + MIB));

        assertThat(listAll()).isEmpty();
        assertThat(driver.poolFiles()).isEmpty();
        assertThat(available()).isEqualTo(POOL_CAPACITY);
    }

    @Test
    void createFillsThePoolExactlyAndThenIsResourceExhausted() throws IOException {
        create(request("pvc-1", POOL_CAPACITY - 64 * MIB));
        create(request("pvc-2", 64 * MIB));

        assertFails(() -> create(request("pvc-3", MIB)), Code.RESOURCE_EXHAUSTED, "pool 'default'");

        assertThat(listAll()).hasSize(2);
        assertThat(driver.poolFiles()).noneMatch(f -> f.toString().endsWith(".part"));
    }

    @Test
    void createWithALimitBelowOneMibIsOutOfRange() throws IOException {
        assertFails(() -> create(request("pvc-1", 0)
                .setCapacityRange(CapacityRange.newBuilder().setLimitBytes(1000))), Code.OUT_OF_RANGE, "1000");

        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    void createWithARangeNoMibMultipleFitsIsOutOfRange() {
        assertFails(() -> create(request("pvc-1", 0).setCapacityRange(CapacityRange.newBuilder()
                .setRequiredBytes(MIB + 1).setLimitBytes(2 * MIB - 1))), Code.OUT_OF_RANGE);
    }

    @Test
    void createWithRequiredAboveLimitIsInvalidArgument() {
        assertFails(() -> create(request("pvc-1", 0).setCapacityRange(CapacityRange.newBuilder()
                .setRequiredBytes(64 * MIB).setLimitBytes(32 * MIB))), Code.INVALID_ARGUMENT,
                String.valueOf(64 * MIB), String.valueOf(32 * MIB));
    }

    @Test
    void createWithNegativeBytesIsInvalidArgument() {
        assertFails(() -> create(request("pvc-1", -1)), Code.INVALID_ARGUMENT, "-1");
    }

    @Test
    void thickVolumesHaveTheirSpaceAllocatedAndThinOnesDoNot() throws Exception {
        Volume thick = create(request("pvc-thick", 64 * MIB).putParameters("hearth.dev/provisioning", "thick"));
        Volume thin = create(request("pvc-thin", 64 * MIB).putParameters("hearth.dev/provisioning", "thin"));

        assertThat(FileOps.allocatedBytes(driver.image(thick.getVolumeId()))).isGreaterThanOrEqualTo(64 * MIB);
        assertThat(FileOps.allocatedBytes(driver.image(thin.getVolumeId()))).isLessThan(MIB);
        assertThat(Files.size(driver.image(thin.getVolumeId()))).isEqualTo(64 * MIB);
    }

    @Test
    void whatAnInterruptedCreateLeftIsClearedWhenTheDriverStarts() throws IOException {
        driver.close();
        Path partial = dir.resolve("pool").resolve(VolumeId.mint("default", "pvc-crashed") + ".img.part");
        Path orphan = dir.resolve("pool").resolve(VolumeId.mint("default", "pvc-unrecorded") + ".img");
        for (Path file : List.of(partial, orphan)) {
            try (var image = new java.io.RandomAccessFile(file.toFile(), "rw")) {
                image.setLength(512 * MIB);
            }
        }

        driver = TestDriver.start(dir);

        assertThat(driver.poolFiles()).isEmpty();
        assertThat(listAll()).isEmpty();
        assertThat(available()).isEqualTo(POOL_CAPACITY);
    }

    @Test
    void volumesOutliveARestartOfTheDriver() throws IOException {
        Volume volume = create(request("pvc-1", 64 * MIB));

        driver.restart();

        assertThat(listAll()).containsExactly(volume);
        assertThat(create(request("pvc-1", 64 * MIB))).isEqualTo(volume);
        assertThat(available()).isEqualTo(POOL_CAPACITY - 64 * MIB);
    }

    // DeleteVolume

    @Test
    void deleteRemovesTheVolumeAndReturnsItsSpace() throws IOException {
        Volume volume = create(request("pvc-1", 256 * MIB));

        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId()).build());

        assertThat(listAll()).isEmpty();
        assertThat(driver.poolFiles()).isEmpty();
        assertThat(available()).isEqualTo(POOL_CAPACITY);
    }

    @Test
    void deleteIsIdempotent() throws IOException {
        Volume volume = create(request("pvc-1", 64 * MIB));
        DeleteVolumeRequest delete = DeleteVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId()).build();

        driver.controller().deleteVolume(delete);
        driver.controller().deleteVolume(delete);

        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    void deleteThenCreateWithTheSameNameMakesAFreshVolume() {
        Volume first = create(request("pvc-1", 64 * MIB));
        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(first.getVolumeId()).build());

        Volume second = create(request("pvc-1", 128 * MIB));

        assertThat(second.getVolumeId()).isEqualTo(first.getVolumeId());
        assertThat(second.getCapacityBytes()).isEqualTo(128 * MIB);
    }

    @ParameterizedTest
    @ValueSource(strings = {"../../etc/passwd", "foo", "default-../../../etc/passwd",
            "default-aaaaaaaaaaaaaaaaaaaaaaaaaa/../x", "other-aaaaaaaaaaaaaaaaaaaaaaaaaa",
            "default-aaaaaaaaaaaaaaaaaaaaaaaaaa"})
    void deleteOfAVolumeThatDoesNotExistSucceedsAndTouchesNothing(String id) throws IOException {
        Volume kept = create(request("pvc-kept", 64 * MIB));
        List<Path> before = driver.poolFiles();

        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());

        assertThat(driver.poolFiles()).isEqualTo(before);
        assertThat(listAll()).containsExactly(kept);
        assertThat(Path.of("/etc/passwd")).exists();
    }

    @Test
    void deleteWithoutIdIsInvalidArgument() {
        assertFails(() -> driver.controller().deleteVolume(DeleteVolumeRequest.getDefaultInstance()),
                Code.INVALID_ARGUMENT, "volume_id");
    }

    // ValidateVolumeCapabilities

    private ValidateVolumeCapabilitiesResponse validate(String id, VolumeCapability... capabilities) {
        return driver.controller().validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
                .setVolumeId(id).addAllVolumeCapabilities(List.of(capabilities)).build());
    }

    @Test
    void validateConfirmsCapabilitiesHearthServes() {
        Volume volume = create(request("pvc-1", 64 * MIB));
        VolumeCapability[] supported = {mount("ext4"), mount("xfs"), mount(""), block(),
                withMode(mount("btrfs"), Mode.SINGLE_NODE_READER_ONLY),
                withMode(block(), Mode.SINGLE_NODE_MULTI_WRITER)};

        ValidateVolumeCapabilitiesResponse response = validate(volume.getVolumeId(), supported);

        assertThat(response.hasConfirmed()).as("confirmed, message: %s", response.getMessage()).isTrue();
        assertThat(response.getConfirmed().getVolumeCapabilitiesList()).containsExactly(supported);
    }

    @Test
    void validateDoesNotConfirmMultiNodeAndSaysWhy() {
        Volume volume = create(request("pvc-1", 64 * MIB));

        ValidateVolumeCapabilitiesResponse response = validate(volume.getVolumeId(), mount("ext4"),
                withMode(mount("ext4"), Mode.MULTI_NODE_MULTI_WRITER));

        assertThat(response.hasConfirmed()).isFalse();
        assertThat(response.getMessage()).contains("MULTI_NODE_MULTI_WRITER");
    }

    @Test
    void validateDoesNotConfirmAFilesystemHearthDoesNotMake() {
        Volume volume = create(request("pvc-1", 64 * MIB));

        ValidateVolumeCapabilitiesResponse response = validate(volume.getVolumeId(), mount("ntfs"));

        assertThat(response.hasConfirmed()).isFalse();
        assertThat(response.getMessage()).contains("ntfs");
    }

    @Test
    void validateDoesNotConfirmParametersHearthDoesNotKnow() {
        Volume volume = create(request("pvc-1", 64 * MIB));

        ValidateVolumeCapabilitiesResponse response = driver.controller().validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(volume.getVolumeId())
                        .addVolumeCapabilities(mount("ext4")).putParameters("foo", "bar").build());

        assertThat(response.hasConfirmed()).isFalse();
        assertThat(response.getMessage()).contains("foo");
    }

    @Test
    void validateConfirmsTheParametersTheVolumeWasMadeWith() {
        Volume volume = create(request("pvc-1", 64 * MIB).putParameters("hearth.dev/provisioning", "thin"));

        ValidateVolumeCapabilitiesResponse response = driver.controller().validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(volume.getVolumeId())
                        .addVolumeCapabilities(mount("ext4"))
                        .putParameters("hearth.dev/pool", "default")
                        .putParameters("hearth.dev/provisioning", "thin")
                        .putParameters("csi.storage.k8s.io/pvc/name", "data").build());

        assertThat(response.hasConfirmed()).as("confirmed, message: %s", response.getMessage()).isTrue();
        assertThat(response.getConfirmed().getParametersMap()).containsEntry("hearth.dev/provisioning", "thin");
    }

    @Test
    void validateDoesNotConfirmParametersTheVolumeDoesNotHave() {
        Volume volume = create(request("pvc-1", 64 * MIB).putParameters("hearth.dev/provisioning", "thick"));

        ValidateVolumeCapabilitiesResponse response = driver.controller().validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(volume.getVolumeId())
                        .addVolumeCapabilities(mount("ext4")).putParameters("hearth.dev/provisioning", "thin").build());

        assertThat(response.hasConfirmed()).isFalse();
        assertThat(response.getMessage()).contains("thin");
    }

    @ParameterizedTest
    @ValueSource(strings = {"default-aaaaaaaaaaaaaaaaaaaaaaaaaa", "../../etc/passwd"})
    void validateOfAnUnknownVolumeIsNotFound(String id) {
        assertFails(() -> validate(id, mount("ext4")), Code.NOT_FOUND, id);
    }

    @Test
    void validateWithoutCapabilitiesIsInvalidArgument() {
        Volume volume = create(request("pvc-1", 64 * MIB));

        assertFails(() -> validate(volume.getVolumeId()), Code.INVALID_ARGUMENT, "volume_capabilities");
    }

    @Test
    void validateWithoutIdIsInvalidArgument() {
        assertFails(() -> validate("", mount("ext4")), Code.INVALID_ARGUMENT, "volume_id");
    }

    // ListVolumes

    @Test
    void listVolumesPagesThroughEveryVolumeExactlyOnce() {
        List<String> created = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            created.add(create(request("pvc-" + i, MIB)).getVolumeId());
        }

        List<String> seen = new ArrayList<>();
        List<Integer> pageSizes = new ArrayList<>();
        String token = "";
        do {
            ListVolumesResponse page = driver.controller().listVolumes(ListVolumesRequest.newBuilder()
                    .setMaxEntries(2).setStartingToken(token).build());
            page.getEntriesList().forEach(e -> seen.add(e.getVolume().getVolumeId()));
            pageSizes.add(page.getEntriesCount());
            token = page.getNextToken();
        } while (!token.isEmpty() && pageSizes.size() < 10);

        assertThat(pageSizes).containsExactly(2, 2, 1);
        assertThat(seen).doesNotHaveDuplicates().containsExactlyInAnyOrderElementsOf(created);
    }

    /** The sorted IDs kept between pages are made again once a volume came or went. */
    @Test
    void listVolumesSeesVolumesThatCameAndWentSinceTheLastListing() {
        String first = create(request("pvc-1", MIB)).getVolumeId();
        ListVolumesRequest all = ListVolumesRequest.newBuilder().build();
        assertThat(driver.controller().listVolumes(all).getEntriesList()).hasSize(1);

        String second = create(request("pvc-2", MIB)).getVolumeId();
        assertThat(driver.controller().listVolumes(all).getEntriesList())
                .extracting(e -> e.getVolume().getVolumeId()).containsExactlyInAnyOrder(first, second);
        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(first).build());
        assertThat(driver.controller().listVolumes(all).getEntriesList())
                .extracting(e -> e.getVolume().getVolumeId()).containsExactly(second);
    }

    @Test
    void listVolumesReadsOnlyTheRecordsOfItsPage() throws java.io.IOException {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ids.add(create(request("pvc-" + i, MIB)).getVolumeId());
        }
        ids.sort(null);
        // The last volume's record cannot be read (a directory in its place): a page without it must not try.
        Path record = driver.poolDir().resolve(ids.get(2) + ".meta");
        Path aside = driver.poolDir().resolve("aside");
        Files.move(record, aside);
        Files.createDirectory(record);
        try {
            ListVolumesResponse first = driver.controller().listVolumes(
                    ListVolumesRequest.newBuilder().setMaxEntries(2).build());

            assertThat(first.getEntriesList()).extracting(e -> e.getVolume().getVolumeId())
                    .containsExactly(ids.get(0), ids.get(1));
            assertThat(first.getNextToken()).isEqualTo(ids.get(2));
        } finally {
            Files.delete(record);
            Files.move(aside, record);
        }
    }

    @Test
    void listVolumesKeepsPagingWhenTheVolumeATokenNamesIsDeleted() {
        for (int i = 0; i < 3; i++) {
            create(request("pvc-" + i, MIB));
        }
        ListVolumesResponse first = driver.controller().listVolumes(
                ListVolumesRequest.newBuilder().setMaxEntries(1).build());
        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(first.getNextToken()).build());

        ListVolumesResponse rest = driver.controller().listVolumes(ListVolumesRequest.newBuilder()
                .setStartingToken(first.getNextToken()).build());

        assertThat(rest.getEntriesList()).hasSize(1);
        assertThat(rest.getNextToken()).isEmpty();
    }

    @Test
    void listVolumesReportsSizeAndTopology() {
        Volume volume = create(request("pvc-1", 3 * MIB));

        assertThat(listAll()).singleElement().satisfies(listed -> {
            assertThat(listed.getVolumeId()).isEqualTo(volume.getVolumeId());
            assertThat(listed.getCapacityBytes()).isEqualTo(3 * MIB);
            assertThat(listed.getAccessibleTopologyList()).containsExactly(node(NODE));
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"garbage", "42", "default-aaaaaaaaaaaaaaaaaaaaaaaaa"})
    void listVolumesWithATokenItDidNotIssueIsAborted(String token) {
        assertFails(() -> driver.controller().listVolumes(ListVolumesRequest.newBuilder()
                .setStartingToken(token).build()), Code.ABORTED, token);
    }

    @Test
    void listVolumesWithNegativeMaxEntriesIsInvalidArgument() {
        assertFails(() -> driver.controller().listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(-1).build()),
                Code.INVALID_ARGUMENT, "-1");
    }

    // GetCapacity

    @Test
    void getCapacityShrinksByAThickVolumeAndGrowsBackOnDelete() {
        long before = available();
        Volume volume = create(request("pvc-1", 256 * MIB));

        assertThat(before).isEqualTo(POOL_CAPACITY);
        assertThat(available()).isEqualTo(POOL_CAPACITY - 256 * MIB);

        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId()).build());
        assertThat(available()).isEqualTo(POOL_CAPACITY);
    }

    @Test
    void getCapacityReportsTheLargestAndSmallestVolume() {
        create(request("pvc-1", 512 * MIB));

        GetCapacityResponse capacity = driver.controller().getCapacity(GetCapacityRequest.getDefaultInstance());

        assertThat(capacity.hasMaximumVolumeSize()).isTrue();
        assertThat(capacity.getMaximumVolumeSize().getValue()).isEqualTo(POOL_CAPACITY - 512 * MIB);
        assertThat(capacity.getMinimumVolumeSize().getValue()).isEqualTo(MIB);
    }

    @Test
    void getCapacityForThisNodesTopologyIsThePools() {
        GetCapacityResponse capacity = driver.controller().getCapacity(GetCapacityRequest.newBuilder()
                .setAccessibleTopology(node(NODE)).addVolumeCapabilities(mount("ext4"))
                .putParameters("hearth.dev/pool", "default").build());

        assertThat(capacity.getAvailableCapacity()).isEqualTo(POOL_CAPACITY);
    }

    @Test
    void getCapacityForAnotherNodesTopologyIsZero() {
        GetCapacityResponse capacity = driver.controller().getCapacity(GetCapacityRequest.newBuilder()
                .setAccessibleTopology(node("node-b")).build());

        assertThat(capacity.getAvailableCapacity()).isZero();
    }

    @Test
    void getCapacityForAPoolThisNodeDoesNotHaveIsInvalidArgument() {
        assertFails(() -> driver.controller().getCapacity(GetCapacityRequest.newBuilder()
                .putParameters("hearth.dev/pool", "nope").build()), Code.INVALID_ARGUMENT, "nope");
    }

    // ControllerGetVolume

    @Test
    void getVolumeReportsTheVolumeAsCreatedAndItsConditionNormal() {
        Volume volume = create(request("pvc-1", 64 * MIB));

        ControllerGetVolumeResponse got = driver.controller().controllerGetVolume(
                ControllerGetVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId()).build());

        assertThat(got.getVolume()).isEqualTo(volume);
        assertThat(got.getStatus().hasVolumeCondition()).isTrue();
        assertThat(got.getStatus().getVolumeCondition().getAbnormal()).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"default-aaaaaaaaaaaaaaaaaaaaaaaaaa", "other-aaaaaaaaaaaaaaaaaaaaaaaaaa", "../../etc/passwd"})
    void getVolumeOfAnUnknownVolumeIsNotFound(String id) {
        assertFails(() -> driver.controller().controllerGetVolume(
                ControllerGetVolumeRequest.newBuilder().setVolumeId(id).build()), Code.NOT_FOUND, id);
    }

    @Test
    void getVolumeWithoutIdIsInvalidArgument() {
        assertFails(() -> driver.controller().controllerGetVolume(ControllerGetVolumeRequest.getDefaultInstance()),
                Code.INVALID_ARGUMENT, "volume_id");
    }

    @Test
    void listVolumesReportsEachVolumesConditionNormal() {
        create(request("pvc-1", MIB));
        create(request("pvc-2", MIB));

        List<ListVolumesResponse.Entry> entries = driver.controller()
                .listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList();

        assertThat(entries).hasSize(2).allSatisfy(entry -> {
            assertThat(entry.getStatus().hasVolumeCondition()).isTrue();
            assertThat(entry.getStatus().getVolumeCondition().getAbnormal()).isFalse();
        });
    }

    // ControllerGetCapabilities

    @Test
    void controllerCapabilitiesAreExactlyWhatIsImplemented() {
        var capabilities = driver.controller()
                .controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList();

        assertThat(capabilities).extracting(ControllerServiceCapability::getRpc)
                .extracting(ControllerServiceCapability.RPC::getType)
                .containsExactlyInAnyOrder(Type.CREATE_DELETE_VOLUME, Type.LIST_VOLUMES, Type.GET_CAPACITY,
                        Type.SINGLE_NODE_MULTI_WRITER, Type.GET_VOLUME, Type.VOLUME_CONDITION,
                        Type.CREATE_DELETE_SNAPSHOT, Type.LIST_SNAPSHOTS, Type.CLONE_VOLUME)
                .as("the node grows volumes (NodeExpandVolume); the controller has nothing to do for it")
                .doesNotContain(Type.EXPAND_VOLUME);
    }

    @Test
    void volumeContextNamesThePool() {
        Volume volume = create(request("pvc-1", MIB));

        assertThat(volume.getVolumeContextMap()).isEqualTo(Map.of("hearth.dev/pool", "default"));
    }
}
