package dev.hearth.storage.probe;

import static dev.hearth.storage.probe.Images.MIB;
import static dev.hearth.storage.probe.Images.probe;
import static dev.hearth.storage.probe.Images.sparse;
import static dev.hearth.storage.probe.Images.write;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.storage.probe.Signature.Kind;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Formats whose magic alone does not decide, written by hand: checksummed Sun and SGI labels, UDF's
 * recognition sequence, XFS log records, device-mapper targets' metadata. BlkidAgreementTest has
 * the real tools' images of each.
 */
class LessCommonSignaturesTest {

    private static final long SIZE = 64 * MIB;

    @TempDir
    Path dir;

    @Test
    void aSunLabelCountsOnlyWithItsChecksum() {
        Path good = sparse(dir, "sun", SIZE);
        write(good, 0, sunLabel(true));
        Path bad = sparse(dir, "sun-bad", SIZE);
        write(bad, 0, sunLabel(false));

        assertThat(probe(good)).isEqualTo(signed(Kind.PARTITION_TABLE, "sun", 0x1FC));
        assertThat(probe(bad)).isInstanceOf(ProbeResult.NotEmpty.class);
    }

    @Test
    void anSgiLabelCountsOnlyWithItsChecksum() {
        Path good = sparse(dir, "sgi", SIZE);
        write(good, 0, sgiLabel(true));
        Path bad = sparse(dir, "sgi-bad", SIZE);
        write(bad, 0, sgiLabel(false));

        assertThat(probe(good)).isEqualTo(signed(Kind.PARTITION_TABLE, "sgi", 0));
        assertThat(probe(bad)).isInstanceOf(ProbeResult.NotEmpty.class);
    }

    @Test
    void anNsrDescriptorAndAnAnchorMakeUdfWithOrWithoutIso9660() {
        Path udf = sparse(dir, "udf", SIZE);
        write(udf, 0x8001, "BEA01");
        write(udf, 0x8801, "NSR03");
        write(udf, 0x9001, "TEA01");
        udfAnchor(udf, 2048, 256);
        Path bridge = sparse(dir, "bridge", SIZE);
        write(bridge, 0x8001, "CD001");
        write(bridge, 0x8801, "CD001");
        write(bridge, 0x9001, "BEA01");
        write(bridge, 0x9801, "NSR02");
        udfAnchor(bridge, 512, 512);

        assertThat(probe(udf)).isEqualTo(signed(Kind.FILESYSTEM, "udf", 0x8001));
        assertThat(probe(bridge)).isEqualTo(signed(Kind.FILESYSTEM, "udf", 0x8001));
    }

    @Test
    void withoutItsAnchorOrPastTheSequencesEndAnNsrDescriptorLeavesIso9660() {
        Path noAnchor = sparse(dir, "no-anchor", SIZE);
        write(noAnchor, 0x8001, "CD001");
        write(noAnchor, 0x8801, "NSR02");
        Path afterTheEnd = sparse(dir, "after-the-end", SIZE);
        write(afterTheEnd, 0x8001, "CD001");
        write(afterTheEnd, 0x8801, "junk!");
        write(afterTheEnd, 0x9001, "NSR02");
        udfAnchor(afterTheEnd, 2048, 256);

        assertThat(probe(noAnchor)).isEqualTo(signed(Kind.FILESYSTEM, "iso9660", 0x8001));
        assertThat(probe(afterTheEnd)).isEqualTo(signed(Kind.FILESYSTEM, "iso9660", 0x8001));
    }

    @Test
    void anXfsLogRecordInTheFirst256KibIsAnExternalLog() {
        Path log = sparse(dir, "log", SIZE);
        write(log, 3 * 512, logRecordHeader());
        Path shiftedXfs = sparse(dir, "shifted-xfs", SIZE);
        write(shiftedXfs, 512, "XFSB");
        write(shiftedXfs, 3 * 512, logRecordHeader());
        Path tooFar = sparse(dir, "too-far", SIZE);
        write(tooFar, 256 * 1024, logRecordHeader());

        assertThat(probe(log)).isEqualTo(signed(Kind.FILESYSTEM, "xfs_external_log", 3 * 512));
        assertThat(probe(shiftedXfs)).isInstanceOf(ProbeResult.NotEmpty.class);
        assertThat(probe(tooFar)).isInstanceOf(ProbeResult.NotEmpty.class);
    }

    @Test
    void deviceMapperTargetsMetadataNeedsItsVersion() {
        Path verity = sparse(dir, "verity", SIZE);
        write(verity, 0, "verity\0\0\1\0\0\0");
        Path verity2 = sparse(dir, "verity-2", SIZE);
        write(verity2, 0, "verity\0\0\2\0\0\0");
        Path integrity = sparse(dir, "integrity", SIZE);
        write(integrity, 0, "integrt\0\5");
        Path cow = sparse(dir, "cow", SIZE);
        write(cow, 0, "SnAp");

        assertThat(probe(verity)).isEqualTo(signed(Kind.VOLUME_MANAGER, "DM_verity_hash", 0));
        assertThat(probe(verity2)).isInstanceOf(ProbeResult.NotEmpty.class);
        assertThat(probe(integrity)).isEqualTo(signed(Kind.VOLUME_MANAGER, "DM_integrity", 0));
        assertThat(probe(cow)).isEqualTo(signed(Kind.VOLUME_MANAGER, "DM_snapshot_cow", 0));
    }

    private static ProbeResult signed(Kind kind, String type, long offset) {
        return new ProbeResult.Signed(List.of(new Signature(kind, type, offset)));
    }

    private static byte[] sunLabel(boolean checksummed) {
        ByteBuffer label = ByteBuffer.allocate(512); // big-endian
        label.put(0, "hearth test label".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        label.putShort(0x1B4, (short) 16).putShort(0x1B6, (short) 63); // nhead, nsect
        label.putShort(0x1FC, (short) 0xDABE);
        short xor = 0;
        for (int i = 0; i < 0x1FE; i += 2) {
            xor ^= label.getShort(i);
        }
        label.putShort(0x1FE, (short) (checksummed ? xor : xor ^ 1));
        return label.array();
    }

    private static byte[] sgiLabel(boolean checksummed) {
        ByteBuffer label = ByteBuffer.allocate(512); // big-endian
        label.putInt(0, 0x0BE5A941);
        label.putInt(0x138, 2048).putInt(0x13C, 0).putInt(0x140, 0); // a volume header partition
        int sum = 0;
        for (int i = 0; i < 512; i += 4) {
            sum += label.getInt(i);
        }
        label.putInt(0x1F8, checksummed ? -sum : -sum + 1); // csum
        return label.array();
    }

    /** An anchor volume descriptor pointer's tag at {@code block}, which it names as its own location. */
    private static void udfAnchor(Path file, int blockSize, long block) {
        write(file, block * blockSize, ByteBuffer.allocate(16).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                .putShort(0, (short) 2)
                .putInt(12, (int) block)
                .array());
    }

    private static byte[] logRecordHeader() {
        return ByteBuffer.allocate(304) // big-endian
                .putInt(0, 0xFEEDBABE)
                .putInt(4, 1) // cycle
                .putInt(8, 2) // version 2
                .putInt(12, 512) // length
                .putInt(300, 1) // Linux, little-endian
                .array();
    }
}
