package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.testing.RequiresRoot;
import java.io.IOException;
import org.junit.jupiter.api.Test;

class CapabilitiesTest {

    // A container's root without CAP_SYS_RESOURCE (bit 24), as on some test hosts.
    private static final String STATUS = """
            Name:\tjava
            CapInh:\t0000000000000000
            CapPrm:\t000001fffeffffff
            CapEff:\t000001fffeffffff
            CapBnd:\t000001fffeffffff
            """;

    @Test
    void readsEachBitOfTheEffectiveSet() {
        assertThat(Capabilities.has(STATUS, Capabilities.CAP_SYS_ADMIN)).isTrue();
        assertThat(Capabilities.has(STATUS, Capabilities.CAP_SYS_RESOURCE)).isFalse();
        assertThat(Capabilities.has(STATUS, 40)).isTrue();
        assertThat(Capabilities.has(STATUS, 41)).isFalse();
    }

    @Test
    void aStatusWithoutCapEffIsRejected() {
        assertThatThrownBy(() -> Capabilities.has("Name:\tjava\n", 21)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @RequiresRoot
    void rootHasSysAdmin() throws IOException {
        assertThat(Capabilities.effective(Capabilities.CAP_SYS_ADMIN)).isTrue();
    }
}
