package dev.hearth.storage.mount;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.NullAndEmptySource;
import org.junit.jupiter.params.provider.ValueSource;

class NodePathTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @NullAndEmptySource
    void missingPathIsInvalidAndNamesTheField(String raw) {
        assertThatThrownBy(() -> NodePath.check(raw, "staging_target_path"))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining("staging_target_path");
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "relative/path", "./x", "../x", "x",
        "/a/../b", "/a/..", "/..", "/a//b", "//a", "/a/./b", "/a/.", "/a/b/", "/a/b/.."
    })
    void relativeOrNonNormalizedPathIsInvalid(String raw) {
        assertThatThrownBy(() -> NodePath.check(raw, "target_path"))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining("target_path")
                .hasMessageContaining(raw);
    }

    @Test
    void pathWithANulIsInvalidAndShownEscaped() {
        assertThatThrownBy(() -> NodePath.check("/var/lib/kubelet\0/x", "target_path"))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessage("target_path '/var/lib/kubelet\\0/x' is not a valid path: Nul character not allowed");
    }

    @Test
    void nameLongerThanTheKernelTakesIsInvalidAndSaysSo() {
        String raw = "/var/lib/kubelet/pods/" + "n".repeat(256);

        assertThatThrownBy(() -> NodePath.check(raw, "target_path"))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining("target_path '/var/lib/kubelet/pods/nnn")
                .hasMessageContaining("has a name of 256 bytes; a name in a path has at most 255");
        assertThat(NodePath.check("/var/lib/kubelet/pods/" + "n".repeat(255), "target_path")).isNotNull();
    }

    @Test
    void pathLongerThanTheKernelTakesInBytesIsInvalid() {
        String raw = "/" + "\u00e9/".repeat(1_500); // 3001 characters, 4501 bytes

        assertThatThrownBy(() -> NodePath.check(raw, "target_path"))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining("is 4501 bytes long; a path has at most 4095");
    }

    @Test
    void ofNamesAPathWithoutLookingAtTheNode() {
        assertThat(NodePath.of("relative/x", "volume_path")).isEqualTo(Path.of("relative/x"));
        assertThatThrownBy(() -> NodePath.of("/a\0b", "volume_path"))
                .isInstanceOf(StorageException.InvalidArgument.class).hasMessageContaining("volume_path");
    }

    @Test
    void overlongPathIsInvalid() {
        String raw = "/" + "a/".repeat(3000) + "b";

        assertThatThrownBy(() -> NodePath.check(raw, "target_path"))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining("(6002 chars) is 6002 bytes long");
    }

    @Test
    void pathThroughASymlinkedDirectoryIsInvalid() throws IOException {
        Path real = Files.createDirectories(dir.resolve("real/pods"));
        Path link = Files.createSymbolicLink(dir.resolve("link"), dir.resolve("real"));

        assertThatThrownBy(() -> NodePath.check(link.resolve("pods/vol").toString(), "target_path"))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining(link.toString());
        assertThat(real).isEmptyDirectory();
    }

    @Test
    void pathThroughASymlinkLeadingOutIsInvalidEvenWhereNothingExistsYet(@TempDir Path outside) throws IOException {
        Path link = Files.createSymbolicLink(dir.resolve("escape"), outside);

        assertThatThrownBy(() -> NodePath.check(link.resolve("not-there/yet").toString(), "target_path"))
                .isInstanceOf(StorageException.InvalidArgument.class);
        assertThat(outside).isEmptyDirectory();
    }

    @Test
    void symlinkAsTheLastStepIsInvalid() throws IOException {
        Path target = Files.createDirectory(dir.resolve("target"));
        Path link = Files.createSymbolicLink(dir.resolve("mount"), target);

        assertThatThrownBy(() -> NodePath.check(link.toString(), "target_path"))
                .isInstanceOf(StorageException.InvalidArgument.class);
    }

    @Test
    void danglingSymlinkIsInvalid() throws IOException {
        Path link = Files.createSymbolicLink(dir.resolve("dangling"), dir.resolve("nowhere"));

        assertThatThrownBy(() -> NodePath.check(link.toString(), "target_path"))
                .isInstanceOf(StorageException.InvalidArgument.class);
    }

    @Test
    void existingPathIsAccepted() throws IOException {
        Path existing = Files.createDirectories(dir.resolve("pods/uid/volumes/mount"));

        assertThat(NodePath.check(existing.toString(), "target_path")).isEqualTo(existing);
    }

    @Test
    void pathNotYetMadeIsAccepted() {
        Path future = dir.resolve("pods/uid/volumes/mount");

        assertThat(NodePath.check(future.toString(), "target_path")).isEqualTo(future);
        assertThat(future).doesNotExist();
    }

    @Test
    void rootIsAccepted() {
        assertThat(NodePath.check("/", "staging_target_path")).isEqualTo(Path.of("/"));
    }
}
