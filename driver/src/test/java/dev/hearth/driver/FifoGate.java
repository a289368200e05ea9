package dev.hearth.driver;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Holds a driver call inside its work, deterministically and without a hook in the driver: the
 * file the call is about to read (a volume's metadata) becomes a named pipe. The call blocks in
 * open(2) until the test opens the writing end, which tells the test the call is now in progress;
 * it then stays blocked in read(2) until {@link #release()} feeds it the file's old content.
 */
final class FifoGate implements AutoCloseable {

    private final Path file;
    private final byte[] content;
    private final CompletableFuture<FileChannel> writer = new CompletableFuture<>();
    private boolean restored;

    private FifoGate(Path file, byte[] content) {
        this.file = file;
        this.content = content;
    }

    /** Replaces {@code file} with a named pipe that will hand out the file's current content. */
    static FifoGate replace(Path file) throws IOException, InterruptedException {
        byte[] content = Files.readAllBytes(file);
        Files.delete(file);
        Process mkfifo = new ProcessBuilder("mkfifo", "-m", "600", file.toString()).redirectErrorStream(true).start();
        String output = new String(mkfifo.getInputStream().readAllBytes());
        if (mkfifo.waitFor() != 0) {
            Files.write(file, content);
            throw new IOException("mkfifo " + file + " failed: " + output);
        }
        FifoGate gate = new FifoGate(file, content);
        Thread.ofVirtual().start(() -> {
            try {
                gate.writer.complete(FileChannel.open(file, StandardOpenOption.WRITE));
            } catch (IOException | RuntimeException e) {
                gate.writer.completeExceptionally(e);
            }
        });
        return gate;
    }

    /** Waits until a reader has opened the pipe: from then on, the call that reads it is in progress. */
    void awaitReader(Duration timeout) throws IOException, InterruptedException {
        try {
            writer.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("nobody opened " + file + " for reading within " + timeout, e);
        } catch (ExecutionException e) {
            throw new IOException("opening " + file + " for writing", e.getCause());
        }
    }

    /** Puts the plain file back for later readers and lets the blocked reader finish with the old content. */
    void release() throws IOException {
        restore();
        try (FileChannel channel = writer.join()) {
            ByteBuffer buffer = ByteBuffer.wrap(content);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        }
    }

    private void restore() throws IOException {
        if (restored) {
            return;
        }
        restored = true;
        Path temp = file.resolveSibling(file.getFileName() + ".restore");
        Files.write(temp, content);
        // The blocked reader keeps the pipe it opened; everyone after it reads the plain file.
        Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** Unblocks everything whatever happened: a failed test must not leave a thread stuck on the pipe. */
    @Override
    public void close() throws IOException {
        if (!writer.isDone()) {
            // Opening the reading end completes the writer's pending open.
            try (FileChannel reader = FileChannel.open(file, StandardOpenOption.READ)) {
                writer.join().close();
            }
        } else if (!writer.isCompletedExceptionally()) {
            writer.join().close();
        }
        restore();
    }
}
