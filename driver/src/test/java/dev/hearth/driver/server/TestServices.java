package dev.hearth.driver.server;

import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetPluginInfoResponse;
import dev.hearth.csi.v1.IdentityGrpc;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

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
