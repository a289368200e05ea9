package dev.hearth.storage;

import dev.hearth.linux.FileOps;
import java.io.FileNotFoundException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Writes that are either wholly there or not at all, even across a crash or power loss, and
 * whether or not the writing thread is interrupted.
 */
public final class AtomicFiles {

    private AtomicFiles() {}

    /** Writes to a temp file beside the target, syncs it, renames it over the target, syncs the directory. */
    public static void write(Path target, String content) throws IOException {
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        try {
            // A stream, not a FileChannel: an interrupt of the thread (a call cut short by the driver's
            // stop) must not abort a commit that takes microseconds; a channel would close and throw.
            try (FileOutputStream out = open(tmp)) {
                out.write(content.getBytes(StandardCharsets.UTF_8));
                out.getFD().sync();
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            // A write cut short (a full disk, a rename refused) leaves no temporary file.
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
        syncDirectory(target.getParent());
    }

    /**
     * Opens the file for writing, created or truncated. A refusal is thrown as NIO's precise
     * exception (NoSuchFileException, AccessDeniedException, ...), which only the failing case
     * pays a second open for: a FileOutputStream says only FileNotFoundException.
     */
    private static FileOutputStream open(Path file) throws IOException {
        try {
            return new FileOutputStream(file.toFile());
        } catch (FileNotFoundException e) {
            Files.newOutputStream(file).close();
            throw e;
        }
    }

    /** Makes renames and deletions in a directory durable, whether or not the thread is interrupted. */
    public static void syncDirectory(Path directory) throws IOException {
        FileOps.sync(directory);
    }
}
