package dev.hearth.storage.tool;

import dev.hearth.linux.ChildProcess;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** What a tool wrote on one stream: at most {@code limit} bytes kept, all of them counted. */
final class Captured implements ChildProcess.Output {

    private final int limit;
    private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
    private long total;

    Captured(int limit) {
        this.limit = limit;
    }

    @Override
    public synchronized void accept(byte[] chunk, int length) {
        kept.write(chunk, 0, Math.min(limit - kept.size(), length));
        total += length;
    }

    synchronized boolean overflowed() {
        return total > limit;
    }

    synchronized String text() {
        return kept.toString(StandardCharsets.UTF_8);
    }
}
