package dev.hearth.driver.server;

import dev.hearth.linux.Posix;
import java.io.IOException;
import java.net.ConnectException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.logging.Logger;

/**
 * The filesystem side of a listening unix socket: making room for it, binding it so that it is
 * never world-writable, and removing it again. Whoever can connect to the socket can create and
 * delete volumes, so only owner and group may.
 */
final class SocketFile {

    private static final Logger LOG = Logger.getLogger(SocketFile.class.getName());

    /** S_IFMT and S_IFSOCK from sys/stat.h, as reported by the "unix:mode" attribute. */
    private static final int S_IFMT = 0170000;
    private static final int S_IFSOCK = 0140000;

    /** Clears x for everyone and all of "other", so bind(2) creates the socket as 0660 at most. */
    private static final int BIND_UMASK = 0117;

    static final Set<PosixFilePermission> SOCKET_PERMISSIONS = PosixFilePermissions.fromString("rw-rw----");
    static final Set<PosixFilePermission> DIRECTORY_PERMISSIONS = PosixFilePermissions.fromString("rwxr-x---");

    private final Path path;

    SocketFile(Path path) {
        this.path = path;
    }

    Path path() {
        return path;
    }

    /**
     * Makes the path free for a new socket: creates missing parent directories, removes a socket
     * left behind by a process that died without cleaning up, and refuses everything else.
     */
    void prepare() throws IOException {
        Path parent = path.getParent();
        if (parent != null && !Files.isDirectory(parent)) {
            Files.createDirectories(parent, PosixFilePermissions.asFileAttribute(DIRECTORY_PERMISSIONS));
        }
        Integer mode;
        try {
            mode = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return;
        }
        if ((mode & S_IFMT) != S_IFSOCK) {
            // Never delete what is not ours to delete: a mistyped flag must not cost someone a file.
            throw new IOException(path + " exists and is not a socket; refusing to replace it");
        }
        if (answers()) {
            throw new IOException("another process serves " + path + "; is a second hearth running?");
        }
        LOG.info(() -> "removing stale socket " + path);
        Files.deleteIfExists(path);
    }

    private boolean answers() throws IOException {
        try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            probe.connect(UnixDomainSocketAddress.of(path));
            return true;
        } catch (ConnectException e) {
            // ECONNREFUSED: the socket file outlived its listener.
            return false;
        } catch (IOException e) {
            throw new IOException("cannot tell whether " + path + " is in use: " + e.getMessage(), e);
        }
    }

    /**
     * Runs the bind under a umask that keeps the socket from ever existing with looser permissions,
     * then sets them explicitly, since the umask only takes bits away from what netty asks for. The
     * umask is process-wide: this runs once, at startup, before anything else creates files.
     */
    <E extends Exception> void bind(ThrowingRunnable<E> bind) throws E, IOException {
        int previous = Posix.umask(BIND_UMASK);
        try {
            bind.run();
        } finally {
            Posix.umask(previous);
        }
        Files.setPosixFilePermissions(path, SOCKET_PERMISSIONS);
    }

    /** Removes the socket if it is still there and still a socket. */
    void delete() {
        try {
            Integer mode = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
            if ((mode & S_IFMT) == S_IFSOCK) {
                Files.deleteIfExists(path);
            }
        } catch (NoSuchFileException e) {
            // Netty removes the file itself when it closes the listening channel.
        } catch (IOException e) {
            LOG.warning(() -> "could not remove socket " + path + ": " + e);
        }
    }

    @FunctionalInterface
    interface ThrowingRunnable<E extends Exception> {
        void run() throws E;
    }
}
