package dev.hearth.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
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

    /** A write cut short (here its rename, over a directory) leaves the old file and no temporary one. */
    @Test
    void aWriteCutShortLeavesNoTemporaryFile() throws Exception {
        Path target = dir.resolve("record");
        Files.createDirectories(target.resolve("in-the-way"));

        assertThatThrownBy(() -> AtomicFiles.write(target, "new")).isInstanceOf(IOException.class);

        assertThat(target.resolve("in-the-way")).isDirectory();
        assertThat(dir.resolve("record.tmp")).doesNotExist();
    }

    /**
     * The driver's stop interrupts calls past its grace: a record such a call commits is committed
     * whole, not cut off between its rename and the directory's sync (which a FileChannel would be).
     */
    @Test
    void anInterruptedThreadStillWritesTheWholeRecordAndKeepsItsInterrupt() throws Exception {
        Path target = dir.resolve("record");
        AtomicFiles.write(target, "old");

        Thread.currentThread().interrupt();
        try {
            AtomicFiles.write(target, "new");
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }

        assertThat(target).hasContent("new");
        assertThat(dir.resolve("record.tmp")).doesNotExist();
    }
}
