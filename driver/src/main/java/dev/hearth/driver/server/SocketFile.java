package dev.hearth.driver.server;

import dev.hearth.linux.Posix;
import java.io.IOException;
import java.net.ConnectException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;
import java.util.logging.Logger;

/**
 * The filesystem side of a listening unix socket: making room for it, binding it so that it is
 * never world-writable, and removing it again. Whoever can connect to the socket can create and
 * delete volumes, so only owner and group may.
 *
 * <p>The socket is bound under a hidden name of this process's own beside its path ({@link
 * #bindPath()}: {@code .h} and six random characters) and gets its path only by {@link #publish()},
 * a rename: what connects to the path finds either nothing (and retries, as the sidecars do) or a
 * server that has answered a call already ({@link SelfCheck}). A driver killed in between leaves a
 * hidden socket, which the next start removes. The hidden name is short because a unix socket's
 * path has at most 106 bytes here; where even it would be longer than that (a path near the limit with
 * a name under 8 characters), the socket is bound at its path at once.
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

    /** The longest path a socket can be bound at ({@link Endpoint#MAX_UNIX_PATH_BYTES}). */
    static final int MAX_PATH_BYTES = Endpoint.MAX_UNIX_PATH_BYTES;
    /** The hidden names: {@code .h} and six of [0-9a-z]; as long as "csi.sock", so it fits where that does. */
    private static final Pattern STAGING_NAME = Pattern.compile("\\.h[0-9a-z]{6}");

    private final Path path;
    private final Optional<Path> staging;

    SocketFile(Path path) {
        this.path = path;
        // Random, not the pid: in a container every driver is pid 1, and the old one's listener
        // removes its own bound name when it closes.
        StringBuilder name = new StringBuilder(".h");
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int i = 0; i < 6; i++) {
            name.append(Character.forDigit(random.nextInt(36), 36));
        }
        Path hidden = path.resolveSibling(name.toString());
        this.staging = hidden.toString().getBytes(StandardCharsets.UTF_8).length <= MAX_PATH_BYTES
                ? Optional.of(hidden) : Optional.empty();
    }

    Path path() {
        return path;
    }

    /** Where the socket is bound: its hidden name, until {@link #publish()} gives it {@link #path()}. */
    Path bindPath() {
        return staging.orElse(path);
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
        removeStale(path);
        if (parent == null) {
            return;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(
                parent, entry -> STAGING_NAME.matcher(entry.getFileName().toString()).matches())) {
            for (Path entry : entries) {
                // A hidden socket a killed driver left; a file of the name that is not a socket is not ours.
                if (isSocket(entry)) {
                    removeStale(entry);
                }
            }
        }
    }

    /** Removes a socket nobody listens on; refuses one somebody does, and anything else. */
    private static void removeStale(Path socket) throws IOException {
        Integer mode;
        try {
            mode = (Integer) Files.getAttribute(socket, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return;
        }
        if ((mode & S_IFMT) != S_IFSOCK) {
            // Never delete what is not ours to delete: a mistyped flag must not cost someone a file.
            throw new IOException(socket + " exists and is not a socket; refusing to replace it");
        }
        if (answers(socket)) {
            throw new IOException("another process serves " + socket + "; is a second hearth running?");
        }
        LOG.info(() -> "removing stale socket " + socket);
        Files.deleteIfExists(socket);
    }

    private static boolean isSocket(Path path) throws IOException {
        try {
            return ((Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS) & S_IFMT) == S_IFSOCK;
        } catch (NoSuchFileException e) {
            return false;
        }
    }

    private static boolean answers(Path path) throws IOException {
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
     * then sets them explicitly, since the umask only takes bits away from what bind asks for. The
     * umask is process-wide: this runs once, at startup, before anything else creates files.
     */
    <E extends Exception> void bind(ThrowingRunnable<E> bind) throws E, IOException {
        int previous = Posix.umask(BIND_UMASK);
        try {
            bind.run();
        } finally {
            Posix.umask(previous);
        }
        Files.setPosixFilePermissions(bindPath(), SOCKET_PERMISSIONS);
    }

    /**
     * Gives the bound socket its path, by rename(2), so it appears there whole: bound, listening
     * and with its permissions.
     *
     * @throws IOException when something took the path since {@link #prepare()}; it is left alone
     */
    void publish() throws IOException {
        if (staging.isEmpty()) {
            return;
        }
        try {
            // Without REPLACE_EXISTING: the JDK refuses an existing target rather than replace it.
            Files.move(staging.get(), path);
        } catch (FileAlreadyExistsException e) {
            throw new IOException(path + " appeared while this driver started; refusing to replace it", e);
        }
    }

    /** Removes the socket, under either name, if it is still there and still a socket. */
    void delete() {
        deleteHidden();
        delete(path);
    }

    /**
     * Removes the socket under its hidden name, if it is still there: for a start that failed, which
     * must not remove what another process put at the path meanwhile.
     */
    void deleteHidden() {
        staging.ifPresent(SocketFile::delete);
    }

    private static void delete(Path socket) {
        try {
            Integer mode = (Integer) Files.getAttribute(socket, "unix:mode", LinkOption.NOFOLLOW_LINKS);
            if ((mode & S_IFMT) == S_IFSOCK) {
                Files.deleteIfExists(socket);
            }
        } catch (NoSuchFileException e) {
            // Gone already: removed by whoever closed it, or never published.
        } catch (IOException e) {
            LOG.warning(() -> "could not remove socket " + socket + ": " + e);
        }
    }

    @FunctionalInterface
    interface ThrowingRunnable<E extends Exception> {
        void run() throws E;
    }
}
