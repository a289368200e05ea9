package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.storage.device.DevicePoolConfig;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@code --pool kind=device,...}: what each key becomes, and the defaults. */
class DevicePoolSpecTest {

    private static final Path STATE = Path.of("/var/lib/hearth");

    @Test
    void everyKeyIsParsedIntoTheSelectorWipeAndCheck() {
        PoolSpec spec = PoolSpec.parse("name=nvme,kind=device,disks=/dev/disk/by-id/nvme-*|/dev/sd[b-e],"
                + "min-size=100Gi,model=Samsung.*,rotational=false,wipe=discard,check=full", STATE);

        DevicePoolConfig config = (DevicePoolConfig) spec.config();
        assertThat(config.kind()).isEqualTo("device");
        assertThat(config.selector().paths()).containsExactly("/dev/disk/by-id/nvme-*", "/dev/sd[b-e]");
        assertThat(config.selector().minSizeBytes()).isEqualTo(100L << 30);
        assertThat(config.selector().model()).hasValueSatisfying(m -> assertThat(m.pattern()).isEqualTo("Samsung.*"));
        assertThat(config.selector().rotational()).contains(false);
        assertThat(config.wipe()).isEqualTo(DevicePoolConfig.Wipe.DISCARD);
        assertThat(config.check()).isEqualTo(ZeroCheck.FULL);
        assertThat(config.stateDirectory()).isEqualTo(STATE.resolve("pools/nvme"));
        assertThat(config.claimsDirectory()).isEqualTo(STATE.resolve("disks"));
        assertThat(spec.file()).isEmpty();
        assertThat(PoolReport.describe(config)).isEqualTo("nvme (kind device, disks=/dev/disk/by-id/nvme-*|/dev/sd[b-e],"
                + "min-size=100Gi,model=Samsung.*,rotational=false, wipe discard, check full)");
    }

    @Test
    void wipeDefaultsToZeroAndCheckToSampled() {
        DevicePoolConfig config = (DevicePoolConfig) PoolSpec.parse("kind=device,disks=/dev/loop7", STATE).config();

        assertThat(config.name()).isEqualTo("default");
        assertThat(config.wipe()).isEqualTo(DevicePoolConfig.Wipe.ZERO);
        assertThat(config.check()).isEqualTo(ZeroCheck.SAMPLED);
        assertThat(config.selector().paths()).isEqualTo(List.of("/dev/loop7"));
        assertThat(config.selector().model()).isEqualTo(Optional.empty());
        assertThat(config.selector().rotational()).isEmpty();
        assertThat(config.rule().check()).isEqualTo(ZeroCheck.SAMPLED);
    }
}
