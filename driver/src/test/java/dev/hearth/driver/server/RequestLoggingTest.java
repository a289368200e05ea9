package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import com.google.protobuf.Message;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.Csi;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetPluginInfoResponse;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.driver.server.TestServer.Transport;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
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

    /** The calls' lines: what is logged at INFO and above, without the requests at FINE. */
    private List<LogRecord> lines() {
        return log.records().stream().filter(r -> r.getLevel().intValue() >= Level.INFO.intValue()).toList();
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void logsOneInfoLineWithMethodNameMintedVolumeIdCodeAndDuration(Transport transport) throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(transport);

        stub.createVolume(CreateVolumeRequest.newBuilder()
                .setName("pvc-1")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1 << 30))
                .putSecrets("password", "hunter2")
                .build());

        assertThat(log.messages(Level.INFO))
                .singleElement()
                .asString()
                .matches("method=CreateVolume name=pvc-1 volume_id=hv-pvc-1 code=OK" + DURATION);
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

    /**
     * A call reset before its request was complete (the handler never ran) is logged at FINE, not
     * as a warning: a client resetting streams by the thousand (HTTP/2 rapid reset) must not flood
     * the log. Here the request's message is sent, its end is not, and the call is cancelled.
     */
    @Test
    void aCallResetBeforeItsRequestWasCompleteIsLoggedAtFineOnly() throws Exception {
        serve(Transport.UNIX);
        ClientCall<GetPluginInfoRequest, GetPluginInfoResponse> call = server.channel()
                .newCall(IdentityGrpc.getGetPluginInfoMethod(), CallOptions.DEFAULT);
        call.start(new ClientCall.Listener<GetPluginInfoResponse>() {}, new Metadata());
        call.sendMessage(GetPluginInfoRequest.getDefaultInstance());
        call.request(1);
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (log.messages(Level.FINE).stream().noneMatch(m -> m.startsWith("method=GetPluginInfo request="))) {
            assertThat(System.nanoTime()).as("the server has the request").isLessThan(deadline);
            Thread.sleep(10);
        }
        call.cancel("reset", null);

        while (log.messages(Level.FINE).stream().noneMatch(m -> m.startsWith("method=GetPluginInfo code=CANCELLED"))) {
            assertThat(System.nanoTime()).as("the cancel's line at FINE").isLessThan(deadline);
            Thread.sleep(10);
        }
        assertThat(log.messages(Level.FINE)).anySatisfy(m -> assertThat(m).matches(
                "method=GetPluginInfo code=CANCELLED" + DURATION + " error=\"cancelled by the client before its "
                        + "request was complete; nothing was done\""));
        assertThat(lines()).as("nothing at INFO or above").isEmpty();
    }

    @Test
    void noRequestTextAboveFine() throws Exception {
        log.close();
        log = CapturedLog.of(RequestLogging.class, Level.INFO);
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        stub.createVolume(CreateVolumeRequest.newBuilder().setName("pvc-1").build());

        assertThat(log.messages()).singleElement().asString()
                .startsWith("method=CreateVolume name=pvc-1 volume_id=hv-pvc-1 code=OK");
    }

    @Test
    void failedCallIsAWarningWithTheMappedCodeAndItsDescription() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        try {
            stub.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("missing").build());
        } catch (StatusRuntimeException expected) {
            // The log line is what this test is about.
        }

        assertThat(lines())
                .singleElement()
                .satisfies(r -> assertThat(r.getLevel()).isEqualTo(Level.WARNING))
                .satisfies(r -> assertThat(r.getThrown()).as("no stack trace for a refused request").isNull())
                .extracting(LogRecord::getMessage)
                .asString()
                .matches("method=DeleteVolume volume_id=missing code=NOT_FOUND" + DURATION
                        + " error=\"volume \\\\\"missing\\\\\" does not exist\"");
    }

    @Test
    void internalFailureIsAnErrorCarryingItsStackTraceInTheSameRecord() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        try {
            stub.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("broken").build());
        } catch (StatusRuntimeException expected) {
            // The log line is what this test is about.
        }

        assertThat(lines()).hasSize(1);
        LogRecord record = lines().getFirst();
        assertThat(record.getLevel()).isEqualTo(Level.SEVERE);
        assertThat(new LogFormat().format(record).lines())
                .singleElement()
                .asString()
                .matches("\\S+ ERROR method=DeleteVolume volume_id=broken code=INTERNAL" + DURATION
                        + " error=\"cannot read volume broken\" stack=\"dev\\.hearth\\.storage\\.StorageException\\$Failed: "
                        + "cannot read volume broken\\\\n\\\\tat .*\\\\nCaused by: java\\.io\\.IOException: Input/output error.*\"");
    }

    /** The tool's stderr says why; a Java stack would only show hearth's way to the tool. */
    @Test
    void toolThatSaidNoIsAnErrorWithItsStderrButNoStackTrace() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        try {
            stub.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("refused").build());
        } catch (StatusRuntimeException expected) {
            assertThat(expected.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.INTERNAL);
        }

        LogRecord record = lines().getFirst();
        assertThat(record.getLevel()).isEqualTo(Level.SEVERE);
        assertThat(record.getThrown()).isNull();
        assertThat(new LogFormat().format(record))
                .contains(" ERROR method=DeleteVolume volume_id=refused code=INTERNAL ",
                        "resize2fs: Permission denied to resize filesystem")
                .doesNotContain("stack=");
    }

    /** What an operator reads: with the driver's log format, a failed call is one line and nothing else. */
    @Test
    void internalFailureWritesOneLineToStderrAndNoTraceBeforeIt() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            LogFormat.install(Level.INFO);
            try {
                stub.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("broken").build());
            } catch (StatusRuntimeException expected) {
                // The log is what this test is about.
            }
        } finally {
            System.setErr(original);
            LogManager.getLogManager().readConfiguration();
        }

        List<String> lines = captured.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines).allMatch(l -> l.matches("\\d{4}-\\d\\d-\\d\\dT\\S+Z (ERROR|WARN |INFO ) .*"),
                "every line is a record of its own");
        assertThat(lines).filteredOn(l -> l.contains("broken"))
                .singleElement()
                .asString()
                .contains(" ERROR method=DeleteVolume volume_id=broken code=INTERNAL ", " stack=\"");
    }

    @Test
    void callTurnedAwayByTheVolumeLockIsAWarningAndTheCallThatHeldItInfo() throws Exception {
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

        assertThat(lines())
                .satisfiesExactly(
                        r -> assertThat(r).satisfies(
                                x -> assertThat(x.getLevel()).isEqualTo(Level.WARNING),
                                x -> assertThat(x.getMessage()).matches("method=DeleteVolume volume_id=slow code=ABORTED"
                                        + DURATION + " error=\"an operation on volume 'slow' is already in progress\"")),
                        r -> assertThat(r).satisfies(
                                x -> assertThat(x.getLevel()).isEqualTo(Level.INFO),
                                x -> assertThat(x.getMessage()).matches("method=DeleteVolume volume_id=slow code=OK"
                                        + DURATION)));
    }

    @Test
    void aHugeOrOddIdIsQuotedEscapedAndCutShortInTheLine() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        stub.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId("hv-1")
                .setName("x".repeat(70_000)).build());
        stub.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId("hv\n1\u0007").setName("s").build());

        assertThat(log.messages(Level.INFO)).satisfiesExactly(
                m -> assertThat(m).contains("name='xxxx").contains("…' (70000 chars)").hasSizeLessThan(1024),
                m -> assertThat(m).contains("source_volume_id='hv\\n1\\u0007'").doesNotContain("\n"));
    }

    @Test
    void callWithoutIdFieldsHasNone() throws Exception {
        serve(Transport.UNIX);

        IdentityGrpc.newBlockingStub(server.channel()).getPluginInfo(GetPluginInfoRequest.getDefaultInstance());

        assertThat(log.messages(Level.INFO)).singleElement().asString().matches("method=GetPluginInfo code=OK" + DURATION);
    }

    @Test
    void createSnapshotLineCarriesNameSourceAndTheMintedSnapshotId() throws Exception {
        ControllerGrpc.ControllerBlockingStub stub = serve(Transport.UNIX);

        stub.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId("hv-1").setName("snap-1").build());
        stub.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId("hv-1").build());

        assertThat(log.messages(Level.INFO))
                .satisfiesExactly(
                        m -> assertThat(m).matches(
                                "method=CreateSnapshot name=snap-1 source_volume_id=hv-1 snapshot_id=hs-snap-1 code=OK"
                                        + DURATION),
                        m -> assertThat(m).matches("method=CreateSnapshot source_volume_id=hv-1 code=OK" + DURATION));
    }

    /**
     * The line's IDs come from each request's own getters, not protobuf's reflection: every request
     * of every CSI service, each string field set, must give what the descriptors say, the fields
     * name, volume_id, source_volume_id and snapshot_id in that order. A request type added to the
     * proto with one of them and not to {@link RequestLogging#idsOf} fails here.
     */
    @Test
    void idsOfEveryCsiRequestAreItsIdFieldsByTheDescriptors() throws Exception {
        List<String> idFields = List.of("name", "volume_id", "source_volume_id", "snapshot_id");
        int withIds = 0;
        for (ServiceDescriptor service : Csi.getDescriptor().getServices()) {
            for (MethodDescriptor method : service.getMethods()) {
                Descriptor type = method.getInputType();
                Message.Builder builder = (Message.Builder) Class.forName(Csi.class.getPackageName() + "." + type.getName())
                        .getMethod("newBuilder").invoke(null);
                for (FieldDescriptor field : type.getFields()) {
                    if (!field.isRepeated() && field.getJavaType() == FieldDescriptor.JavaType.STRING) {
                        builder.setField(field, "v-" + field.getName());
                    }
                }
                StringBuilder expected = new StringBuilder();
                for (String name : idFields) {
                    FieldDescriptor field = type.findFieldByName(name);
                    if (field != null && !field.isRepeated() && field.getJavaType() == FieldDescriptor.JavaType.STRING) {
                        expected.append(' ').append(name).append("=v-").append(name);
                    }
                }
                withIds += expected.isEmpty() ? 0 : 1;
                assertThat(RequestLogging.idsOf(builder.build())).as(type.getName()).isEqualTo(expected.toString());
            }
        }
        assertThat(withIds).as("requests with an ID field").isGreaterThan(15);
    }
}
