package dev.hearth.driver.server;

import static dev.hearth.driver.server.TestServer.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeResponse;
import dev.hearth.csi.v1.VolumeContentSource;
import dev.hearth.driver.server.TestServer.Transport;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.VolumeId;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class VolumeLockInterceptorTest {

    @TempDir
    Path dir;

    private final VolumeLocks locks = new VolumeLocks();
    private final TestServices.Controller controller = new TestServices.Controller();
    private TestServer server;

    @AfterEach
    void tearDown() {
        controller.release.countDown();
        if (server != null) {
            server.close();
        }
    }

    private ControllerGrpc.ControllerBlockingStub serve(Transport transport) throws IOException {
        return serve(transport, TestServices.Controller::keyOf);
    }

    private ControllerGrpc.ControllerBlockingStub serve(Transport transport, Function<Message, Set<String>> keysOf)
            throws IOException {
        server = TestServer.start(
                transport.endpoint(dir),
                List.of(new VolumeLockInterceptor(locks, keysOf), new ErrorMapping()),
                controller);
        return stub();
    }

    private ControllerGrpc.ControllerBlockingStub stub() {
        return ControllerGrpc.newBlockingStub(server.channel()).withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    private static DeleteVolumeRequest delete(String volume) {
        return DeleteVolumeRequest.newBuilder().setVolumeId(volume).build();
    }

    private static Status statusOf(Runnable call) {
        try {
            call.run();
            return Status.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus();
        }
    }

    private CompletableFuture<Status> deleteAsync(ControllerGrpc.ControllerBlockingStub stub, String volume) {
        return async(() -> stub.deleteVolume(delete(volume)));
    }

    private static CompletableFuture<Status> async(Runnable call) {
        return CompletableFuture.supplyAsync(() -> statusOf(call), Thread.ofVirtual()::start);
    }

    private static CreateVolumeRequest create(String name) {
        return CreateVolumeRequest.newBuilder().setName(name).build();
    }

    private static CreateVolumeRequest clone(String name, String sourceVolumeId) {
        return CreateVolumeRequest.newBuilder().setName(name).setVolumeContentSource(VolumeContentSource.newBuilder()
                .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(sourceVolumeId))).build();
    }

    private static CreateVolumeRequest restore(String name, String snapshotId) {
        return CreateVolumeRequest.newBuilder().setName(name).setVolumeContentSource(VolumeContentSource.newBuilder()
                .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshotId))).build();
    }

    private static CreateSnapshotRequest snapshot(String name, String sourceVolumeId) {
        return CreateSnapshotRequest.newBuilder().setName(name).setSourceVolumeId(sourceVolumeId).build();
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void secondCallOnABusyVolumeIsAbortedWithoutRunningItsHandler(Transport transport) throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(transport);
        CompletableFuture<Status> first = deleteAsync(stub, "slow");
        assertThat(controller.entered.await(10, TimeUnit.SECONDS)).isTrue();

        Status second = statusOf(() -> stub.deleteVolume(delete("slow")));

        assertThat(second.getCode()).isEqualTo(Status.Code.ABORTED);
        assertThat(second.getDescription()).isEqualTo("an operation on volume 'slow' is already in progress");
        assertThat(controller.runs("slow")).isEqualTo(1);

        assertThat(statusOf(() -> stub.deleteVolume(delete("other"))).getCode())
                .as("another volume never waits")
                .isEqualTo(Status.Code.OK);
        assertThat(statusOf(() -> stub.createVolume(CreateVolumeRequest.newBuilder().setName("slow").build())).getCode())
                .as("a request without a key runs unlocked")
                .isEqualTo(Status.Code.OK);

        controller.release.countDown();

        assertThat(first.get(10, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
        assertThat(statusOf(() -> stub.deleteVolume(delete("slow"))).getCode()).isEqualTo(Status.Code.OK);
        assertThat(controller.runs("slow")).isEqualTo(2);
        assertThat(locks.isLocked("slow")).isFalse();
    }

    @Test
    void failedHandlerReleasesItsLock() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        assertThat(statusOf(() -> stub.deleteVolume(delete("missing"))).getCode()).isEqualTo(Status.Code.NOT_FOUND);

        assertThat(locks.isLocked("missing")).isFalse();
        assertThat(statusOf(() -> stub.deleteVolume(delete("missing"))).getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(controller.runs("missing")).isEqualTo(2);
    }

    @Test
    void lockOutlivesAClientThatGaveUpUntilTheHandlerReturns() throws Exception {
        serve(Transport.UNIX);
        CompletableFuture<Status> gaveUp = new CompletableFuture<>();
        Context.CancellableContext impatient = Context.current().withCancellation();
        impatient.run(() -> ControllerGrpc.newStub(server.channel()).deleteVolume(delete("slow"), new StreamObserver<>() {
            @Override
            public void onNext(DeleteVolumeResponse response) {}

            @Override
            public void onError(Throwable t) {
                gaveUp.complete(Status.fromThrowable(t));
            }

            @Override
            public void onCompleted() {
                gaveUp.complete(Status.OK);
            }
        }));
        assertThat(controller.entered.await(10, TimeUnit.SECONDS)).isTrue();

        impatient.cancel(null);

        assertThat(gaveUp.get(10, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.CANCELLED);
        waitUntil(() -> controller.slowCall.isCancelled());
        assertThat(statusOf(() -> stub().deleteVolume(delete("slow"))).getCode())
                .as("the first handler still runs: a retry must not run beside it")
                .isEqualTo(Status.Code.ABORTED);

        controller.release.countDown();

        waitUntil(() -> !locks.isLocked("slow"));
        assertThat(statusOf(() -> stub().deleteVolume(delete("slow"))).getCode()).isEqualTo(Status.Code.OK);
    }

    @Test
    void lockHeldElsewhereInTheDriverAbortsTheCallToo() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.TCP);

        try (VolumeLocks.Handle _ = locks.tryLock("v7").orElseThrow()) {
            assertThat(statusOf(() -> stub.deleteVolume(delete("v7"))).getCode()).isEqualTo(Status.Code.ABORTED);
        }

        assertThat(statusOf(() -> stub.deleteVolume(delete("v7"))).getCode()).isEqualTo(Status.Code.OK);
        assertThat(controller.runs("v7")).isEqualTo(1);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void cloneWhileItsSourceIsBeingDeletedIsAborted(Transport transport) throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(transport, LockKeys::of);
        CompletableFuture<Status> deleting = deleteAsync(stub, "slow");
        assertThat(controller.entered.await(10, TimeUnit.SECONDS)).isTrue();

        Status cloning = statusOf(() -> stub.createVolume(clone("pvc-clone", "slow")));

        assertThat(cloning.getCode()).isEqualTo(Status.Code.ABORTED);
        assertThat(cloning.getDescription()).isEqualTo("an operation on volume 'slow' is already in progress");
        assertThat(locks.isLocked(VolumeId.keyOf("pvc-clone"))).isFalse();

        controller.release.countDown();

        assertThat(deleting.get(10, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
        assertThat(statusOf(() -> stub.createVolume(clone("pvc-clone", "slow"))).getCode()).isEqualTo(Status.Code.OK);
    }

    @Test
    void restoreWhileItsSnapshotIsBeingDeletedIsAborted() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX, LockKeys::of);
        CompletableFuture<Status> deleting = async(() ->
                stub.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId("slow").build()));
        assertThat(controller.entered.await(10, TimeUnit.SECONDS)).isTrue();

        Status restoring = statusOf(() -> stub.createVolume(restore("pvc-restore", "slow")));

        assertThat(restoring.getCode()).isEqualTo(Status.Code.ABORTED);
        assertThat(restoring.getDescription()).isEqualTo("an operation on snapshot 'slow' is already in progress");
        assertThat(locks.isLocked("slow")).as("a volume of the same ID is another lock").isFalse();
        assertThat(statusOf(() -> stub.createVolume(clone("pvc-clone", "other"))).getCode())
                .as("a clone of another source goes on")
                .isEqualTo(Status.Code.OK);

        controller.release.countDown();

        assertThat(deleting.get(10, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
        assertThat(statusOf(() -> stub.createVolume(restore("pvc-restore", "slow"))).getCode())
                .isEqualTo(Status.Code.OK);
    }

    @Test
    void twoSnapshotsOfOneNameFromDifferentSourcesExcludeEachOther() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX, LockKeys::of);
        CompletableFuture<Status> first = async(() -> stub.createSnapshot(snapshot("slow", "v1")));
        assertThat(controller.entered.await(10, TimeUnit.SECONDS)).isTrue();

        Status second = statusOf(() -> stub.createSnapshot(snapshot("slow", "v2")));

        assertThat(second.getCode()).isEqualTo(Status.Code.ABORTED);
        assertThat(second.getDescription())
                .isEqualTo("an operation on snapshot '" + SnapshotId.keyOf("slow") + "' is already in progress");
        assertThat(locks.isLocked("v2")).as("the source it took is given back").isFalse();
        assertThat(statusOf(() -> stub.createSnapshot(snapshot("snap-other", "v2"))).getCode())
                .as("another name from the second source goes on")
                .isEqualTo(Status.Code.OK);

        controller.release.countDown();

        assertThat(first.get(10, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
        assertThat(locks.isLocked("v1")).isFalse();
    }

    @Test
    void aCallThatCannotTakeAllItsKeysHoldsNoneOfThem() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.TCP, LockKeys::of);
        // Keys are taken in sorted order: the name's comes first, so the clone holds it when it meets "slow".
        assertThat(VolumeId.keyOf("pvc-a")).isLessThan("slow");
        CompletableFuture<Status> deleting = deleteAsync(stub, "slow");
        assertThat(controller.entered.await(10, TimeUnit.SECONDS)).isTrue();

        assertThat(statusOf(() -> stub.createVolume(clone("pvc-a", "slow"))).getCode()).isEqualTo(Status.Code.ABORTED);

        assertThat(locks.isLocked(VolumeId.keyOf("pvc-a"))).isFalse();
        assertThat(statusOf(() -> stub.createVolume(create("pvc-a"))).getCode())
                .as("a third call on the key the aborted one took")
                .isEqualTo(Status.Code.OK);
        assertThat(deleting).isNotDone();

        controller.release.countDown();

        assertThat(deleting.get(10, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
    }
}
