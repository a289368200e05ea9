package dev.hearth.linux;

import static dev.hearth.linux.MountFlags.MS_NOATIME;
import static dev.hearth.linux.MountFlags.MS_NODEV;
import static dev.hearth.linux.MountFlags.MS_NOEXEC;
import static dev.hearth.linux.MountFlags.MS_NOSUID;
import static dev.hearth.linux.MountFlags.MS_RDONLY;
import static dev.hearth.linux.MountFlags.MS_RELATIME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MountFlagsTest {

    @Test
    void vfsOptionsBecomeFlagsAndTheRestData() {
        MountFlags.Parsed parsed = MountFlags.parse(
                List.of("ro", "noatime", "discard", "nodev", "errors=remount-ro", "data=ordered", "uid=0"));

        assertThat(parsed.flags()).isEqualTo(MS_RDONLY | MS_NOATIME | MS_NODEV);
        assertThat(parsed.data()).isEqualTo("discard,errors=remount-ro,data=ordered,uid=0");
    }

    @Test
    void noOptionsMeanNoFlagsAndEmptyData() {
        assertThat(MountFlags.parse(List.of())).isEqualTo(new MountFlags.Parsed(0, ""));
    }

    @Test
    void laterOptionsOverrideEarlierOnes() {
        assertThat(MountFlags.parse(List.of("ro", "rw")).flags()).isZero();
        assertThat(MountFlags.parse(List.of("nosuid", "suid", "noexec", "exec", "nodev", "dev")).flags()).isZero();
        assertThat(MountFlags.parse(List.of("relatime", "norelatime", "noatime", "atime")).flags()).isZero();
        assertThat(MountFlags.parse(List.of("rw", "ro", "relatime")).flags()).isEqualTo(MS_RDONLY | MS_RELATIME);
    }

    @Test
    void everyVfsOptionMapsToItsFlag() {
        assertThat(MountFlags.parse(List.of("nosuid", "noexec", "sync", "dirsync", "nodiratime", "strictatime",
                "lazytime", "silent", "nosymfollow")).flags())
                .isEqualTo(MS_NOSUID | MS_NOEXEC | MountFlags.MS_SYNCHRONOUS | MountFlags.MS_DIRSYNC
                        | MountFlags.MS_NODIRATIME | MountFlags.MS_STRICTATIME | MountFlags.MS_LAZYTIME
                        | MountFlags.MS_SILENT | MountFlags.MS_NOSYMFOLLOW);
    }

    @Test
    void userspaceOnlyOptionsAreDroppedAsMount8Does() {
        assertThat(MountFlags.parse(List.of("defaults", "nofail", "_netdev", "x-systemd.automount", "discard")))
                .isEqualTo(new MountFlags.Parsed(0, "discard"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"bind", "rbind", "remount", "move", "shared", "rshared", "private", "rprivate",
            "slave", "rslave", "unbindable", "runbindable"})
    void rejectsOptionsThatChangeWhatKindOfMountItIs(String option) {
        assertThatThrownBy(() -> MountFlags.parse(List.of("ro", option)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(option);
    }

    @ParameterizedTest
    @ValueSource(strings = {"ro,nodev", "a\0b"})
    void rejectsOptionsThatWouldSmuggleInMore(String option) {
        assertThatThrownBy(() -> MountFlags.parse(List.of(option)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(option.replace("\0", "\\0"));
    }

    @Test
    void rejectsEmptyAndNullOptions() {
        assertThatThrownBy(() -> MountFlags.parse(List.of("")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("empty");
        assertThatThrownBy(() -> MountFlags.parse(Arrays.asList("ro", null)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void describeSpellsFlagsLikeMount8() {
        assertThat(MountFlags.describe(MS_RDONLY | MS_NODEV | MountFlags.MS_BIND)).isEqualTo("ro,nodev,bind");
        assertThat(MountFlags.describe(1L << 9)).isEqualTo("0x200");
        assertThat(MountFlags.describe(0)).isEmpty();
    }
}
