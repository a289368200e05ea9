package dev.hearth.storage.mount;

import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Checks a staging or target path from a request before anything touches it: absolute,
 * already normalized, and with no symbolic link anywhere along it, so a path cannot be made
 * to lead the driver's mounts out of where the kubelet meant them to go.
 */
public final class NodePath {

    /** Linux's PATH_MAX, which counts the terminating NUL: no system call takes a longer path. */
    static final int PATH_MAX = 4096;
    /** Linux's NAME_MAX: no filesystem hearth makes takes a longer name. */
    static final int NAME_MAX = 255;

    private NodePath() {}

    /**
     * The path a request field names, if it can name one at all: present, free of NUL, and within
     * the kernel's limits. Says nothing of where it leads; {@link #check} does.
     */
    public static Path of(String raw, String field) {
        if (raw == null || raw.isEmpty()) {
            throw new StorageException.InvalidArgument(field + " is required");
        }
        Path path;
        try {
            path = Path.of(raw);
        } catch (InvalidPathException e) {
            throw new StorageException.InvalidArgument(field + " " + Quoted.of(raw) + " is not a valid path: "
                    + e.getReason());
        }
        int bytes = raw.getBytes(StandardCharsets.UTF_8).length;
        if (bytes >= PATH_MAX) {
            throw new StorageException.InvalidArgument(field + " " + Quoted.of(raw) + " is " + bytes
                    + " bytes long; a path has at most " + (PATH_MAX - 1));
        }
        for (Path name : path) {
            int nameBytes = name.toString().getBytes(StandardCharsets.UTF_8).length;
            if (nameBytes > NAME_MAX) {
                throw new StorageException.InvalidArgument(field + " " + Quoted.of(raw) + " has a name of "
                        + nameBytes + " bytes; a name in a path has at most " + NAME_MAX);
            }
        }
        return path;
    }

    public static Path check(String raw, String field) {
        Path path = of(raw, field);
        if (!path.isAbsolute() || !path.normalize().toString().equals(raw)) {
            throw new StorageException.InvalidArgument(field + " " + Quoted.of(raw)
                    + " must be an absolute, normalized path");
        }
        for (Path step = path; step != null; step = step.getParent()) {
            if (Files.isSymbolicLink(step)) {
                throw new StorageException.InvalidArgument(field + " " + Quoted.of(raw)
                        + " passes through the symbolic link " + Quoted.of(step));
            }
        }
        Path existing = path;
        while (existing != null && !Files.exists(existing, LinkOption.NOFOLLOW_LINKS)) {
            existing = existing.getParent();
        }
        try {
            if (existing != null && !existing.toRealPath().equals(existing)) {
                throw new StorageException.InvalidArgument(field + " " + Quoted.of(raw) + " does not resolve to itself");
            }
        } catch (IOException e) {
            throw new StorageException.InvalidArgument(field + " " + Quoted.of(raw) + " cannot be resolved: "
                    + e.getMessage());
        }
        return path;
    }
}
