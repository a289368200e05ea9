package dev.hearth.driver.server;

import static dev.hearth.driver.server.TestServer.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeResponse;
import dev.hearth.driver.server.TestServer.Transport;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
        server = TestServer.start(
                transport.endpoint(dir),
                List.of(new VolumeLockInterceptor(locks, TestServices.Controller::keyOf), new ErrorMapping()),
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
        return CompletableFuture.supplyAsync(() -> statusOf(() -> stub.deleteVolume(delete(volume))), Thread.ofVirtual()::start);
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
}
