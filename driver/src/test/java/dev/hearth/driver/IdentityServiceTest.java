package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.hearth.csi.v1.GetPluginCapabilitiesRequest;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetPluginInfoResponse;
import dev.hearth.csi.v1.PluginCapability;
import dev.hearth.csi.v1.PluginCapability.Service.Type;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.csi.v1.ProbeResponse;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.RequiresRoot;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import org.junit.jupiter.api.Test;

/** The Identity service of a running driver, through its unix socket. */
class IdentityServiceTest extends DriverFixture {

    @Test
    void pluginInfoNamesTheDriverAndTheBuildVersion() {
        GetPluginInfoResponse info = driver.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance());

        assertThat(info.getName()).isEqualTo("csi.hearth.dev");
        assertThat(info.getVendorVersion()).isNotBlank().isEqualTo(Driver.version())
                .doesNotContain("${"); // Maven filtered the version resource
    }

    @Test
    void capabilitiesAreTheControllerServiceTopologyAndOnlineExpansion() {
        var capabilities = driver.identity()
                .getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList();

        assertThat(capabilities).filteredOn(PluginCapability::hasService)
                .extracting(PluginCapability::getService)
                .extracting(PluginCapability.Service::getType)
                .containsExactlyInAnyOrder(Type.CONTROLLER_SERVICE, Type.VOLUME_ACCESSIBILITY_CONSTRAINTS);
        assertThat(capabilities).filteredOn(PluginCapability::hasVolumeExpansion)
                .extracting(c -> c.getVolumeExpansion().getType())
                .containsExactly(PluginCapability.VolumeExpansion.Type.ONLINE);
        assertThat(capabilities).hasSize(3);
    }

    @Test
    void probeIsReadyWhileThePoolDirectoryIsUsable() {
        ProbeResponse probe = driver.identity().probe(ProbeRequest.getDefaultInstance());

        assertThat(probe.hasReady()).isTrue();
        assertThat(probe.getReady().getValue()).isTrue();
    }

    /** The CSI spec's answer for an unhealthy plugin: FAILED_PRECONDITION, not ready=false ("initializing"). */
    @Test
    void probeFailsWithFailedPreconditionNamingThePoolOnceItsDirectoryIsGone() throws IOException {
        deletePoolDirectory();

        assertThat(probeFailure()).hasMessageContaining("pool 'default'").hasMessageContaining(
                driver.poolDir().toString());
    }

    @Test
    void probeIsReadyAgainWhenThePoolDirectoryComesBack() throws IOException {
        deletePoolDirectory();
        probeFailure();

        Files.createDirectory(driver.poolDir());

        assertThat(driver.identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
    }

    /** Root may write anywhere a mode forbids; a read-only mount (say, after disk errors) stops even root. */
    @Test
    @RequiresRoot
    void probeFailsWhileThePoolDirectoryIsReadOnly() throws IOException {
        Mounts.bind(driver.poolDir(), driver.poolDir(), true);
        driver.cleanup().add(() -> Mounts.unmount(driver.poolDir()));

        assertThat(probeFailure()).hasMessageContaining("not writable");
    }

    private StatusRuntimeException probeFailure() {
        Throwable failure = catchThrowable(() -> driver.identity().probe(ProbeRequest.getDefaultInstance()));
        assertThat(failure).isInstanceOf(StatusRuntimeException.class);
        assertThat(Status.fromThrowable(failure).getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        return (StatusRuntimeException) failure;
    }

    private void deletePoolDirectory() throws IOException {
        Files.delete(driver.poolDir().resolve(".hearth.lock"));
        Files.delete(driver.poolDir().resolve("snapshots"));
        Files.delete(driver.poolDir());
    }
}
