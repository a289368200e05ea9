package dev.hearth.linux;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.ScratchFilesystem;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

@RequiresRoot
class XfsGeometryTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    @Test
    @RequiresTools({"mkfs.xfs", "xfs_growfs"})
    void reportsTheDataSizeMkfsMadeAndAGrowAtOnce() throws IOException {
        ScratchFilesystem xfs = ScratchFilesystem.mount(cleanup, dir, "xfs", 320 * MIB);

        assertThat(XfsGeometry.dataBytes(xfs.mountPoint())).isEqualTo(320 * MIB);

        xfs.growDevice(400 * MIB);
        ScratchFilesystem.run(List.of("xfs_growfs", "-d", xfs.mountPoint().toString()));

        assertThat(XfsGeometry.dataBytes(xfs.mountPoint())).isEqualTo(400 * MIB);
    }

    @Test
    @RequiresTools("mkfs.ext4")
    void anotherFilesystemIsEnotty() throws IOException {
        Path ext4 = ScratchFilesystem.mount(cleanup, dir, "ext4", 64 * MIB).mountPoint();

        assertThatThrownBy(() -> XfsGeometry.dataBytes(ext4))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOTTY)).isTrue());
    }
}
