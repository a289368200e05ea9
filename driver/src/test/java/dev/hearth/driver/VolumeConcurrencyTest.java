package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.NODE;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.util.concurrent.ListenableFuture;
import dev.hearth.controller.ControllerService;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.NodeGetInfoRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.hearth.csi.v1.Volume;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.ErrorMapping;
import dev.hearth.driver.server.GrpcServer;
import dev.hearth.driver.server.LockKeys;
import dev.hearth.driver.server.VolumeLockInterceptor;
import dev.hearth.driver.server.VolumeLocks;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.Pools;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.file.FilePoolConfig;
import io.grpc.ManagedChannel;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two operations on one volume never run together: the second is answered ABORTED at once, and
 * operations on other volumes go on. Held deterministically, never by timing.
 */
class VolumeConcurrencyTest {

    @TempDir
    Path dir;

    private static CreateVolumeRequest createRequest(String name) {
        return CreateVolumeRequest.newBuilder().setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(MIB))
                .addVolumeCapabilities(mount("ext4")).build();
    }

    /**
     * The driver's own pieces (its controller, its lock key, the lock interceptor, error mapping)
     * on a real socket, with the test holding the lock a slow operation on the volume would hold.
     */
    @Test
    void aCallOnALockedVolumeIsAbortedWhileOtherVolumesProceed() throws IOException, InterruptedException {
        VolumeLocks locks = new VolumeLocks();
        Pools pools = new Pools(List.of(FilePool.open(new FilePoolConfig("default", dir.resolve("pool"), 1L << 30))),
                null);
        ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
        GrpcServer server = GrpcServer.start(Endpoint.parse("unix://" + dir.resolve("csi.sock")),
                List.of(new ControllerService(pools, NODE).bindService()),
                List.of(new VolumeLockInterceptor(locks, LockKeys::of), new ErrorMapping()), executor);
        ManagedChannel channel = Channels.channelTo(server.endpoint());
        try {
            var controller = ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
            String busyId = VolumeId.mint("default", "pvc-busy").toString();

            try (VolumeLocks.Handle held = locks.tryLock(VolumeId.keyOf("pvc-busy")).orElseThrow()) {
                assertFails(() -> controller.createVolume(createRequest("pvc-busy")), Code.ABORTED,
                        VolumeId.keyOf("pvc-busy"));
                assertFails(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(busyId).build()),
                        Code.ABORTED, VolumeId.keyOf("pvc-busy"));

                Volume other = controller.createVolume(createRequest("pvc-free")).getVolume();
                assertThat(other.getCapacityBytes()).isEqualTo(MIB);
                assertThat(pools.defaultPool().list()).extracting(v -> v.name()).containsExactly("pvc-free");
            }

            Volume busy = controller.createVolume(createRequest("pvc-busy")).getVolume();
            assertThat(busy.getVolumeId()).isEqualTo(busyId);
            assertThat(locks.isLocked(VolumeId.keyOf("pvc-busy"))).as("released after the call").isFalse();
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            server.close();
            executor.shutdownNow();
        }
    }

    /**
     * The whole driver: a ValidateVolumeCapabilities on V is held inside its read of V's metadata
     * (a named pipe for the moment); meanwhile V is busy for every other call, W is not, and the
     * held call then completes normally.
     */
    @Test
    @RequiresTools("mkfifo")
    void whileACallOnAVolumeIsInProgressTheDriverAbortsOthersOnItAndServesOtherVolumes() throws Exception {
        try (TestDriver driver = TestDriver.start(dir)) {
            String v = driver.create("pvc-v", MIB, mount("ext4")).getVolumeId();
            ListenableFuture<ValidateVolumeCapabilitiesResponse> held;
            try (FifoGate gate = FifoGate.replace(driver.poolDir().resolve(v + ".meta"))) {
                held = driver.controllerAsync().validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
                                .setVolumeId(v).addVolumeCapabilities(mount("ext4")).build());
                gate.awaitReader(Duration.ofSeconds(30));

                assertFails(() -> driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder()
                        .setVolumeId(v).build()), Code.ABORTED, VolumeId.parse(v).orElseThrow().key());
                assertFails(() -> driver.controller().createVolume(createRequest("pvc-v")), Code.ABORTED);
                assertFails(() -> driver.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(v)
                        .setStagingTargetPath(dir.resolve("staging").toString())
                        .setVolumeCapability(mount("ext4")).build()), Code.ABORTED);

                Volume w = driver.create("pvc-w", MIB, mount("ext4"));
                assertThat(w.getVolumeId()).isNotEqualTo(v);
                assertThat(driver.controller().getCapacity(GetCapacityRequest.getDefaultInstance())
                        .getAvailableCapacity()).isEqualTo(TestDriver.POOL_CAPACITY - 2 * MIB);
                assertThat(driver.identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
                assertThat(driver.node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance()).getNodeId())
                        .isEqualTo(NODE);
                assertThat(held).isNotDone();

                gate.release();
            }

            ValidateVolumeCapabilitiesResponse response = held.get(30, TimeUnit.SECONDS);
            assertThat(response.hasConfirmed()).isTrue();
            driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v).build());
            assertThat(driver.controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
                    .extracting(e -> e.getVolume().getVolumeId()).doesNotContain(v).hasSize(1);
        }
    }
}
