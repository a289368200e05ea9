package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateSnapshotResponse;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.CreateVolumeResponse;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeResponse;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.Volume;
import dev.hearth.driver.server.TestServer.Transport;
import dev.hearth.storage.StorageException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class RequestLoggingTest {

    private static final String DURATION = " duration=\\d+\\.\\dms";

    @TempDir
    Path dir;

    private CapturedLog log;
    private TestServer server;
    private final CountDownLatch entered = new CountDownLatch(1);
    private final CountDownLatch release = new CountDownLatch(1);

    @BeforeEach
    void captureLog() {
        log = CapturedLog.of(RequestLogging.class, Level.FINE);
    }

    @AfterEach
    void tearDown() {
        release.countDown();
        if (server != null) {
            server.close();
        }
        log.close();
    }

    /** CreateVolume answers with a volume; DeleteVolume of "missing" fails, of "slow" blocks. */
    private final class Controller extends ControllerGrpc.ControllerImplBase {
        @Override
        public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> responses) {
            responses.onNext(CreateVolumeResponse.newBuilder()
                    .setVolume(Volume.newBuilder().setVolumeId("hv-" + request.getName()))
                    .build());
            responses.onCompleted();
        }

        @Override
        public void deleteVolume(DeleteVolumeRequest request, StreamObserver<DeleteVolumeResponse> responses) {
            switch (request.getVolumeId()) {
                case "missing" -> throw new StorageException.NotFound("volume \"missing\" does not exist");
                case "slow" -> {
                    entered.countDown();
                    TestServices.await(release);
                }
                default -> {}
            }
            responses.onNext(DeleteVolumeResponse.getDefaultInstance());
            responses.onCompleted();
        }

        @Override
        public void createSnapshot(CreateSnapshotRequest request, StreamObserver<CreateSnapshotResponse> responses) {
            responses.onNext(CreateSnapshotResponse.getDefaultInstance());
            responses.onCompleted();
        }
    }

    private static Optional<String> keyOf(Message request) {
        return request instanceof DeleteVolumeRequest delete ? Optional.of(delete.getVolumeId()) : Optional.empty();
    }

    /** The driver's chain, outermost first. */
    private ControllerGrpc.ControllerBlockingStub serve(Transport transport) throws IOException {
        server = TestServer.start(
                transport.endpoint(dir),
                List.of(
                        new RequestLogging(),
                        new VolumeLockInterceptor(new VolumeLocks(), RequestLoggingTest::keyOf),
                        new ErrorMapping()),
                new Controller(),
                TestServices.identity());
        return ControllerGrpc.newBlockingStub(server.channel()).withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void logsOneLineWithMethodVolumeCodeAndDuration(Transport transport) throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(transport);

        stub.createVolume(CreateVolumeRequest.newBuilder()
                .setName("pvc-1")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1 << 30))
                .putSecrets("password", "hunter2")
                .build());

        assertThat(log.messages(Level.INFO))
                .singleElement()
                .asString()
                .matches("method=CreateVolume volume=pvc-1 code=OK" + DURATION);
    }

    @Test
    void logsTheRequestAtFineWithSecretsStripped() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        stub.createVolume(CreateVolumeRequest.newBuilder()
                .setName("pvc-1")
                .putParameters("hearth.dev/pool", "fast")
                .putSecrets("password", "hunter2")
                .build());

        assertThat(log.messages(Level.FINE))
                .singleElement()
                .asString()
                .startsWith("method=CreateVolume request={")
                .contains("name: \"pvc-1\"", "hearth.dev/pool", "secrets: \"***stripped***\"")
                .doesNotContain("hunter2", "password");
        assertThat(log.messages()).noneMatch(m -> m.contains("hunter2"));
    }

    @Test
    void noRequestTextAboveFine() throws Exception {
        log.close();
        log = CapturedLog.of(RequestLogging.class, Level.INFO);
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        stub.createVolume(CreateVolumeRequest.newBuilder().setName("pvc-1").build());

        assertThat(log.messages()).singleElement().asString().startsWith("method=CreateVolume volume=pvc-1 code=OK");
    }

    @Test
    void failedCallCarriesTheMappedCodeAndItsDescription() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        try {
            stub.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("missing").build());
        } catch (StatusRuntimeException expected) {
            // The log line is what this test is about.
        }

        assertThat(log.messages(Level.INFO))
                .singleElement()
                .asString()
                .matches("method=DeleteVolume volume=missing code=NOT_FOUND" + DURATION
                        + " error=\"volume \\\\\"missing\\\\\" does not exist\"");
    }

    @Test
    void callTurnedAwayByTheVolumeLockIsLoggedAsAborted() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.TCP);
        Thread first = Thread.ofVirtual().start(
                () -> stub.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("slow").build()));
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        try {
            stub.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("slow").build());
        } catch (StatusRuntimeException expected) {
            // The log line is what this test is about.
        }
        release.countDown();
        first.join(Duration.ofSeconds(10));

        assertThat(log.messages(Level.INFO))
                .satisfiesExactly(
                        m -> assertThat(m).matches("method=DeleteVolume volume=slow code=ABORTED" + DURATION
                                + " error=\"an operation on volume slow is already in progress\""),
                        m -> assertThat(m).matches("method=DeleteVolume volume=slow code=OK" + DURATION));
    }

    @Test
    void callWithoutVolumeFieldsHasNoVolume() throws Exception {
        serve(Transport.UNIX);

        IdentityGrpc.newBlockingStub(server.channel()).getPluginInfo(GetPluginInfoRequest.getDefaultInstance());

        assertThat(log.messages(Level.INFO)).singleElement().asString().matches("method=GetPluginInfo code=OK" + DURATION);
    }

    @Test
    void nameComesBeforeSourceVolumeId() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        stub.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId("hv-1").build());
        stub.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId("hv-1").setName("snap-1").build());

        assertThat(log.messages(Level.INFO))
                .satisfiesExactly(
                        m -> assertThat(m).startsWith("method=CreateSnapshot volume=hv-1 code=OK"),
                        m -> assertThat(m).startsWith("method=CreateSnapshot volume=snap-1 code=OK"));
    }
}
