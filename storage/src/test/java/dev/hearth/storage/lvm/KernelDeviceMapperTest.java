package dev.hearth.storage.lvm;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import org.junit.jupiter.api.Test;

/** Names no device-mapper device can have; the kernel is never asked (this host's has no device-mapper). */
class KernelDeviceMapperTest {

    /** An inactive LV whose group and LV names together pass 127 bytes: listing the group must not fail on it. */
    @Test
    void aNameTooLongForDeviceMapperIsNoDevice() throws IOException {
        KernelDeviceMapper dm = new KernelDeviceMapper();
        String name = Names.mapperName("vg-" + "a".repeat(60), "lv-" + "b".repeat(60));

        assertThat(dm.openCount(name)).isEmpty();
        assertThat(dm.suspended(name)).isFalse();
        assertThat(dm.thinPool(name + "-tpool")).isEmpty();
        assertThat(dm.thin(name)).isEmpty();
    }
}
