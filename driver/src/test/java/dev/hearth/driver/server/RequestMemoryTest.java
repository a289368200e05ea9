package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.CreateVolumeResponse;
import dev.hearth.csi.v1.Volume;
import dev.hearth.csi.v1.VolumeCapability;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Large requests are counted before they are parsed, and what they reserve comes back when their
 * call ends: through a real server on a unix socket, with the marshaller and interceptor the
 * driver runs, and a CreateVolume handler held until the test lets it answer.
 */
class RequestMemoryTest {

    private static final long MIB = 1 << 20;

    @TempDir
    Path dir;

    private final CountDownLatch answer = new CountDownLatch(1);
    private final CountDownLatch entered = new CountDownLatch(1);
    private ExecutorService executor;
    private GrpcServer server;
    private ManagedChannel channel;

    @AfterEach
    void stop() {
        answer.countDown();
        if (channel != null) {
            channel.shutdownNow();
        }
        if (server != null) {
            server.close();
        }
        if (executor != null) {
            executor.shutdownNow();
        }
    }

    // What is counted

    @Test
    void everyFieldIsCountedSubMessagesAndMapEntriesToo() {
        CreateVolumeRequest request = CreateVolumeRequest.newBuilder().setName("pvc-1")
                .putParameters("a", "1").putParameters("b", "2").putParameters("c", "3")
                .addVolumeCapabilities(capability()).addVolumeCapabilities(capability())
                .build();

        // name 1; each parameter an entry with a key and a value, 3; each capability itself, its
        // mount, its access mode and the mode in it, 4
        assertThat(RequestMemory.fields(request.toByteArray(), CreateVolumeRequest.getDescriptor()))
                .isEqualTo(1 + 3 * 3 + 2 * 4);
    }

    @Test
    void bytesThatAreNoMessageAreCountedAsFarAsTheyGoWithoutThrowing() {
        byte[] cut = {0x0a, 0x10, 'a'}; // field 1, shorter than it says

        assertThat(RequestMemory.fields(cut, CreateVolumeRequest.getDescriptor())).isEqualTo(1);
        assertThat(RequestMemory.fields(new byte[] {(byte) 0x80}, CreateVolumeRequest.getDescriptor())).isZero();
    }

    /** Groups nested a million deep: protobuf's skip would recurse once per level, past any stack. */
    @Test
    void groupsAreCountedNoFurtherThanTheirStart() {
        byte[] nested = new byte[1 << 20];
        java.util.Arrays.fill(nested, (byte) 0x0b); // field 1, start group, again and again

        assertThat(RequestMemory.fields(nested, CreateVolumeRequest.getDescriptor())).isEqualTo(1);
    }

    @Test
    void reservationsNeverGoPastTheLimit() {
        RequestMemory memory = new RequestMemory(10);

        assertThat(memory.tryReserve(6)).isTrue();
        assertThat(memory.tryReserve(5)).isFalse();
        assertThat(memory.tryReserve(4)).isTrue();
        memory.release(6);
        assertThat(memory.reserved()).isEqualTo(4);
        assertThat(memory.tryReserve(6)).isTrue();
    }

    // Through the server

    @Test
    void aRequestThatCouldNeverFitIsRefusedUnparsedAndTheServerServesOn() throws Exception {
        RequestMemory memory = start(4 * MIB);

        StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                () -> stub().createVolume(withParameters("pvc-huge", 100_000)));

        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(refused.getStatus().getDescription())
                .startsWith("the csi.v1.CreateVolumeRequest of ")
                .contains("would take about", "a request may take at most 4 MiB");
        assertThat(entered.getCount()).as("the handler never saw it").isEqualTo(1);
        assertThat(memory.reserved()).isZero();
        answer.countDown();
        assertThat(stub().createVolume(withParameters("pvc-small", 3)).getVolume().getVolumeId()).isEqualTo("pvc-small");
    }

    @Test
    void aLargeRequestBeyondWhatThoseInFlightLeaveIsRefusedUntilTheyAreAnswered() throws Exception {
        // 20,000 parameters: about 0.3 MB on the wire, 4.4 MB estimated; one fits in 6 MiB, two do not
        RequestMemory memory = start(6 * MIB);
        CompletableFuture<CreateVolumeResponse> first =
                CompletableFuture.supplyAsync(() -> stub().createVolume(withParameters("pvc-first", 20_000)));
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(memory.reserved()).as("held by the call in its handler").isGreaterThan(4 * MIB);

        StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                () -> stub().createVolume(withParameters("pvc-second", 20_000)));
        answer.countDown();

        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(refused.getStatus().getDescription()).contains("taken by those in flight; retry");
        assertThat(first.get(10, TimeUnit.SECONDS).getVolume().getVolumeId()).isEqualTo("pvc-first");
        TestServer.waitUntil(() -> memory.reserved() == 0);
        assertThat(stub().createVolume(withParameters("pvc-second", 20_000)).getVolume().getVolumeId())
                .isEqualTo("pvc-second");
        TestServer.waitUntil(() -> memory.reserved() == 0);
    }

    @Test
    void aCallCancelledInItsHandlerGivesBackWhatItReservedWhenTheHandlerReturns() throws Exception {
        RequestMemory memory = start(6 * MIB);

        StatusRuntimeException expired = catchThrowableOfType(StatusRuntimeException.class, () -> stub()
                .withDeadlineAfter(2, TimeUnit.SECONDS).createVolume(withParameters("pvc-late", 20_000)));

        assertThat(expired.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
        assertThat(entered.getCount()).as("the handler had it").isZero();
        // The cancel reaches the call's listener once its handler returns, as every event of a call
        // comes after the one before it; the handler holds the request until then anyway.
        answer.countDown();
        TestServer.waitUntil(() -> memory.reserved() == 0);
    }

    /** A large request of groups nested past protobuf's limit: INVALID_ARGUMENT, and nothing stays reserved. */
    @Test
    void aLargeRequestThatIsNoMessageIsInvalidAndGivesBackWhatItReserved() throws Exception {
        RequestMemory memory = start(64 * MIB);
        byte[] nested = new byte[1 << 20];
        java.util.Arrays.fill(nested, (byte) 0x0b);
        io.grpc.MethodDescriptor<byte[], byte[]> raw = ControllerGrpc.getCreateVolumeMethod()
                .toBuilder(RAW, RAW).build();

        StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                () -> io.grpc.stub.ClientCalls.blockingUnaryCall(channel, raw,
                        io.grpc.CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), nested));

        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(refused.getStatus().getDescription()).startsWith("the request is not a valid csi.v1.CreateVolumeRequest");
        assertThat(entered.getCount()).as("the handler never saw it").isEqualTo(1);
        TestServer.waitUntil(() -> memory.reserved() == 0);
    }

    /** Sends and receives bytes as they are. */
    private static final io.grpc.MethodDescriptor.Marshaller<byte[]> RAW = new io.grpc.MethodDescriptor.Marshaller<>() {
        @Override
        public java.io.InputStream stream(byte[] value) {
            return new java.io.ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(java.io.InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    };

    @Test
    void smallRequestsAreNotCounted() throws Exception {
        RequestMemory memory = start(1);
        answer.countDown();

        assertThat(stub().createVolume(withParameters("pvc-small", 100)).getVolume().getVolumeId())
                .isEqualTo("pvc-small");
        assertThat(memory.reserved()).isZero();
    }

    private RequestMemory start(long limit) throws Exception {
        RequestMemory memory = new RequestMemory(limit);
        UnparseableRequests requests = new UnparseableRequests(memory);
        executor = Executors.newVirtualThreadPerTaskExecutor();
        server = GrpcServer.start(new Endpoint.Unix(dir.resolve("csi.sock")),
                List.of(requests.lenient(new HeldCreate().bindService())), List.of(requests), executor);
        channel = Channels.channelTo(server.endpoint());
        return memory;
    }

    private ControllerGrpc.ControllerBlockingStub stub() {
        return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    private static CreateVolumeRequest withParameters(String name, int count) {
        CreateVolumeRequest.Builder request = CreateVolumeRequest.newBuilder().setName(name)
                .addVolumeCapabilities(capability());
        for (int i = 0; i < count; i++) {
            request.putParameters("key-" + i, "value");
        }
        return request.build();
    }

    private static VolumeCapability capability() {
        return VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.getDefaultInstance())
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
    }

    /** Answers a CreateVolume with a volume of its name, once the test lets it. */
    private final class HeldCreate extends ControllerGrpc.ControllerImplBase {
        @Override
        public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> responses) {
            entered.countDown();
            try {
                if (!answer.await(20, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("never let answer");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            responses.onNext(CreateVolumeResponse.newBuilder()
                    .setVolume(Volume.newBuilder().setVolumeId(request.getName())).build());
            responses.onCompleted();
        }
    }
}
