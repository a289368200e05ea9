package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.util.concurrent.ListenableFuture;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How a stopping driver treats the calls still at work. */
class DriverShutdownTest {

    @TempDir
    Path dir;

    /**
     * A call whose client has hung up (the demo's Ctrl-C, a provisioner restarting) is still at work
     * in its handler when the driver stops: the stop waits for it within the grace instead of
     * interrupting it half-way. The server alone is done at once, its connections being gone.
     */
    @Test
    @RequiresTools("mkfifo")
    void aStopWaitsWithinItsGraceForACallWhoseClientHungUp() throws Exception {
        Endpoint endpoint = Endpoint.parse("unix://" + dir.resolve("csi.sock"));
        Driver driver = Driver.start(new Driver.Settings(endpoint, "node-a", "csi.hearth.dev", dir.resolve("state"),
                List.of(new FilePoolConfig("default", dir.resolve("pool"), 1L << 30)), null, 10, Optional.empty(),
                FilesystemType.EXT4));
        CompletableFuture<Void> stopped = new CompletableFuture<>();
        try {
            ManagedChannel channel = Channels.channelTo(endpoint);
            String id = ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                    .createVolume(CreateVolumeRequest.newBuilder().setName("pvc-hung-up")
                            .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(MIB))
                            .addVolumeCapabilities(mount("ext4")).build())
                    .getVolume().getVolumeId();
            try (FifoGate gate = FifoGate.replace(dir.resolve("pool").resolve(id + ".meta"))) {
                ListenableFuture<ValidateVolumeCapabilitiesResponse> call = ControllerGrpc.newFutureStub(channel)
                        .validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(id)
                                .addVolumeCapabilities(mount("ext4")).build());
                gate.awaitReader(Duration.ofSeconds(30));
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                // The cancelled call's future completes on the channel's executor, which can run just
                // after the channel reports itself terminated.
                try {
                    call.get(5, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException | java.util.concurrent.CancellationException
                        | java.util.concurrent.TimeoutException e) {
                    // cancelled, as expected; a call still running fails the assertion below
                }
                assertThat(call.isDone()).as("the client's side of the call is over").isTrue();

                Thread.ofPlatform().start(() -> {
                    driver.shutdown(Duration.ofSeconds(30));
                    stopped.complete(null);
                });
                Thread.sleep(500);
                assertThat(stopped).as("the stop waits for the handler still at work").isNotDone();

                gate.release();
                stopped.get(10, TimeUnit.SECONDS);
            }
        } finally {
            if (!stopped.isDone()) {
                driver.shutdown(Duration.ZERO);
            }
        }
    }
}
