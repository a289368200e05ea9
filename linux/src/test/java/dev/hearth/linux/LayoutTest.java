package dev.hearth.linux;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Sizes and numbers checked against the kernel UAPI and glibc headers (gcc sizeof/offsetof on x86_64). */
class LayoutTest {

    // asm-generic/ioctl.h
    private static long ioc(long dir, long type, long nr, long size) {
        return (dir << 30) | (size << 16) | (type << 8) | nr;
    }

    @Test
    void loopStructsMatchLinuxLoopH() {
        assertThat(Loop.LOOP_INFO64.byteSize()).isEqualTo(232);
        assertThat(Loop.LOOP_CONFIG.byteSize()).isEqualTo(304);
        assertThat(Loop.LOOP_INFO64.byteOffset(groupElement("lo_flags"))).isEqualTo(52);
        assertThat(Loop.LOOP_INFO64.byteOffset(groupElement("lo_file_name"))).isEqualTo(56);
        assertThat(Loop.LOOP_CONFIG.byteOffset(groupElement("info"))).isEqualTo(8);
    }

    @Test
    void statvfsMatchesGlibc() {
        assertThat(FileSystems.STATVFS.byteSize()).isEqualTo(112);
        assertThat(FileSystems.STATVFS.byteOffset(groupElement("f_flag"))).isEqualTo(72);
    }

    @Test
    void statxHeadMatchesLinuxStatH() {
        assertThat(FileOps.STATX_HEAD.byteOffset(groupElement("stx_size"))).isEqualTo(0x28);
        assertThat(FileOps.STATX_HEAD.byteOffset(groupElement("stx_blocks"))).isEqualTo(0x30);
    }

    @Test
    void deviceMapperStructsMatchLinuxDmIoctlH() {
        assertThat(DeviceMapper.DM_IOCTL.byteSize()).isEqualTo(312);
        assertThat(DeviceMapper.DM_IOCTL.byteOffset(groupElement("dev"))).isEqualTo(40);
        assertThat(DeviceMapper.DM_IOCTL.byteOffset(groupElement("name"))).isEqualTo(48);
        assertThat(DeviceMapper.DM_IOCTL.byteOffset(groupElement("uuid"))).isEqualTo(176);
        assertThat(DeviceMapper.DM_TARGET_SPEC.byteSize()).isEqualTo(40);
        assertThat(DeviceMapper.DM_TARGET_SPEC.byteOffset(groupElement("next"))).isEqualTo(20);
    }

    @Test
    void ioctlNumbersMatchTheirDefinitions() {
        assertThat(BlockDevices.BLKGETSIZE64).isEqualTo(ioc(2, 0x12, 114, 8)).isEqualTo(0x80081272L);
        assertThat(BlockDevices.BLKDISCARD).isEqualTo(ioc(0, 0x12, 119, 0)).isEqualTo(0x1277L);
        assertThat(Loop.LOOP_CLR_FD).isEqualTo(0x4C01);
        assertThat(Loop.LOOP_SET_CAPACITY).isEqualTo(0x4C07);
        assertThat(Loop.LOOP_CONFIGURE).isEqualTo(0x4C0A);
        assertThat(Loop.LOOP_CTL_GET_FREE).isEqualTo(0x4C82);
        // _IOWR(0xfd, nr, struct dm_ioctl): asm-generic/ioctl.h, which x86_64 and aarch64 both use
        assertThat(DeviceMapper.DM_DEV_STATUS).isEqualTo(ioc(3, 0xfd, DeviceMapper.DM_DEV_STATUS_CMD, 312));
        assertThat(DeviceMapper.DM_TABLE_STATUS).isEqualTo(ioc(3, 0xfd, DeviceMapper.DM_TABLE_STATUS_CMD, 312));
    }
}
