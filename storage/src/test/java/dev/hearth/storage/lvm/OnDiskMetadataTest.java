package dev.hearth.storage.lvm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reading a group's metadata from its PV, against bytes and reports LVM 2.03.16 wrote and printed
 * (fixtures in the resources, captured as their README says). LvmPoolUmlTest compares the same
 * reading with lvs on live groups.
 */
class OnDiskMetadataTest {

    private static final long MDA = 4096;
    private static final long MDA_SIZE = 0xff000;

    @TempDir
    Path dir;

    @Test
    void readsTheCommittedTextOfARealPvAndItsChecksumsHold() throws IOException {
        PhysicalVolumeLabel.Contents contents = read(fixture());
        assertThat(contents.pvUuid()).isEqualTo("wPDOdjoHwMksgvGm7pcrzj2mXcKUfAwJ");
        assertThat(contents.texts()).singleElement().satisfies(text -> {
            assertThat(text).startsWith("hearth-x {\nid = \"4Pwo0j-");
            assertThat(text).contains("seqno = 11").endsWith("# Tue Nov 24 03:22:09 2026\n\n");
        });
    }

    @Test
    void aTornTextIsRefusedByItsChecksum() throws IOException {
        byte[] disk = fixture();
        long text = MDA + locationOffset(disk);
        disk[(int) text + 100] ^= 1;
        assertThatThrownBy(() -> read(disk)).isInstanceOf(PhysicalVolumeLabel.Unreadable.class)
                .hasMessageContaining("metadata text checksum");
    }

    @Test
    void aDamagedLabelIsRefused() throws IOException {
        byte[] disk = fixture();
        disk[512 + 40] ^= 1; // inside the PV UUID
        assertThatThrownBy(() -> read(disk)).isInstanceOf(PhysicalVolumeLabel.Unreadable.class)
                .hasMessageContaining("label checksum");
    }

    @Test
    void aDeviceWithoutALabelIsNotAPv() {
        assertThatThrownBy(() -> read(new byte[40960])).isInstanceOf(PhysicalVolumeLabel.Unreadable.class)
                .hasMessageContaining("no LVM label");
    }

    /** LVM's metadata area is a ring: a text that reaches its end goes on just after the area's header. */
    @Test
    void aTextThatWrapsAroundTheAreaIsJoined() throws IOException {
        byte[] original = fixture();
        long offset = locationOffset(original);
        int length = (int) locationSize(original);
        byte[] text = java.util.Arrays.copyOfRange(original, (int) (MDA + offset), (int) (MDA + offset) + length);
        // The whole area (1020 KiB), with the text's first 1000 bytes at its very end and the rest after the header.
        byte[] disk = java.util.Arrays.copyOf(original, (int) (MDA + MDA_SIZE));
        java.util.Arrays.fill(disk, (int) (MDA + 512), disk.length, (byte) 0);
        int head = 1000;
        long newOffset = MDA_SIZE - head;
        System.arraycopy(text, 0, disk, (int) (MDA + newOffset), head);
        System.arraycopy(text, head, disk, (int) (MDA + 512), length - head);
        ByteBuffer header = ByteBuffer.wrap(disk, (int) MDA, 512).slice().order(ByteOrder.LITTLE_ENDIAN);
        header.putLong(40, newOffset);
        header.putInt(0, PhysicalVolumeLabel.crc(PhysicalVolumeLabel.INITIAL_CRC, header, 4, 508));

        PhysicalVolumeLabel.Contents contents = read(disk);

        assertThat(contents.texts()).singleElement().isEqualTo(read(original).texts().getFirst());
    }

    @Test
    void theGroupReadsAsVgsPrintsIt() throws IOException {
        GroupMetadata group = group();
        Map<String, String> vgs = ReportJson.rows(resource("vgs.json"), "vg").getFirst();
        Lvm.VolumeGroup direct = DirectReport.volumeGroup(group);

        assertThat(direct).isEqualTo(Lvm.VolumeGroup.of(vgs));
        assertThat(group.seqno()).isEqualTo(Long.parseLong(vgs.get("vg_seqno")));
        assertThat(direct.partial()).isFalse();
    }

    /** Every field the pool reads, against lvs's own row; the kernel's part from the dmsetup status of that moment. */
    @Test
    void theVolumesReadAsLvsPrintsThem() throws IOException {
        List<LogicalVolume> lvs = ReportJson.rows(resource("lvs-all.json"), "lv").stream().map(LogicalVolume::of)
                .filter(lv -> !lv.name().startsWith("[")).toList();

        List<LogicalVolume> direct = DirectReport.logicalVolumes(group(), capturedDeviceMapper());

        assertThat(direct).extracting(LogicalVolume::name)
                .containsExactlyInAnyOrderElementsOf(lvs.stream().map(LogicalVolume::name).toList());
        for (LogicalVolume expected : lvs) {
            LogicalVolume actual = direct.stream().filter(lv -> lv.name().equals(expected.name())).findFirst()
                    .orElseThrow();
            assertThat(actual).as(expected.name()).usingRecursiveComparison()
                    .ignoringFields("dataPercent", "metadataPercent").isEqualTo(expected);
            if (expected.attr().startsWith("s")) {
                assertThat(actual.dataPercent()).as("an old-style snapshot's fill, which hearth never reads").isEmpty();
            } else {
                assertPercent(actual.dataPercent(), expected.dataPercent(), expected.name() + " data");
            }
            assertPercent(actual.metadataPercent(), expected.metadataPercent(), expected.name() + " metadata");
        }
    }

    @Test
    void hiddenLogicalVolumesAndTheSnapshotJoinAreNotShown() throws IOException {
        assertThat(group().shown()).extracting(GroupMetadata.Lv::name)
                .containsExactly("tp", "hearth.p.abc", "hearth.p.snap.abc", "thick1", "xfer1");
        assertThat(group().cowStores()).isEqualTo(Map.of("xfer1", "thick1"));
    }

    @Test
    void textThatIsNotLvmMetadataIsRefusedNotGuessedAt() {
        assertThatThrownBy(() -> MetadataText.parse("vg {\nseqno = 1.5\n}")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("line 2");
        assertThatThrownBy(() -> MetadataText.parse("vg {\nid = \"x\"\n")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not closed");
        assertThatThrownBy(() -> MetadataText.parse("vg { a = [\"x\", [1]] }"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> GroupMetadata.of(MetadataText.parse("a { extent_size = 8 }\nb { extent_size = 8 }")))
                .hasMessageContaining("not one group");
        assertThatThrownBy(() -> GroupMetadata.of(MetadataText.parse("""
                vg { seqno = 1 extent_size = 8192 logical_volumes { lv { segment_count = 2
                segment1 { type = "striped" extent_count = 1 } } } }""")))
                .hasMessageContaining("has no segment2");
    }

    @Test
    void stringsKeepTheirEscapedQuotesAndCommentsAreSkipped() {
        MetadataText.Section top = MetadataText.parse("vg { # a comment \"x\n d = \"a \\\"b\\\" # c\" }");
        assertThat(top.section("vg").orElseThrow().string("d")).hasValue("a \"b\" # c");
    }

    // ---- helpers

    private static void assertPercent(java.util.OptionalDouble actual, java.util.OptionalDouble expected,
            String what) {
        if (expected.isEmpty()) {
            assertThat(actual).as(what).isEmpty();
        } else {
            assertThat(actual).as(what).isPresent();
            assertThat(actual.getAsDouble()).as(what).isCloseTo(expected.getAsDouble(),
                    org.assertj.core.data.Offset.offset(0.005));
        }
    }

    /** The device-mapper of the captured moment: dmsetup's status lines; open counts as lvs showed them. */
    private static DirectReport.DeviceMapperView capturedDeviceMapper() throws IOException {
        Map<String, String[]> devices = new HashMap<>();
        for (String line : resource("dmsetup-status.txt").lines().toList()) {
            int colon = line.indexOf(": ");
            devices.put(line.substring(0, colon), line.substring(colon + 2).strip().split("\\s+", 4));
        }
        return new DirectReport.DeviceMapperView() {
            @Override
            public OptionalInt openCount(String device) {
                if (!devices.containsKey(device)) {
                    return OptionalInt.empty();
                }
                return OptionalInt.of(device.equals("hearth--x-tp") || device.endsWith("_tdata")
                        || device.endsWith("_tmeta") || device.endsWith("-tpool") ? 1 : 0);
            }

            @Override
            public Optional<String> liveDeviceNumber(String device) {
                return devices.containsKey(device) ? Optional.of("254:" + devices.size()) : Optional.empty();
            }

            @Override
            public boolean suspended(String device) {
                return false;
            }

            @Override
            public Optional<DirectReport.PoolStatus> thinPool(String device) {
                String[] d = devices.get(device);
                if (d == null || !d[2].equals("thin-pool")) {
                    return Optional.empty();
                }
                String[] f = d[3].split(" ");
                String[] meta = f[1].split("/");
                String[] data = f[2].split("/");
                return Optional.of(new DirectReport.PoolStatus(Long.parseLong(f[0]), Long.parseLong(meta[0]),
                        Long.parseLong(meta[1]),
                        Long.parseLong(data[0]), Long.parseLong(data[1]), false, f[4], !f[7].equals("-")));
            }

            @Override
            public Optional<DirectReport.ThinStatus> thin(String device) {
                String[] d = devices.get(device);
                if (d == null || !d[2].equals("thin")) {
                    return Optional.empty();
                }
                return Optional.of(new DirectReport.ThinStatus(Long.parseLong(d[3].split(" ")[0]), false));
            }
        };
    }

    private GroupMetadata group() throws IOException {
        return GroupMetadata.of(MetadataText.parse(read(fixture()).texts().getFirst()));
    }

    private PhysicalVolumeLabel.Contents read(byte[] disk) throws IOException {
        Path file = Files.write(dir.resolve("pv-" + System.nanoTime()), disk);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            return PhysicalVolumeLabel.read(channel, file);
        }
    }

    private static long locationOffset(byte[] disk) {
        return ByteBuffer.wrap(disk).order(ByteOrder.LITTLE_ENDIAN).getLong((int) MDA + 40);
    }

    private static long locationSize(byte[] disk) {
        return ByteBuffer.wrap(disk).order(ByteOrder.LITTLE_ENDIAN).getLong((int) MDA + 48);
    }

    private static byte[] fixture() throws IOException {
        try (InputStream in = OnDiskMetadataTest.class.getResourceAsStream("pv-head.bin")) {
            return in.readAllBytes();
        }
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = OnDiskMetadataTest.class.getResourceAsStream(name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
