package dev.hearth.driver.server;

import com.google.protobuf.Message;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateSnapshotResponse;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.CreateVolumeResponse;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteSnapshotResponse;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeResponse;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetPluginInfoResponse;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.Snapshot;
import dev.hearth.csi.v1.Volume;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.tool.ToolException;
import dev.hearth.storage.tool.ToolResult;
import io.grpc.Context;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Small services for tests that need a server to answer something. */
final class TestServices {

    static final String PLUGIN_NAME = "hearth.test.dev";

    private TestServices() {}

    /** Answers GetPluginInfo with {@link #PLUGIN_NAME}. */
    static IdentityGrpc.IdentityImplBase identity() {
        return new IdentityGrpc.IdentityImplBase() {
            @Override
            public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> responses) {
                responses.onNext(GetPluginInfoResponse.newBuilder().setName(PLUGIN_NAME).build());
                responses.onCompleted();
            }
        };
    }

    /**
     * A Controller for the interceptors around it. DeleteVolume of "slow", DeleteSnapshot of "slow" and
     * CreateSnapshot named "slow" block until {@link #release}d; DeleteVolume of "missing" throws a storage NotFound, of "broken" a storage Failed caused by an IOException, of "refused" a Failed explained by a tool that said no
     * (INTERNAL), of any other volume returns at once; the handler's runs are counted per volume.
     * CreateVolume answers with the volume "hv-" and the name, CreateSnapshot with the snapshot "hs-"
     * and the name, or with an empty response for a request without a name.
     */
    static final class Controller extends ControllerGrpc.ControllerImplBase {
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        volatile Context slowCall;

        /** The lock key as the driver would take it: DeleteVolume's volume id; no other call here has one. */
        static Set<String> keyOf(Message request) {
            return request instanceof DeleteVolumeRequest delete ? Set.of(delete.getVolumeId()) : Set.of();
        }

        @Override
        public void deleteVolume(DeleteVolumeRequest request, StreamObserver<DeleteVolumeResponse> responses) {
            runs.computeIfAbsent(request.getVolumeId(), k -> new AtomicInteger()).incrementAndGet();
            switch (request.getVolumeId()) {
                case "slow" -> hold();
                case "missing" -> throw new StorageException.NotFound("volume \"missing\" does not exist");
                case "broken" -> throw new StorageException.Failed("cannot read volume broken",
                        new IOException("Input/output error"));
                case "refused" -> {
                    ToolException said = ToolException.exited(List.of("resize2fs", "/dev/loop7"),
                            new ToolResult(1, "", "resize2fs: Permission denied to resize filesystem", Duration.ZERO));
                    throw StorageException.Failed.byTool("growing the ext4 filesystem on /dev/loop7: "
                            + said.getMessage(), said);
                }
                default -> {}
            }
            responses.onNext(DeleteVolumeResponse.getDefaultInstance());
            responses.onCompleted();
        }

        @Override
        public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> responses) {
            responses.onNext(CreateVolumeResponse.newBuilder()
                    .setVolume(Volume.newBuilder().setVolumeId("hv-" + request.getName()))
                    .build());
            responses.onCompleted();
        }

        @Override
        public void deleteSnapshot(DeleteSnapshotRequest request, StreamObserver<DeleteSnapshotResponse> responses) {
            if (request.getSnapshotId().equals("slow")) {
                hold();
            }
            responses.onNext(DeleteSnapshotResponse.getDefaultInstance());
            responses.onCompleted();
        }

        @Override
        public void createSnapshot(CreateSnapshotRequest request, StreamObserver<CreateSnapshotResponse> responses) {
            if (request.getName().equals("slow")) {
                hold();
            }
            responses.onNext(request.getName().isEmpty() ? CreateSnapshotResponse.getDefaultInstance()
                    : CreateSnapshotResponse.newBuilder()
                            .setSnapshot(Snapshot.newBuilder().setSnapshotId("hs-" + request.getName()))
                            .build());
            responses.onCompleted();
        }

        private void hold() {
            slowCall = Context.current();
            entered.countDown();
            await(release);
        }

        int runs(String volume) {
            AtomicInteger count = runs.get(volume);
            return count == null ? 0 : count.get();
        }
    }

    /** For handlers that must block until a test lets them go; never hangs a test run for good. */
    static void await(CountDownLatch latch) {
        try {
            if (!latch.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("test latch not released within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
