package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.ProbeRequest;
import io.grpc.CallOptions;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Bytes that are no CSI message at all, sent to every RPC: the answer is INVALID_ARGUMENT saying
 * so, not grpc-java's UNKNOWN "Application error processing RPC", and the driver serves on.
 */
class UnparseableRequestTest extends DriverFixture {

    /** Sends and receives bytes as they are. */
    private static final MethodDescriptor.Marshaller<byte[]> RAW = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    /** One driver for all of them: a dynamic test shares its factory's fixture. */
    @TestFactory
    Stream<DynamicTest> bytesThatAreNoRequestOfTheMethodAreInvalidArgument() {
        List<byte[]> garbage = List.of(
                new byte[] {0x0a, 0x02, (byte) 0xff, (byte) 0xfe}, // field 1, a string that is not UTF-8
                new byte[] {0x0a, 0x10, 'a'},                       // field 1, shorter than it says
                new byte[] {(byte) 0x80});                          // a tag cut off mid-varint
        return Stream.of(IdentityGrpc.getServiceDescriptor(), ControllerGrpc.getServiceDescriptor(),
                        NodeGrpc.getServiceDescriptor())
                .flatMap(service -> service.getMethods().stream())
                .flatMap(method -> garbage.stream().map(bytes -> DynamicTest.dynamicTest(
                        method.getBareMethodName() + " " + HexFormat.ofDelimiter(" ").formatHex(bytes),
                        () -> sendTo(method.getBareMethodName(), method, bytes))));
    }

    private void sendTo(String name, MethodDescriptor<?, ?> method, byte[] bytes) {
        MethodDescriptor<byte[], byte[]> raw = method.toBuilder(RAW, RAW).build();

        Throwable thrown = catchThrowable(() -> ClientCalls.blockingUnaryCall(driver.channel(), raw,
                CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), bytes));

        if (parses(method, bytes)) {
            // Bytes some requests take as they are: an unknown field, ignored as protobuf says.
            assertThat(thrown).as("%s", thrown).satisfiesAnyOf(t -> assertThat(t).isNull(),
                    t -> assertThat(((StatusRuntimeException) t).getStatus().getCode())
                            .isNotIn(Status.Code.UNKNOWN, Status.Code.INTERNAL));
        } else {
            assertThat(thrown).isInstanceOf(StatusRuntimeException.class);
            Status status = ((StatusRuntimeException) thrown).getStatus();
            assertThat(status.getCode()).as("%s", status).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(status.getDescription()).startsWith("the request is not a valid csi.v1." + name + "Request: ");
        }
        assertThat(driver.identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
    }

    private static boolean parses(MethodDescriptor<?, ?> method, byte[] bytes) {
        try {
            method.parseRequest(new ByteArrayInputStream(bytes));
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }
}
