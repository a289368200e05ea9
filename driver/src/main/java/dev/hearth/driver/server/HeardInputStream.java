package dev.hearth.driver.server;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * A connection's input stream that notes whether the peer has sent anything yet: set by the first
 * byte read, and never cleared. {@link ConnectionLimit} closes a connection that stays silent.
 */
final class HeardInputStream extends FilterInputStream {

    private volatile boolean heard;

    HeardInputStream(InputStream in) {
        super(in);
    }

    /** Whether a byte has been read yet. */
    boolean heard() {
        return heard;
    }

    @Override
    public int read() throws IOException {
        int b = super.read();
        if (b >= 0 && !heard) {
            heard = true;
        }
        return b;
    }

    @Override
    public int read(byte[] bytes, int offset, int length) throws IOException {
        int n = super.read(bytes, offset, length);
        if (n > 0 && !heard) {
            heard = true;
        }
        return n;
    }
}
