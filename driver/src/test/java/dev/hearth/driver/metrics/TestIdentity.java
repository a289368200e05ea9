package dev.hearth.driver.metrics;

import dev.hearth.csi.v1.GetPluginCapabilitiesRequest;
import dev.hearth.csi.v1.GetPluginCapabilitiesResponse;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetPluginInfoResponse;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.csi.v1.ProbeResponse;
import dev.hearth.storage.StorageException;
import io.grpc.Context;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * An Identity service whose methods each end one way: GetPluginInfo answers, Probe fails with a
 * storage NotFound (for ErrorMapping to turn into NOT_FOUND), GetPluginCapabilities tells
 * {@link #entered} and answers only once the client has given up on it, as a handler that does not
 * check for cancellation would.
 */
final class TestIdentity extends IdentityGrpc.IdentityImplBase {

    final CountDownLatch entered = new CountDownLatch(1);

    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> responses) {
        responses.onNext(GetPluginInfoResponse.newBuilder().setName("hearth.test.dev").build());
        responses.onCompleted();
    }

    @Override
    public void probe(ProbeRequest request, StreamObserver<ProbeResponse> responses) {
        throw new StorageException.NotFound("nothing to probe here");
    }

    @Override
    public void getPluginCapabilities(GetPluginCapabilitiesRequest request,
            StreamObserver<GetPluginCapabilitiesResponse> responses) {
        CountDownLatch clientGone = new CountDownLatch(1);
        Context.current().addListener(context -> clientGone.countDown(), Runnable::run);
        entered.countDown();
        try {
            clientGone.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        responses.onNext(GetPluginCapabilitiesResponse.getDefaultInstance());
        responses.onCompleted();
    }
}
