package dev.hearth.linux;

/** A run of a file's bytes, {@code [offset, offset + length)}. */
public record Extent(long offset, long length) {

    public Extent {
        if (offset < 0 || length < 0) {
            throw new IllegalArgumentException("extent with negative offset or length: " + offset + "+" + length);
        }
    }

    /** The offset just past the extent. */
    public long end() {
        return offset + length;
    }
}
