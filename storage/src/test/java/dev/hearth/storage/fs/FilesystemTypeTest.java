package dev.hearth.storage.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.NullAndEmptySource;
import org.junit.jupiter.params.provider.ValueSource;

class FilesystemTypeTest {

    @ParameterizedTest
    @CsvSource({"ext4,EXT4", "EXT4,EXT4", "Xfs,XFS", "xfs,XFS", "btrfs,BTRFS", "BTRFS,BTRFS", "' ext4 ',EXT4"})
    void parsesKnownNamesInAnyCase(String name, FilesystemType expected) {
        assertThat(FilesystemType.parse(name)).isEqualTo(expected);
    }

    @ParameterizedTest
    @NullAndEmptySource
    @ValueSource(strings = {"  "})
    void noNameMeansExt4(String name) {
        assertThat(FilesystemType.parse(name)).isEqualTo(FilesystemType.EXT4).isEqualTo(FilesystemType.DEFAULT);
    }

    @ParameterizedTest
    @ValueSource(strings = {"ext3", "vfat", "zfs", "ext4 xfs", "ext"})
    void rejectsOthersNamingValueAndChoices(String name) {
        assertThatThrownBy(() -> FilesystemType.parse(name))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unsupported filesystem type '" + name + "'; supported: ext4, xfs, btrfs");
    }

    @Test
    void kernelNamesAreWhatMountExpects() {
        assertThat(FilesystemType.EXT4.kernelName()).isEqualTo("ext4");
        assertThat(FilesystemType.XFS.kernelName()).isEqualTo("xfs");
        assertThat(FilesystemType.BTRFS.kernelName()).isEqualTo("btrfs");
    }
}
