package dev.hearth.storage.probe;

import static dev.hearth.storage.probe.Images.MIB;
import static dev.hearth.storage.probe.Images.probe;
import static dev.hearth.storage.probe.Images.sparse;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.storage.probe.Signature.Kind;
import java.io.IOException;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** ZFS members built from the documented label layout ({@link ZfsImages}): no zfs tool runs here. */
class ZfsLabelsTest {

    private static final long SIZE = 64 * MIB + 300 * 1024; // not a multiple of a label: the end ones align down

    @TempDir
    Path dir;

    @Test
    void labelsAreTwoAtTheStartAndTwoAtTheEndAlignedDownTo256Kib() {
        assertThat(ZfsLabels.labelOffsets(SIZE)).containsExactly(
                0, 256 * 1024, 64 * MIB + 256 * 1024 - 512 * 1024, 64 * MIB + 256 * 1024 - 256 * 1024);
    }

    @ParameterizedTest
    @ValueSource(strings = {"LITTLE_ENDIAN", "BIG_ENDIAN"})
    void aMemberWrittenByEitherByteOrderIsZfs(String orderName) {
        ByteOrder order = orderName.equals("BIG_ENDIAN") ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
        Path file = sparse(dir, "member", SIZE);
        ZfsImages.writeLabels(file, SIZE, order, true, 0, 1, 2, 3);

        assertThat(probe(file)).isEqualTo(new ProbeResult.Signed(List.of(
                new Signature(Kind.VOLUME_MANAGER, "zfs_member", ZfsImages.uberblockOffset(SIZE, 0)))));
    }

    @Test
    void theLabelsAtTheEndAloneAreEnough() {
        Path file = sparse(dir, "head-wiped", SIZE);
        ZfsImages.writeLabels(file, SIZE, ByteOrder.LITTLE_ENDIAN, false, 3);

        assertThat(probe(file)).isEqualTo(new ProbeResult.Signed(List.of(
                new Signature(Kind.VOLUME_MANAGER, "zfs_member", ZfsImages.uberblockOffset(SIZE, 3)))));
    }

    @Test
    void aDeviceBelowZfsMinimumIsNoMember() {
        long size = ZfsLabels.MINIMUM_DEVICE - 1024 * 1024;
        Path file = sparse(dir, "small", size);
        ZfsImages.writeLabels(file, size, ByteOrder.LITTLE_ENDIAN, false, 0);

        assertThat(probe(file)).isInstanceOf(ProbeResult.NotEmpty.class);
    }

    @Test
    void theMagicOffASlotBoundaryIsNoUberblock() {
        Path file = sparse(dir, "unaligned", SIZE);
        Images.write(file, ZfsLabels.UBERBLOCK_RING + 8, new byte[] {0x0c, (byte) 0xb1, (byte) 0xba, 0, 0, 0, 0, 0});

        assertThat(probe(file)).isEqualTo(new ProbeResult.NotEmpty(
                "no known signature, but non-zero data at offset " + (ZfsLabels.UBERBLOCK_RING + 8)));
    }

    @Test
    void anEmptyDeviceIsNotSearchedForLabels() throws IOException {
        Path file = sparse(dir, "blank", SIZE);

        try (CountingChannel channel = new CountingChannel(FileChannel.open(file, StandardOpenOption.READ))) {
            assertThat(SignatureProbe.probe(channel, SIZE)).isEqualTo(ProbeResult.EMPTY);
            // The edges, the detectors' windows and the outlying headers' sectors; not 4 rings of 128 KiB more.
            assertThat(channel.bytesRead()).isLessThan(2 * MIB + 200 * 1024);
        }
    }
}
