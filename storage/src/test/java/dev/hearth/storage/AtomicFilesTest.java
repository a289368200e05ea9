package dev.hearth.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AtomicFilesTest {

    @TempDir
    Path dir;

    @Test
    void writeCreatesTheFileWithExactlyTheContent() throws IOException {
        Path target = dir.resolve("v.meta");

        AtomicFiles.write(target, "name=ü名\n");

        assertThat(Files.readString(target)).isEqualTo("name=ü名\n");
        assertThat(dir).isDirectoryNotContaining(p -> p.getFileName().toString().endsWith(".tmp"));
    }

    @Test
    void writeReplacesTheWholeOldContent() throws IOException {
        Path target = dir.resolve("v.meta");
        AtomicFiles.write(target, "a much longer first version of the file\n");

        AtomicFiles.write(target, "short\n");

        assertThat(Files.readString(target)).isEqualTo("short\n");
        try (var files = Files.list(dir)) {
            assertThat(files).containsExactly(target);
        }
    }

    @Test
    void writeReplacesAStaleTempFileFromACrash() throws IOException {
        Path target = dir.resolve("v.meta");
        Files.writeString(dir.resolve("v.meta.tmp"), "half-written garbage that is longer than the content");

        AtomicFiles.write(target, "ok\n");

        assertThat(Files.readString(target)).isEqualTo("ok\n");
        assertThat(dir.resolve("v.meta.tmp")).doesNotExist();
    }

    @Test
    void writeIntoAMissingDirectoryFails() {
        Path target = dir.resolve("missing/v.meta");

        assertThatThrownBy(() -> AtomicFiles.write(target, "x")).isInstanceOf(NoSuchFileException.class);
        assertThat(target).doesNotExist();
    }

    /** A write cut short, here by an interrupt (which closes the channel), leaves the old file and no temporary one. */
    @Test
    void aWriteCutShortLeavesTheOldFileAndNoTemporaryOne(@TempDir Path dir)
            throws Exception {
        Path target = dir.resolve("record");
        AtomicFiles.write(target, "old");

        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> AtomicFiles.write(target, "new"))
                    .isInstanceOf(ClosedByInterruptException.class);
        } finally {
            Thread.interrupted();
        }

        assertThat(target).hasContent("old");
        assertThat(dir.resolve("record.tmp")).doesNotExist();
    }
}
