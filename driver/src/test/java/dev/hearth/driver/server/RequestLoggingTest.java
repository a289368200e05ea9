package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.driver.server.TestServer.Transport;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
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
    private final TestServices.Controller controller = new TestServices.Controller();

    @BeforeEach
    void captureLog() {
        log = CapturedLog.of(RequestLogging.class, Level.FINE);
    }

    @AfterEach
    void tearDown() {
        controller.release.countDown();
        if (server != null) {
            server.close();
        }
        log.close();
    }

    /** The driver's chain, outermost first. */
    private ControllerGrpc.ControllerBlockingStub serve(Transport transport) throws IOException {
        server = TestServer.start(
                transport.endpoint(dir),
                List.of(
                        new RequestLogging(),
                        new VolumeLockInterceptor(new VolumeLocks(), TestServices.Controller::keyOf),
                        new ErrorMapping()),
                controller,
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
        assertThat(controller.entered.await(10, TimeUnit.SECONDS)).isTrue();

        try {
            stub.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("slow").build());
        } catch (StatusRuntimeException expected) {
            // The log line is what this test is about.
        }
        controller.release.countDown();
        first.join(Duration.ofSeconds(10));

        assertThat(log.messages(Level.INFO))
                .satisfiesExactly(
                        m -> assertThat(m).matches("method=DeleteVolume volume=slow code=ABORTED" + DURATION
                                + " error=\"an operation on volume 'slow' is already in progress\""),
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
