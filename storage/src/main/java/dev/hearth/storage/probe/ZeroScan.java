package dev.hearth.storage.probe;

import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.function.LongConsumer;

/**
 * The zero checks of {@link ZeroCheck}: which byte ranges each reads, in ascending order, and the
 * first non-zero byte among them. Ranges are read through one buffer, 64 KiB for the edges and
 * samples, {@value #CHUNK_BYTES} bytes for a full scan, so memory stays bounded whatever the
 * device's size.
 */
final class ZeroScan {

    static final int SAMPLES = 256;
    static final int SAMPLE_BYTES = 64 << 10;
    static final int CHUNK_BYTES = 1 << 20;
    private static final int ALIGNMENT = 4096;
    private static final int PROGRESS_STEPS = 100;

    private ZeroScan() {}

    /** A range of the device, {@code [from, to)}. */
    record Range(long from, long to) {
        long length() {
            return to - from;
        }
    }

    /** What {@code check} reads of a device {@code size} bytes long, in ascending order, none overlapping. */
    static List<Range> ranges(ZeroCheck check, long size) {
        long headEnd = Math.min(size, DeviceBytes.REGION);
        // The tail starts where the head ends on small devices so the two never overlap.
        long tailStart = Math.max(headEnd, size - DeviceBytes.REGION);
        List<Range> ranges = new ArrayList<>();
        switch (check) {
            case FULL -> ranges.add(new Range(0, size));
            case EDGES -> {
                ranges.add(new Range(0, headEnd));
                ranges.add(new Range(tailStart, size));
            }
            case SAMPLED -> {
                ranges.add(new Range(0, headEnd));
                ranges.addAll(samples(headEnd, tailStart));
                ranges.add(new Range(tailStart, size));
            }
        }
        return ranges.stream().filter(r -> r.length() > 0).toList();
    }

    /** Offset of the first non-zero byte among those {@code check} reads, if any, telling {@code progress} how far it is. */
    static OptionalLong firstNonZero(DeviceBytes device, ZeroCheck check, LongConsumer progress) throws IOException {
        List<Range> ranges = ranges(check, device.size());
        long total = ranges.stream().mapToLong(Range::length).sum();
        MemorySegment buffer = device.buffer(check == ZeroCheck.FULL ? CHUNK_BYTES : SAMPLE_BYTES);
        long step = Math.max(buffer.byteSize(), total / PROGRESS_STEPS);
        long done = 0;
        long reported = 0;
        for (Range range : ranges) {
            for (long from = range.from(); from < range.to(); ) {
                long to = Math.min(range.to(), from + step);
                OptionalLong nonZero = device.firstNonZero(buffer, from, to);
                if (nonZero.isPresent()) {
                    return nonZero;
                }
                done += to - from;
                from = to;
                if (done - reported >= step && done < total) {
                    progress.accept(done);
                    reported = done;
                }
            }
        }
        progress.accept(done);
        return OptionalLong.empty();
    }

    /** The samples between the edges, or the whole of that middle if the samples would cover it anyway. */
    private static List<Range> samples(long from, long to) {
        long middle = to - from;
        if (middle <= (long) SAMPLES * SAMPLE_BYTES) {
            return List.of(new Range(from, to));
        }
        long stride = (middle - SAMPLE_BYTES) / (SAMPLES - 1);
        List<Range> samples = new ArrayList<>(SAMPLES);
        for (int i = 0; i < SAMPLES; i++) {
            long start = from + Math.floorDiv(stride * i, ALIGNMENT) * ALIGNMENT;
            samples.add(new Range(start, start + SAMPLE_BYTES));
        }
        return samples;
    }
}
