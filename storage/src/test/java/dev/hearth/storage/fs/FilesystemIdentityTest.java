package dev.hearth.storage.fs;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.Errno;
import dev.hearth.linux.LinuxException;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.copy.ImageCopier;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

@RequiresTools({"mkfs.xfs", "xfs_admin"})
class FilesystemIdentityTest {

    private static final Duration TIMEOUT = Duration.ofMinutes(1);

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private final ToolRunner tools = new ToolRunner();
    private final FilesystemIdentity identity = new FilesystemIdentity(tools);

    @Test
    void aRenewedCloneHasAUuidOfItsOwnAndTheSourceKeepsItsOwn() throws IOException {
        Path source = xfsImage("source.img");
        UUID original = FilesystemIdentity.xfsUuid(source).orElseThrow();
        Path clone = dir.resolve("clone.img");
        new ImageCopier().copy(source, clone, Files.size(source));
        assertThat(FilesystemIdentity.xfsUuid(clone)).contains(original);

        identity.renewXfsUuid(clone);

        UUID renewed = FilesystemIdentity.xfsUuid(clone).orElseThrow();
        assertThat(renewed).isNotEqualTo(original);
        assertThat(xfsAdminUuid(clone)).isEqualTo(renewed);
        assertThat(xfsAdminUuid(source)).isEqualTo(original);
    }

    @Test
    @RequiresRoot
    void aCloneMountsBesideItsSourceOnlyOnceRenewed() throws IOException {
        Path source = xfsImage("source.img");
        Path clone = dir.resolve("clone.img");
        new ImageCopier().copy(source, clone, Files.size(source));
        Path sourceMnt = mount(source, "source-mnt");
        Path cloneMnt = Files.createDirectory(dir.resolve("clone-mnt"));
        LoopDevice unrenewed = Loop.attach(clone, false, true);
        try {
            assertThatThrownBy(() -> Mounts.mount(unrenewed.path().toString(), cloneMnt, "xfs", 0, null))
                    .as("xfs refuses a duplicate UUID")
                    .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.EINVAL)).isTrue());
        } finally {
            detachAndWait(unrenewed);
        }

        identity.renewXfsUuid(clone);

        Scratch.mount(cleanup, attach(clone).path().toString(), cloneMnt, "xfs", 0, null);

        Files.writeString(sourceMnt.resolve("where"), "source");
        Files.writeString(cloneMnt.resolve("where"), "clone");
        assertThat(sourceMnt.resolve("where")).hasContent("source");
    }

    @Test
    @RequiresRoot
    @RequiresTools("xfs_io")
    void aDirtyLogIsNamedAsTheReasonAndTheUuidStays() throws IOException {
        Path image = xfsImage("dirty.img");
        Path mnt = mount(image, "dirty-mnt");
        Files.writeString(mnt.resolve("pending"), "in the log only");
        // Flush the log, then stop the filesystem dead: the log holds changes never written in place.
        tools.run(List.of("xfs_io", "-x", "-c", "shutdown -f", mnt.toString()), TIMEOUT);
        Mounts.unmount(mnt);
        detachAndWait(Loop.findByBackingFile(image).orElseThrow().device());
        UUID before = FilesystemIdentity.xfsUuid(image).orElseThrow();

        assertThatThrownBy(() -> identity.renewXfsUuid(image))
                .isInstanceOf(StorageException.Failed.class)
                .hasMessageContaining("its log is dirty");
        assertThat(FilesystemIdentity.xfsUuid(image)).contains(before);
    }

    @Test
    @RequiresRoot
    void anImageAttachedToALoopDeviceIsRefusedUntouched() throws IOException {
        Path image = xfsImage("attached.img");
        UUID before = FilesystemIdentity.xfsUuid(image).orElseThrow();
        LoopDevice device = attach(image);

        assertThatThrownBy(() -> identity.renewXfsUuid(image))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("attached as " + device.path());
        assertThat(FilesystemIdentity.xfsUuid(image)).contains(before);
    }

    @Test
    @RequiresTools("mkfs.ext4")
    void anImageThatIsNotXfsIsRefusedUntouched() throws IOException {
        Path ext4 = Scratch.sparseFile(dir.resolve("ext4.img"), 64 * MIB);
        tools.run(List.of("mkfs.ext4", "-q", ext4.toString()), TIMEOUT);
        byte[] before = Files.readAllBytes(ext4);

        assertThatThrownBy(() -> identity.renewXfsUuid(ext4))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no xfs superblock");
        assertThat(Files.readAllBytes(ext4)).isEqualTo(before);
    }

    private Path xfsImage(String name) throws IOException {
        Path image = Scratch.sparseFile(dir.resolve(name), 320 * MIB);
        tools.run(List.of("mkfs.xfs", "-q", image.toString()), TIMEOUT);
        return image;
    }

    private LoopDevice attach(Path image) throws IOException {
        LoopDevice device = Loop.attach(image, false, true);
        // Only while still ours: a test may detach it itself, and the number can be reused meanwhile.
        cleanup.add(() -> {
            if (Loop.findByBackingFile(image).filter(a -> a.device().equals(device)).isPresent()) {
                Loop.detach(device);
            }
        });
        return device;
    }

    /** The kernel finishes a detach at the last close, and udev may still be probing the device. */
    private static void detachAndWait(LoopDevice device) throws IOException {
        Loop.detach(device);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (Loop.list().stream().anyMatch(a -> a.device().equals(device))) {
            assertThat(System.nanoTime()).as("%s still attached", device).isLessThan(deadline);
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(e);
            }
        }
    }

    private Path mount(Path image, String name) throws IOException {
        LoopDevice device = attach(image);
        Path mnt = Files.createDirectory(dir.resolve(name));
        Scratch.mount(cleanup, device.path().toString(), mnt, "xfs", 0, null);
        return mnt;
    }

    private UUID xfsAdminUuid(Path image) {
        String out = tools.run(List.of("xfs_admin", "-u", image.toString()), TIMEOUT).stdout();
        assertThat(out).startsWith("UUID = ");
        return UUID.fromString(out.substring("UUID = ".length()).strip());
    }
}
