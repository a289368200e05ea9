package dev.hearth.storage.mount;

import dev.hearth.storage.StorageException;
import java.io.IOException;
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

    private NodePath() {}

    public static Path check(String raw, String field) {
        if (raw == null || raw.isEmpty()) {
            throw new StorageException.InvalidArgument(field + " is required");
        }
        Path path;
        try {
            path = Path.of(raw);
        } catch (InvalidPathException e) {
            throw new StorageException.InvalidArgument(field + " '" + raw + "' is not a valid path: " + e.getReason());
        }
        if (!path.isAbsolute() || !path.normalize().toString().equals(raw) || raw.length() > 4096) {
            throw new StorageException.InvalidArgument(field + " '" + raw + "' must be an absolute, normalized path");
        }
        for (Path step = path; step != null; step = step.getParent()) {
            if (Files.isSymbolicLink(step)) {
                throw new StorageException.InvalidArgument(field + " '" + raw + "' passes through the symbolic link "
                        + step);
            }
        }
        Path existing = path;
        while (existing != null && !Files.exists(existing, LinkOption.NOFOLLOW_LINKS)) {
            existing = existing.getParent();
        }
        try {
            if (existing != null && !existing.toRealPath().equals(existing)) {
                throw new StorageException.InvalidArgument(field + " '" + raw + "' does not resolve to itself");
            }
        } catch (IOException e) {
            throw new StorageException.InvalidArgument(field + " '" + raw + "' cannot be resolved: " + e.getMessage());
        }
        return path;
    }
}
