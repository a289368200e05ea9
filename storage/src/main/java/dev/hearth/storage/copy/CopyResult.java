package dev.hearth.storage.copy;

import java.time.Duration;
import java.util.Objects;

/**
 * How an image copy was made.
 *
 * @param bytesCopied data bytes read from the source and written to the target: the source's data
 *     extents for a {@link Method#SPARSE_COPY}, 0 for a {@link Method#REFLINK}, which shares the
 *     source's blocks instead of copying them
 */
public record CopyResult(Method method, long bytesCopied, Duration elapsed) {

    public enum Method {
        /** FICLONE: the target shares the source's blocks copy-on-write; instant and free of space. */
        REFLINK,
        /** Only the source's data extents were copied; its holes stayed holes in the target. */
        SPARSE_COPY
    }

    public CopyResult {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(elapsed, "elapsed");
        if (bytesCopied < 0) {
            throw new IllegalArgumentException("negative bytes copied: " + bytesCopied);
        }
    }
}
