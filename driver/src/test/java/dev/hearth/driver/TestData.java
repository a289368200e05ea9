package dev.hearth.driver;

import dev.hearth.linux.FileSystems;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Random;

/** What a pod writes into a volume and reads back: files made durable with fsync, and their digests. */
final class TestData {

    private TestData() {}

    static byte[] random(int length, long seed) {
        byte[] bytes = new byte[length];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    /** Writes (creating or replacing) the file and fsyncs it; returns the SHA-256 of what was written. */
    static String writeSynced(Path file, byte[] content) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buffer = ByteBuffer.wrap(content);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
        }
        return sha256(content);
    }

    static String writeSynced(Path file, String text) throws IOException {
        return writeSynced(file, text.getBytes(StandardCharsets.UTF_8));
    }

    static String sha256(Path file) throws IOException {
        MessageDigest digest = sha256();
        try (InputStream in = new DigestInputStream(Files.newInputStream(file), digest)) {
            in.transferTo(java.io.OutputStream.nullOutputStream());
        }
        return HexFormat.of().formatHex(digest.digest());
    }

    static String sha256(byte[] content) {
        return HexFormat.of().formatHex(sha256().digest(content));
    }

    /** The size of the filesystem mounted at {@code path}, as df shows it. */
    static long filesystemBytes(Path path) throws IOException {
        return FileSystems.statvfs(path).totalBytes();
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every JDK has SHA-256", e);
        }
    }
}
