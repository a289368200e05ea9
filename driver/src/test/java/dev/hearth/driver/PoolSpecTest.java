package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.storage.lvm.LvmPoolConfig;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** An lvm pool spec that names disks to grow onto, as serve and hearth disks read it. */
class PoolSpecTest {

    private static final Path STATE = Path.of("/var/lib/hearth");

    @Test
    void anLvmPoolWithDisksGrowsOntoThemWithClaimsInTheStateDirectory() {
        PoolSpec spec = PoolSpec.parse("name=lvm,kind=lvm,vg=vg0,disks=/dev/disk/by-id/nvme-*|/dev/sd[b-d],"
                + "min-size=100Gi,model=Samsung.*,rotational=false,check=full", STATE);

        LvmPoolConfig.Growth growth = ((LvmPoolConfig) spec.config()).growth().orElseThrow();
        assertThat(growth.disks().paths()).containsExactly("/dev/disk/by-id/nvme-*", "/dev/sd[b-d]");
        assertThat(growth.disks().minSizeBytes()).isEqualTo(100L << 30);
        assertThat(growth.check()).isEqualTo(ZeroCheck.FULL);
        assertThat(growth.claims()).isEqualTo(STATE.resolve("disks"));
        assertThat(PoolReport.describe(spec.config())).isEqualTo("lvm (kind lvm, volume group vg0, wipe zero, grows vg0 "
                + "onto disks=/dev/disk/by-id/nvme-*|/dev/sd[b-d],min-size=100Gi,model=Samsung.*,rotational=false,"
                + "check=full)");
    }

    @Test
    void theZeroCheckIsSampledUnlessFullIsAskedAndAPoolWithoutDisksNeverGrows() {
        PoolSpec sampled = PoolSpec.parse("name=lvm,kind=lvm,vg=vg0,thinpool=tp,disks=/dev/vd[b-z]", STATE);
        PoolSpec fixed = PoolSpec.parse("name=lvm,kind=lvm,vg=vg0", STATE);

        assertThat(((LvmPoolConfig) sampled.config()).growth().orElseThrow().check()).isEqualTo(ZeroCheck.SAMPLED);
        assertThat(((LvmPoolConfig) fixed.config()).growth()).isEmpty();
    }
}
