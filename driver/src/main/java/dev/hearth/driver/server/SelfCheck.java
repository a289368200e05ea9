package dev.hearth.driver.server;

import java.io.EOFException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One gRPC call over a fresh connection to a unix socket, spoken in raw HTTP/2: the client
 * preface, a call to a method nobody serves, and the server's answer to it. The server runs it
 * against itself before its socket gets its public name ({@link GrpcServer}), so that the code a
 * connection needs first (accepting, the transport's reader, grpc's HTTP/2 handshake, a call's headers
 * and trailers) has run once before a sidecar connects.
 *
 * <p>Why it matters: the sidecars' gRPC library gives a new connection about one second (its
 * backoff of 1 s ± 20%, with no minimum connect timeout set) to get the server's HTTP/2 preface,
 * and counts a connection that made it past connect(2) but not the handshake as a lost one, on
 * which they exit. A JVM runs that code cold on the first connection: 180 ms on an idle machine
 * here without a class-data archive, 250-680 ms with three drivers starting beside two busy
 * CPUs, and past the second in the e2e once a warm-up competed for the CPU.
 *
 * <p>It speaks raw HTTP/2 rather than through grpc's client, whose classes a node plugin would
 * otherwise load for this one call. It reads frame headers only, never the HPACK in them: what it
 * checks is that a complete answer (trailers that end the stream) comes back.
 */
final class SelfCheck {

    /** A method no service of ours has: the server answers UNIMPLEMENTED and calls none of our code. */
    static final String METHOD = "/hearth.SelfCheck/Connect";

    private static final byte[] CLIENT_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final int FRAME_HEADER = 9;
    private static final int DATA = 0x0;
    private static final int HEADERS = 0x1;
    private static final int RST_STREAM = 0x3;
    private static final int SETTINGS = 0x4;
    private static final int GOAWAY = 0x7;
    private static final int END_STREAM = 0x1;
    private static final int ACK = 0x1;
    private static final int END_HEADERS = 0x4;
    private static final int STREAM = 1;
    /** Far above anything the check's answer needs; a bigger frame means the peer is not a gRPC server. */
    private static final int MAX_FRAME = 1 << 14;

    private SelfCheck() {}

    /**
     * Connects to {@code socket}, makes the call, and returns once the server has answered it.
     *
     * @throws IOException when the server does not answer in full within {@code timeout}, resets the
     *     call, closes the connection, or speaks something other than HTTP/2
     */
    static void run(Path socket, Duration timeout) throws IOException {
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            AtomicBoolean timedOut = new AtomicBoolean();
            // A blocking read has no timeout of its own; closing the channel ends it.
            Thread watchdog = Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(timeout);
                    timedOut.set(true);
                    channel.close();
                } catch (InterruptedException | IOException e) {
                    // Answered in time, or closed already.
                }
            });
            try {
                channel.connect(UnixDomainSocketAddress.of(socket));
                channel.write(ByteBuffer.wrap(request()));
                awaitAnswer(channel);
                channel.write(ByteBuffer.wrap(goAway()));
            } catch (ClosedChannelException e) {
                throw timedOut.get() ? new IOException("no answer on " + socket + " within " + timeout, e) : e;
            } finally {
                watchdog.interrupt();
            }
        }
    }

    /** Reads frames until the call's stream ends; acknowledges the server's settings on the way. */
    private static void awaitAnswer(SocketChannel channel) throws IOException {
        boolean settings = false;
        while (true) {
            ByteBuffer header = readFully(channel, FRAME_HEADER);
            int length = (header.getShort() & 0xffff) << 8 | header.get() & 0xff;
            int type = header.get() & 0xff;
            int flags = header.get() & 0xff;
            int stream = header.getInt() & 0x7fffffff;
            if (length > MAX_FRAME) {
                throw new IOException("not an HTTP/2 server: a frame of " + length + " bytes");
            }
            if (!settings && type != SETTINGS) {
                throw new IOException("not an HTTP/2 server: its first frame is of type " + type + ", not SETTINGS");
            }
            readFully(channel, length);
            switch (type) {
                case SETTINGS -> {
                    if ((flags & ACK) == 0) {
                        settings = true;
                        channel.write(ByteBuffer.wrap(frame(SETTINGS, ACK, 0, new byte[0])));
                    }
                }
                case HEADERS, DATA -> {
                    if (stream == STREAM && (flags & END_STREAM) != 0) {
                        return;
                    }
                }
                case RST_STREAM -> throw new IOException("the server reset the call");
                case GOAWAY -> throw new IOException("the server closed the connection (GOAWAY)");
                default -> {
                    // WINDOW_UPDATE, PING and the like: nothing the check needs.
                }
            }
        }
    }

    static ByteBuffer readFully(SocketChannel channel, int bytes) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(bytes);
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                throw new EOFException("the server closed the connection before answering");
            }
        }
        return buffer.flip();
    }

    /** The preface, empty SETTINGS, and the call: headers only, ending the stream (no message). */
    static byte[] request() {
        ByteBuffer headers = ByteBuffer.allocate(256);
        headers.put((byte) 0x83); // :method POST, static table entry 3
        headers.put((byte) 0x86); // :scheme http, entry 6
        literal(headers, 0x04, METHOD); // :path, name from entry 4, not indexed
        literal(headers, 0x01, "localhost"); // :authority, entry 1
        headers.put((byte) 0x0f).put((byte) (31 - 15)); // content-type, entry 31: a 4-bit prefix, then the rest
        string(headers, "application/grpc");
        headers.put((byte) 0x00); // te: a literal name, not indexed
        string(headers, "te");
        string(headers, "trailers");
        byte[] block = new byte[headers.flip().remaining()];
        headers.get(block);
        byte[] preface = preface();
        return ByteBuffer.allocate(preface.length + FRAME_HEADER + block.length)
                .put(preface)
                .put(frame(HEADERS, END_HEADERS | END_STREAM, STREAM, block))
                .array();
    }

    /** What a gRPC client sends first on a connection: the HTTP/2 client preface and an empty SETTINGS. */
    static byte[] preface() {
        return ByteBuffer.allocate(CLIENT_PREFACE.length + FRAME_HEADER)
                .put(CLIENT_PREFACE)
                .put(frame(SETTINGS, 0, 0, new byte[0]))
                .array();
    }

    /** GOAWAY, no error: the check's connection ends the way a client's should. */
    private static byte[] goAway() {
        return frame(GOAWAY, 0, 0, new byte[8]);
    }

    private static void literal(ByteBuffer block, int nameIndex, String value) {
        block.put((byte) nameIndex);
        string(block, value);
    }

    /** An HPACK string, not Huffman-coded; every string here is under 127 bytes, one length byte. */
    private static void string(ByteBuffer block, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.US_ASCII);
        block.put((byte) bytes.length).put(bytes);
    }

    static byte[] frame(int type, int flags, int stream, byte[] payload) {
        return ByteBuffer.allocate(FRAME_HEADER + payload.length)
                .put((byte) (payload.length >>> 16))
                .putShort((short) payload.length)
                .put((byte) type)
                .put((byte) flags)
                .putInt(stream)
                .put(payload)
                .array();
    }
}
