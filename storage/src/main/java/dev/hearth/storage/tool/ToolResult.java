package dev.hearth.storage.tool;

import java.time.Duration;
import java.util.Objects;

/**
 * What an external tool did. {@code stdout} is always complete (the runner refuses output it
 * would have to cut); {@code stderr} is diagnostic only and may hold just the first part.
 */
public record ToolResult(int exitCode, String stdout, String stderr, Duration elapsed) {

    public ToolResult {
        Objects.requireNonNull(stdout, "stdout");
        Objects.requireNonNull(stderr, "stderr");
        Objects.requireNonNull(elapsed, "elapsed");
    }

    public boolean succeeded() {
        return exitCode == 0;
    }
}
