package dev.hearth.storage.probe;

import static dev.hearth.storage.probe.Images.MIB;
import static dev.hearth.storage.probe.Images.sparse;
import static dev.hearth.storage.probe.Images.write;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The three zero checks: what each reads, what it finds, and the progress it reports. */
class ZeroCheckTest {

    private static final long SIZE = 1L << 30;

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(ZeroCheck.class)
    void aSparseDeviceIsEmptyUnderEveryCheck(ZeroCheck check) throws IOException {
        Path file = sparse(dir, "blank", SIZE);

        assertThat(probe(file, check, new ArrayList<>())).isEqualTo(ProbeResult.EMPTY);
    }

    @Test
    void edgesIsWhatTheTwoArgumentProbeDoes() throws IOException {
        Path file = sparse(dir, "middle", SIZE);
        write(file, SIZE / 2, "data");

        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            assertThat(SignatureProbe.probe(channel, SIZE)).isEqualTo(ProbeResult.EMPTY);
        }
        assertThat(probe(file, ZeroCheck.EDGES, new ArrayList<>())).isEqualTo(ProbeResult.EMPTY);
    }

    @Test
    void sampledFindsDataAtASample() throws IOException {
        Path file = sparse(dir, "sampled", SIZE);
        ZeroScan.Range sample = ZeroScan.ranges(ZeroCheck.SAMPLED, SIZE).get(100);
        long offset = sample.from() + 1000;
        write(file, offset, "data");

        assertThat(probe(file, ZeroCheck.SAMPLED, new ArrayList<>())).isEqualTo(notEmptyAt(offset));
    }

    @Test
    void sampledDoesNotSeeDataBetweenSamples() throws IOException {
        // The contract, not a wish: a small run between two samples is what FULL is for.
        Path file = sparse(dir, "between", SIZE);
        List<ZeroScan.Range> ranges = ZeroScan.ranges(ZeroCheck.SAMPLED, SIZE);
        long between = ranges.get(100).to() + 4096;
        assertThat(between).isLessThan(ranges.get(101).from());
        write(file, between, "data");

        assertThat(probe(file, ZeroCheck.SAMPLED, new ArrayList<>())).isEqualTo(ProbeResult.EMPTY);
        assertThat(probe(file, ZeroCheck.FULL, new ArrayList<>())).isEqualTo(notEmptyAt(between));
    }

    @Test
    void samplesAreSpreadEvenlyAlignedAndBetweenTheEdges() {
        long size = (1L << 40) + 12345 * 512; // 1 TiB and an odd tail
        List<ZeroScan.Range> ranges = ZeroScan.ranges(ZeroCheck.SAMPLED, size);

        assertThat(ranges).hasSize(ZeroScan.SAMPLES + 2);
        assertThat(ranges.getFirst()).isEqualTo(new ZeroScan.Range(0, MIB));
        assertThat(ranges.getLast()).isEqualTo(new ZeroScan.Range(size - MIB, size));
        List<ZeroScan.Range> samples = ranges.subList(1, ranges.size() - 1);
        assertThat(samples.getFirst().from()).isEqualTo(MIB);
        assertThat(samples).allSatisfy(s -> {
            assertThat(s.from() % 4096).isZero();
            assertThat(s.length()).isEqualTo(ZeroScan.SAMPLE_BYTES);
        });
        long stride = (size - 2 * MIB) / (ZeroScan.SAMPLES - 1);
        for (int i = 1; i < samples.size(); i++) {
            long gap = samples.get(i).from() - samples.get(i - 1).from();
            assertThat(gap).isBetween(stride - 4096, stride + 4096);
        }
        assertThat(samples.getLast().to()).isBetween(size - MIB - stride / 100, size - MIB);
    }

    @ParameterizedTest
    @ValueSource(longs = {1, MIB, 2 * MIB, 2 * MIB + 4096, 18 * MIB})
    void sampledReadsASmallDeviceWhole(long size) {
        List<ZeroScan.Range> ranges = ZeroScan.ranges(ZeroCheck.SAMPLED, size);

        assertThat(ranges.stream().mapToLong(ZeroScan.Range::length).sum()).isEqualTo(size);
        for (int i = 1; i < ranges.size(); i++) {
            assertThat(ranges.get(i).from()).isEqualTo(ranges.get(i - 1).to());
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {2 * MIB, 300 * MIB + 17, SIZE - 1})
    void fullFindsTheFirstNonZeroByteAnywhere(long offset) throws IOException {
        Path file = sparse(dir, "full", SIZE);
        write(file, offset, new byte[] {1});
        write(file, SIZE - 3 * MIB, new byte[] {1}); // a later one does not hide the first

        ProbeResult expected = notEmptyAt(Math.min(offset, SIZE - 3 * MIB));
        assertThat(probe(file, ZeroCheck.FULL, new ArrayList<>())).isEqualTo(expected);
    }

    @Test
    void fullReadsEveryByteOnceAndReportsProgressAboutEveryPercent() throws IOException {
        Path file = sparse(dir, "progress", SIZE);
        List<Long> progress = new ArrayList<>();

        try (CountingChannel channel = new CountingChannel(FileChannel.open(file, StandardOpenOption.READ))) {
            assertThat(SignatureProbe.probe(channel, SIZE, ZeroCheck.FULL, progress::add))
                    .isEqualTo(ProbeResult.EMPTY);
            // The signature detectors' windows add a little to the one full pass.
            assertThat(channel.bytesRead()).isBetween(SIZE, SIZE + MIB);
        }
        assertThat(progress).isSorted().doesNotHaveDuplicates().hasSizeBetween(90, 101);
        assertThat(progress.getLast()).isEqualTo(SIZE);
    }

    @Test
    void sampledReportsWhatItRead() throws IOException {
        Path file = sparse(dir, "sampled-progress", SIZE);
        List<Long> progress = new ArrayList<>();

        assertThat(probe(file, ZeroCheck.SAMPLED, progress)).isEqualTo(ProbeResult.EMPTY);
        assertThat(progress).isSorted().hasSizeLessThanOrEqualTo(101);
        assertThat(progress.getLast()).isEqualTo(2 * MIB + ZeroScan.SAMPLES * (long) ZeroScan.SAMPLE_BYTES);
    }

    @Test
    void aSignatureSettlesTheVerdictWithoutAZeroCheck() throws IOException {
        Path file = sparse(dir, "signed", SIZE);
        write(file, 4096 - 10, "SWAPSPACE2");
        List<Long> progress = new ArrayList<>();

        try (CountingChannel channel = new CountingChannel(FileChannel.open(file, StandardOpenOption.READ))) {
            assertThat(SignatureProbe.probe(channel, SIZE, ZeroCheck.FULL, progress::add))
                    .isInstanceOf(ProbeResult.Signed.class);
            assertThat(channel.bytesRead()).isLessThan(MIB);
        }
        assertThat(progress).isEmpty();
    }

    private static ProbeResult notEmptyAt(long offset) {
        return new ProbeResult.NotEmpty("no known signature, but non-zero data at offset " + offset);
    }

    private static ProbeResult probe(Path file, ZeroCheck check, List<Long> progress) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            return SignatureProbe.probe(channel, Images.size(file), check, progress::add);
        }
    }
}
