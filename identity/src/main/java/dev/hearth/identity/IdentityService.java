package dev.hearth.identity;

import com.google.protobuf.BoolValue;
import dev.hearth.csi.v1.GetPluginCapabilitiesRequest;
import dev.hearth.csi.v1.GetPluginCapabilitiesResponse;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetPluginInfoResponse;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.PluginCapability;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.csi.v1.ProbeResponse;
import dev.hearth.storage.StorageException;
import io.grpc.stub.StreamObserver;
import java.util.Optional;
import java.util.function.Supplier;

/** CSI Identity: who the driver is, what it offers, and whether its pools can serve right now. */
public final class IdentityService extends IdentityGrpc.IdentityImplBase {

    private static final System.Logger LOG = System.getLogger(IdentityService.class.getName());

    private final GetPluginInfoResponse info;
    private final GetPluginCapabilitiesResponse capabilities;
    private final Supplier<Optional<String>> problem;

    /**
     * @param problem what keeps the driver from serving (e.g. a pool directory gone, no loop driver),
     *     empty when ready
     * @param onlineExpansion whether volumes can grow while in use (advertised as VolumeExpansion
     *     ONLINE; the node does the growing, so the controller advertises no EXPAND_VOLUME)
     */
    public IdentityService(String driverName, String version, Supplier<Optional<String>> problem,
            boolean onlineExpansion) {
        this.info = GetPluginInfoResponse.newBuilder().setName(driverName).setVendorVersion(version).build();
        GetPluginCapabilitiesResponse.Builder builder = GetPluginCapabilitiesResponse.newBuilder()
                .addCapabilities(service(PluginCapability.Service.Type.CONTROLLER_SERVICE))
                .addCapabilities(service(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS));
        if (onlineExpansion) {
            builder.addCapabilities(PluginCapability.newBuilder().setVolumeExpansion(
                    PluginCapability.VolumeExpansion.newBuilder()
                            .setType(PluginCapability.VolumeExpansion.Type.ONLINE)));
        }
        this.capabilities = builder.build();
        this.problem = problem;
    }

    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> response) {
        response.onNext(info);
        response.onCompleted();
    }

    @Override
    public void getPluginCapabilities(GetPluginCapabilitiesRequest request,
            StreamObserver<GetPluginCapabilitiesResponse> response) {
        response.onNext(capabilities);
        response.onCompleted();
    }

    /**
     * Ready, or FAILED_PRECONDITION with what is wrong: the CSI spec's answer for a plugin that is
     * unhealthy or lacks a dependency. ({@code ready=false} would mean "still initializing", which
     * hearth never is once it answers.)
     */
    @Override
    public void probe(ProbeRequest request, StreamObserver<ProbeResponse> response) {
        Optional<String> trouble = problem.get();
        if (trouble.isPresent()) {
            LOG.log(System.Logger.Level.WARNING, "probe: not healthy: " + trouble.get());
            throw new StorageException.Precondition(trouble.get());
        }
        response.onNext(ProbeResponse.newBuilder().setReady(BoolValue.of(true)).build());
        response.onCompleted();
    }

    private static PluginCapability service(PluginCapability.Service.Type type) {
        return PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder().setType(type)).build();
    }
}
