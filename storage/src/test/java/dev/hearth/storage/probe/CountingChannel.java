package dev.hearth.storage.probe;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;

/** A file channel that counts the bytes read through it, to see how much of a device a probe looks at. */
final class CountingChannel extends FileChannel {

    private final FileChannel inner;
    private long bytesRead;

    CountingChannel(FileChannel inner) {
        this.inner = inner;
    }

    long bytesRead() {
        return bytesRead;
    }

    private int counted(int n) {
        bytesRead += Math.max(n, 0);
        return n;
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        return counted(inner.read(dst));
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
        return counted(inner.read(dst, position));
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
        long n = inner.read(dsts, offset, length);
        bytesRead += Math.max(n, 0);
        return n;
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        return inner.write(src);
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        return inner.write(srcs, offset, length);
    }

    @Override
    public int write(ByteBuffer src, long position) throws IOException {
        return inner.write(src, position);
    }

    @Override
    public long position() throws IOException {
        return inner.position();
    }

    @Override
    public FileChannel position(long newPosition) throws IOException {
        inner.position(newPosition);
        return this;
    }

    @Override
    public long size() throws IOException {
        return inner.size();
    }

    @Override
    public FileChannel truncate(long size) throws IOException {
        inner.truncate(size);
        return this;
    }

    @Override
    public void force(boolean metaData) throws IOException {
        inner.force(metaData);
    }

    @Override
    public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
        throw new UnsupportedOperationException("not counted");
    }

    @Override
    public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
        return inner.transferFrom(src, position, count);
    }

    @Override
    public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
        throw new UnsupportedOperationException("not counted");
    }

    @Override
    public FileLock lock(long position, long size, boolean shared) throws IOException {
        return inner.lock(position, size, shared);
    }

    @Override
    public FileLock tryLock(long position, long size, boolean shared) throws IOException {
        return inner.tryLock(position, size, shared);
    }

    @Override
    protected void implCloseChannel() throws IOException {
        inner.close();
    }
}
