package dev.hearth.linux.testing;

import dev.hearth.linux.LinuxException;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.Mounts;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The steps a test takes on the real host to get a disk of its own: a sparse image file, a loop
 * device over it, a mount, and the bytes in them. A step that changes the host registers its undo
 * with the test's {@link Cleanup} as soon as it is done, so a failure half way leaves nothing
 * behind. {@link ScratchFilesystem#mount} puts them together with mkfs.
 */
public final class Scratch {

    public static final long MIB = 1L << 20;

    private Scratch() {}

    /** A new file of {@code size} zero bytes that take no disk space (a hole); an existing one is resized. */
    public static Path sparseFile(Path file, long size) throws IOException {
        resize(file, size);
        return file;
    }

    /** Sets the file's length, creating it if missing; what it gains is a hole, reading as zeros. */
    public static void resize(Path file, long size) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(size);
        }
    }

    /** Attaches {@code file} to a free loop device, detached after the test. */
    public static LoopDevice attach(Cleanup cleanup, Path file, boolean readOnly, boolean directIo)
            throws IOException {
        LoopDevice device = Loop.attach(file, readOnly, directIo);
        cleanup.add(() -> Loop.detach(device));
        return device;
    }

    /** Mounts {@code source} on the directory {@code target}; unmounted after the test unless the test did. */
    public static void mount(Cleanup cleanup, String source, Path target, String type, long flags, String data)
            throws LinuxException {
        Mounts.mount(source, target, type, flags, data);
        cleanup.add(() -> ScratchFilesystem.unmountIfMounted(target));
    }

    /** Writes {@code bytes} at {@code offset} of a file or device and flushes them to its disk. */
    public static void writeAt(Path file, long offset, byte[] bytes) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            while (buffer.hasRemaining()) {
                channel.write(buffer, offset + buffer.position());
            }
            channel.force(true);
        }
    }

    /** The {@code length} bytes at {@code offset} of a file or device; zeros for any past its end. */
    public static byte[] readAt(Path file, long offset, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            while (buffer.hasRemaining() && channel.read(buffer, offset + buffer.position()) >= 0) {
                // keep reading
            }
        }
        return buffer.array();
    }
}
