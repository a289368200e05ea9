package dev.hearth.driver;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The directories {@code hearth serve} works in, checked before anything opens them, with
 * failures that say what is wrong and not only where.
 *
 * <p>The state directory is hearth's own and is made when missing, and so is a pool directory
 * inside it (the default pool's, {@code STATE_DIR/pools/NAME}). Any other pool directory must
 * exist, unless its spec says {@code create=true}: a typo, or a disk that is not mounted, must not
 * quietly put a pool on the root filesystem under the empty mount point.
 */
final class Directories {

    private Directories() {}

    /**
     * Makes the state directory when it is missing and proves that files can be made in it. The
     * file has a fixed name, not a temporary file's random one: that would start the JVM's
     * SecureRandom, 10 ms of a start, for nothing. What a killed start left there goes first (a
     * link itself, never what it points to), and the new file is made only if nothing is there.
     */
    static void prepareState(Path stateDir) throws IOException {
        try {
            Files.createDirectories(stateDir);
            Path check = stateDir.resolve(".hearth-write-check");
            Files.deleteIfExists(check);
            Files.newByteChannel(check, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE).close();
            Files.delete(check);
        } catch (IOException e) {
            throw new IOException("state directory is not usable: " + describe(e), e);
        }
    }

    /**
     * Refuses a pool directory that is not a directory, or that does not exist and may not be made;
     * the pool itself makes one that may be (with the modes it wants).
     */
    static void checkPool(PoolSpec spec, Path stateDir) throws IOException {
        if (spec.file().isEmpty()) {
            return; // an lvm pool's state directory is under the state directory, made by the pool
        }
        Path dir = spec.file().get().directory();
        String pool = "pool '" + spec.config().name() + "': ";
        if (Files.isDirectory(dir)) {
            return;
        }
        if (Files.isSymbolicLink(dir)) {
            throw new IOException(pool + dir + " is a symbolic link to " + Files.readSymbolicLink(dir)
                    + ", which is not a directory");
        }
        if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(pool + dir + " is not a directory but a " + kindOf(dir));
        }
        if (spec.create() || dir.startsWith(stateDir)) {
            return;
        }
        throw new IOException(pool + "directory " + dir + " does not exist. If it belongs on a disk of its own, "
                + "is that disk mounted? Make the directory there, or add create=true to the pool spec to have "
                + "hearth make it");
    }

    private static String kindOf(Path file) {
        if (Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            return "regular file";
        }
        return "special file (device, socket or pipe)";
    }

    /**
     * The reason in an I/O failure: the JDK's file exceptions carry only the path for the common
     * errors (AccessDeniedException's message is the path and nothing else).
     */
    static String describe(IOException e) {
        if (e instanceof FileSystemException fs && fs.getReason() == null) {
            String reason = switch (fs) {
                case AccessDeniedException _ -> "permission denied";
                case NoSuchFileException _ -> "no such file or directory";
                case FileAlreadyExistsException _ -> "exists and is not a directory";
                case NotDirectoryException _ -> "not a directory";
                case DirectoryNotEmptyException _ -> "directory not empty";
                default -> fs.getClass().getSimpleName();
            };
            return fs.getFile() + (fs.getOtherFile() == null ? "" : " -> " + fs.getOtherFile()) + ": " + reason;
        }
        return e.getMessage();
    }
}
