package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetPluginInfoResponse;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.driver.server.TestServer.Transport;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.tool.ToolException;
import dev.hearth.storage.tool.ToolRunner;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.logging.Level;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

class ErrorMappingTest {

    private static final Metadata.Key<String> DETAIL = Metadata.Key.of("hearth-detail", Metadata.ASCII_STRING_MARSHALLER);

    @TempDir
    Path dir;

    private TestServer server;

    @AfterEach
    void tearDown() {
        if (server != null) {
            server.close();
        }
    }

    static Stream<Arguments> storageFailures() {
        return Stream.of(
                Arguments.of(new StorageException.NotFound("volume v1 does not exist"), Status.Code.NOT_FOUND),
                Arguments.of(new StorageException.Exhausted("pool p has 1 GiB free"), Status.Code.RESOURCE_EXHAUSTED),
                Arguments.of(new StorageException.Conflict("volume v1 exists with 2 GiB"), Status.Code.ALREADY_EXISTS),
                Arguments.of(new StorageException.InvalidArgument("fs_type ntfs"), Status.Code.INVALID_ARGUMENT),
                Arguments.of(new StorageException.OutOfRange("limit below 1 MiB"), Status.Code.OUT_OF_RANGE),
                Arguments.of(new StorageException.Precondition("volume v1 is staged"), Status.Code.FAILED_PRECONDITION),
                Arguments.of(new StorageException.Busy("volume v1 is being resized"), Status.Code.ABORTED),
                Arguments.of(new StorageException.UnknownToken("starting_token 'x' was not issued here"), Status.Code.ABORTED),
                Arguments.of(new StorageException.Failed("mkfs.ext4 exited 1", new IOException("boom")), Status.Code.INTERNAL));
    }

    /**
     * A tool killed because its handler's thread was interrupted (a driver stopping past its grace)
     * is ABORTED, which callers retry, not INTERNAL: nothing failed. A real tool, really interrupted.
     */
    @Test
    void aToolCutShortByAnInterruptIsAborted() throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread runner = Thread.ofVirtual().start(() -> {
            try {
                new ToolRunner().run(List.of("sleep", "30"), Duration.ofMinutes(1));
            } catch (ToolException e) {
                thrown.set(StorageException.Failed.byTool("growing the filesystem: " + e.getMessage(), e));
            }
        });
        Thread.sleep(200);
        runner.interrupt();
        runner.join(Duration.ofSeconds(10));

        assertThat(thrown.get()).isInstanceOf(StorageException.Failed.class);
        Status status = ErrorMapping.toStatus(thrown.get());
        assertThat(status.getCode()).isEqualTo(Status.Code.ABORTED);
        assertThat(status.getDescription()).contains("sleep 30 was killed because the caller was interrupted");
    }

    /**
     * A handler's file write that an interrupt cut short (an interruptible channel closes and throws
     * a ClosedByInterruptException, whose message is null) is ABORTED too, and says so in words.
     */
    @Test
    void aChannelClosedByAnInterruptIsAbortedAndSaysWhy(@TempDir Path dir) throws Exception {
        Throwable failure;
        Thread.currentThread().interrupt();
        try (FileChannel channel = FileChannel.open(dir.resolve("f"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE)) {
            channel.force(true);
            throw new AssertionError("an interrupted thread's force() throws");
        } catch (IOException e) {
            failure = new StorageException.Failed("expanding volume v1 to 2048 bytes: " + e.getMessage(), e);
        } finally {
            Thread.interrupted();
        }

        Status status = ErrorMapping.toStatus(failure);

        assertThat(status.getCode()).isEqualTo(Status.Code.ABORTED);
        assertThat(status.getDescription())
                .isEqualTo("expanding volume v1 to 2048 bytes: cut short, the driver is stopping; retry");
        assertThat(ErrorMapping.toStatus(new StorageException.Failed("reading: timed out",
                new java.net.SocketTimeoutException("read timed out"))).getCode())
                .as("a timeout is no interrupt").isEqualTo(Status.Code.INTERNAL);
    }

    static Stream<Arguments> storageFailuresOverEachTransport() {
        return Stream.of(Transport.values())
                .flatMap(t -> storageFailures().map(a -> Arguments.of(t, a.get()[0], a.get()[1])));
    }

    @ParameterizedTest
    @MethodSource("storageFailures")
    void mapsEachStorageFailureKeepingItsMessage(StorageException failure, Status.Code code) {
        Status status = ErrorMapping.toStatus(failure);

        assertThat(status.getCode()).isEqualTo(code);
        assertThat(status.getDescription()).isEqualTo(failure.getMessage());
        assertThat(status.getCause()).isSameAs(failure);
    }

    @Test
    void passesStatusesThroughUntouched() {
        Status chosen = Status.UNAVAILABLE.withDescription("pool not loaded yet");

        assertThat(ErrorMapping.toStatus(chosen.asRuntimeException())).isSameAs(chosen);
        assertThat(ErrorMapping.toStatus(chosen.asException())).isSameAs(chosen);
    }

    @Test
    void anythingElseIsInternalWithItsMessage() {
        Status status = ErrorMapping.toStatus(new IllegalStateException("pool map is empty"));

        assertThat(status.getCode()).isEqualTo(Status.Code.INTERNAL);
        assertThat(status.getDescription()).isEqualTo("pool map is empty");
    }

    @Test
    void anythingElseWithoutMessageIsNamedByItsClass() {
        Status status = ErrorMapping.toStatus(new UnsupportedOperationException());

        assertThat(status.getCode()).isEqualTo(Status.Code.INTERNAL);
        assertThat(status.getDescription()).isEqualTo("java.lang.UnsupportedOperationException");
    }

    /** GetPluginInfo does whatever the test says. */
    private IdentityGrpc.IdentityBlockingStub serve(
            Transport transport, BiConsumer<GetPluginInfoRequest, StreamObserver<GetPluginInfoResponse>> handler)
            throws IOException {
        server = TestServer.start(transport.endpoint(dir), List.of(new ErrorMapping()), new IdentityGrpc.IdentityImplBase() {
            @Override
            public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> responses) {
                handler.accept(request, responses);
            }
        });
        return IdentityGrpc.newBlockingStub(server.channel()).withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    private static StatusRuntimeException failureOf(IdentityGrpc.IdentityBlockingStub stub) {
        try {
            stub.getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
        } catch (StatusRuntimeException e) {
            return e;
        }
        throw new AssertionError("the call succeeded");
    }

    @ParameterizedTest
    @MethodSource("storageFailuresOverEachTransport")
    void clientSeesTheStatusOfAThrownStorageFailure(Transport transport, StorageException failure, Status.Code code)
            throws IOException {
        IdentityGrpc.IdentityBlockingStub stub = serve(transport, (request, responses) -> {
            throw failure;
        });

        Status status = failureOf(stub).getStatus();

        assertThat(status.getCode()).isEqualTo(code);
        assertThat(status.getDescription()).isEqualTo(failure.getMessage());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void clientSeesInternalForAnyOtherException(Transport transport) throws IOException {
        IdentityGrpc.IdentityBlockingStub stub = serve(transport, (request, responses) -> {
            throw new IllegalStateException("pool map is empty");
        });

        Status status = failureOf(stub).getStatus();

        assertThat(status.getCode()).isEqualTo(Status.Code.INTERNAL);
        assertThat(status.getDescription()).isEqualTo("pool map is empty");
    }

    @Test
    void aMappedFailureIsLoggedOnlyAtFineLeavingItToTheCallsLine() throws IOException {
        IdentityGrpc.IdentityBlockingStub stub = serve(Transport.UNIX, (request, responses) -> {
            throw new StorageException.Failed("mkfs.ext4 exited 1", new IOException("boom"));
        });

        try (CapturedLog log = CapturedLog.of(ErrorMapping.class, Level.FINE)) {
            failureOf(stub);

            assertThat(log.records()).singleElement().satisfies(r -> {
                assertThat(r.getLevel()).isEqualTo(Level.FINE);
                assertThat(r.getMessage()).isEqualTo(
                        "answering INTERNAL for dev.hearth.storage.StorageException$Failed: mkfs.ext4 exited 1");
            });
        }
    }

    @Test
    void aFailureAfterTheAnswerIsAWarningWithItsStackTrace() throws IOException {
        IllegalStateException late = new IllegalStateException("late failure");
        IdentityGrpc.IdentityBlockingStub stub = serve(Transport.UNIX, (request, responses) -> {
            responses.onNext(GetPluginInfoResponse.newBuilder().setName("answered").build());
            responses.onCompleted();
            throw late;
        });

        try (CapturedLog log = CapturedLog.of(ErrorMapping.class, Level.INFO)) {
            stub.getPluginInfo(GetPluginInfoRequest.getDefaultInstance());

            TestServer.waitUntil(() -> !log.records().isEmpty());
            assertThat(log.records()).singleElement().satisfies(r -> {
                assertThat(r.getLevel()).isEqualTo(Level.WARNING);
                assertThat(r.getMessage()).isEqualTo("handler failed after it had answered; nothing more to tell the client");
                assertThat(r.getThrown()).isSameAs(late);
            });
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void thrownStatusReachesTheClientWithItsTrailers() throws IOException {
        Metadata trailers = new Metadata();
        trailers.put(DETAIL, "try node-2");
        IdentityGrpc.IdentityBlockingStub stub = serve(Transport.TCP, (request, responses) -> {
            throw Status.UNAVAILABLE.withDescription("draining").asRuntimeException(trailers);
        });

        StatusRuntimeException failure = failureOf(stub);

        assertThat(failure.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(failure.getStatus().getDescription()).isEqualTo("draining");
        assertThat(failure.getTrailers().get(DETAIL)).isEqualTo("try node-2");
    }

    @Test
    void storageFailurePassedToOnErrorIsMappedToo() throws IOException {
        IdentityGrpc.IdentityBlockingStub stub = serve(
                Transport.UNIX, (request, responses) -> responses.onError(new StorageException.Busy("resizing")));

        Status status = failureOf(stub).getStatus();

        assertThat(status.getCode()).isEqualTo(Status.Code.ABORTED);
        assertThat(status.getDescription()).isEqualTo("resizing");
    }

    @Test
    void statusExceptionPassedToOnErrorIsUntouched() throws IOException {
        IdentityGrpc.IdentityBlockingStub stub = serve(Transport.UNIX, (request, responses) ->
                responses.onError(new StatusException(Status.PERMISSION_DENIED.withDescription("not yours"))));

        Status status = failureOf(stub).getStatus();

        assertThat(status.getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(status.getDescription()).isEqualTo("not yours");
    }

    @Test
    void exceptionAfterTheHandlerAnsweredDoesNotCloseTheCallTwice() throws IOException {
        IdentityGrpc.IdentityBlockingStub stub = serve(Transport.UNIX, (request, responses) -> {
            responses.onNext(GetPluginInfoResponse.newBuilder().setName("answered").build());
            responses.onCompleted();
            throw new IllegalStateException("late failure");
        });

        assertThat(stub.getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName()).isEqualTo("answered");
    }

    @Test
    void exceptionAfterTheHandlerFailedKeepsTheFirstStatus() throws IOException {
        IdentityGrpc.IdentityBlockingStub stub = serve(Transport.UNIX, (request, responses) -> {
            responses.onError(Status.NOT_FOUND.withDescription("first").asRuntimeException());
            throw new StorageException.Failed("second");
        });

        Status status = failureOf(stub).getStatus();

        assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(status.getDescription()).isEqualTo("first");
    }

    static Stream<Arguments> hugeFailures() {
        String huge = "volume " + "v".repeat(70_000) + " does not exist";
        String wide = "volume " + "\u00e9\u4e2d\ud83d\ude00".repeat(5_000) + " does not exist";
        return Stream.of(
                Arguments.of("thrown storage failure", (Runnable) () -> {
                    throw new StorageException.NotFound(huge);
                }),
                Arguments.of("thrown status", (Runnable) () -> {
                    throw Status.NOT_FOUND.withDescription(huge).asRuntimeException();
                }),
                Arguments.of("non-ASCII message", (Runnable) () -> {
                    throw new StorageException.NotFound(wide);
                }));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("hugeFailures")
    void aHugeMessageReachesAClientWithDefaultLimitsCutShortAndWithItsCode(String what, Runnable failing)
            throws IOException {
        IdentityGrpc.IdentityBlockingStub stub = serve(Transport.UNIX, (request, responses) -> failing.run());

        Status status = failureOf(stub).getStatus();

        assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(status.getDescription()).startsWith("volume ").containsPattern("… \\(\\d+ chars in all\\)$");
        assertThat(status.getDescription().getBytes(java.nio.charset.StandardCharsets.UTF_8).length)
                .isLessThanOrEqualTo(ErrorMapping.MAX_DESCRIPTION_BYTES);
    }

    @Test
    void aHugeStatusPassedToOnErrorIsCutShortToo() throws IOException {
        IdentityGrpc.IdentityBlockingStub stub = serve(Transport.UNIX, (request, responses) -> responses.onError(
                Status.INVALID_ARGUMENT.withDescription("x".repeat(70_000)).asRuntimeException()));

        Status status = failureOf(stub).getStatus();

        assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(status.getDescription()).startsWith("xxx").endsWith("… (70000 chars in all)")
                .hasSizeLessThanOrEqualTo(ErrorMapping.MAX_DESCRIPTION_BYTES);
    }

    @Test
    void aMessageThatFitsIsLeftWhole() {
        String fits = "p".repeat(ErrorMapping.MAX_DESCRIPTION_BYTES);

        assertThat(ErrorMapping.toStatus(new StorageException.NotFound(fits)).getDescription()).isEqualTo(fits);
        assertThat(ErrorMapping.toStatus(new StorageException.NotFound(fits + "p")).getDescription())
                .endsWith("… (2049 chars in all)");
    }

    @Test
    void withoutTheInterceptorGrpcWouldAnswerUnknown() throws IOException {
        server = TestServer.start(Transport.TCP.endpoint(dir), List.of(), new IdentityGrpc.IdentityImplBase() {
            @Override
            public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> responses) {
                throw new StorageException.NotFound("volume v1 does not exist");
            }
        });

        assertThatThrownBy(() -> IdentityGrpc.newBlockingStub(server.channel())
                        .withDeadlineAfter(10, TimeUnit.SECONDS)
                        .getPluginInfo(GetPluginInfoRequest.getDefaultInstance()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(e.getStatus().getCode())
                        .isEqualTo(Status.Code.UNKNOWN));
    }
}
