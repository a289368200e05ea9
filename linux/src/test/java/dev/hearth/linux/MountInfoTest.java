package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MountInfoTest {

    private static final String SAMPLE = """
            22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
            36 22 98:0 /mnt1 /mnt/parent rw,noatime master:1 shared:7 - ext3 /dev/root rw,errors=continue
            41 22 0:45 / /var/lib/kubelet/pods/a\\040b/volumes/my\\011vol ro,nosuid,nodev - tmpfs tmp\\134fs rw,size=16384k
            42 22 7:3 /sub\\012dir /mnt/x rw - ext4 /dev/loop3 rw,discard
            """;

    @Test
    void parsesFieldsOfEachLine() {
        List<MountEntry> entries = MountInfo.parse(SAMPLE);

        assertThat(entries).hasSize(4);
        MountEntry root = entries.getFirst();
        assertThat(root.mountId()).isEqualTo(22);
        assertThat(root.parentId()).isEqualTo(1);
        assertThat(root.major()).isEqualTo(254);
        assertThat(root.minor()).isZero();
        assertThat(root.root()).isEqualTo("/");
        assertThat(root.mountPoint()).isEqualTo(Path.of("/"));
        assertThat(root.mountOptions()).isEqualTo("rw,relatime");
        assertThat(root.optionalFields()).containsExactly("shared:1");
        assertThat(root.fsType()).isEqualTo("ext4");
        assertThat(root.source()).isEqualTo("/dev/vda");
        assertThat(root.superOptions()).isEqualTo("rw");
        assertThat(root.readOnly()).isFalse();
    }

    @Test
    void keepsSeveralOptionalFieldsAndNone() {
        List<MountEntry> entries = MountInfo.parse(SAMPLE);

        assertThat(entries.get(1).optionalFields()).containsExactly("master:1", "shared:7");
        assertThat(entries.get(1).superOptions()).isEqualTo("rw,errors=continue");
        assertThat(entries.get(2).optionalFields()).isEmpty();
    }

    @Test
    void decodesOctalEscapesInPathsAndSource() {
        List<MountEntry> entries = MountInfo.parse(SAMPLE);

        MountEntry escaped = entries.get(2);
        assertThat(escaped.mountPoint()).isEqualTo(Path.of("/var/lib/kubelet/pods/a b/volumes/my\tvol"));
        assertThat(escaped.source()).isEqualTo("tmp\\fs");
        assertThat(entries.get(3).root()).isEqualTo("/sub\ndir");
    }

    @Test
    void readOnlyAndOptionLookupUseWholeOptions() {
        MountEntry entry = MountInfo.parse(SAMPLE).get(2);

        assertThat(entry.readOnly()).isTrue();
        assertThat(entry.hasMountOption("nodev")).isTrue();
        assertThat(entry.hasMountOption("dev")).isFalse();
        assertThat(entry.hasSuperOption("size=16384k")).isTrue();
    }

    @Test
    void leavesBackslashesThatAreNotOctalEscapesAlone() {
        assertThat(MountInfo.unescape("a\\x\\12")).isEqualTo("a\\x\\12");
        assertThat(MountInfo.unescape("\\040\\040")).isEqualTo("  ");
    }

    @Test
    void rejectsMalformedLinesNamingTheLine() {
        assertThatThrownBy(() -> MountInfo.parse("22 1 254:0 / / rw\n"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("line 1");
        assertThatThrownBy(() -> MountInfo.parse("x 1 254:0 / / rw - ext4 /dev/vda rw\n"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    /**
     * A raw block volume's bind of a device node, whether the node was bound by a link's name (the
     * table shows the node the link leads to) or by its own; not a bind of another node, nor the
     * devices' filesystem itself.
     */
    @Test
    void findsTheBindsOfADeviceNodeByItsNameOrTheNameItsLinkLeadsTo(@TempDir Path dev) throws Exception {
        Path node = Files.createFile(dev.resolve("dm-3"));
        Files.createDirectories(dev.resolve("mapper"));
        Path link = Files.createSymbolicLink(dev.resolve("mapper/vg-lv"), Path.of("../dm-3"));
        Files.createFile(dev.resolve("dm-4"));
        List<MountEntry> table = MountInfo.parse("""
                22 1 254:0 / / rw - ext4 /dev/vda rw
                23 22 0:5 / %1$s rw - devtmpfs udev rw
                51 22 0:5 /dm-3 /pods/a/dev rw - devtmpfs udev rw
                52 22 0:5 /mapper/vg-lv /pods/b/dev rw - devtmpfs udev rw
                53 22 0:5 /dm-4 /pods/c/dev rw - devtmpfs udev rw
                54 22 0:6 /dm-3 /pods/d/dev rw - tmpfs other rw
                """.formatted(dev.toRealPath()));

        assertThat(MountInfo.bindsOf(table, link)).containsExactly(Path.of("/pods/a/dev"), Path.of("/pods/b/dev"));
        assertThat(MountInfo.bindsOf(table, node)).containsExactly(Path.of("/pods/a/dev"));
        assertThat(MountInfo.bindsOf(table, dev.resolve("dm-4"))).containsExactly(Path.of("/pods/c/dev"));
        assertThat(MountInfo.bindsOf(table, dev.resolve("dm-9"))).isEmpty();
    }

    @Test
    void aParseTakesTheLastTablesUnchangedLinesAsTheyAreAndParsesTheRest() {
        MountInfo.Parsed last = MountInfo.Parsed.of(SAMPLE, MountInfo.Parsed.NONE);
        String now = """
                22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
                36 22 98:0 /mnt1 /mnt/parent ro,noatime master:1 shared:7 - ext3 /dev/root rw,errors=continue
                42 22 7:3 /sub\\012dir /mnt/x rw - ext4 /dev/loop3 rw,discard
                41 22 7:5 / /mnt/z rw - ext4 /dev/loop5 rw
                43 22 7:4 / /mnt/y rw - ext4 /dev/loop4 rw
                """;

        List<MountEntry> entries = MountInfo.Parsed.of(now, last).entries();

        assertThat(entries).as("as a parse of the text alone").isEqualTo(MountInfo.parse(now));
        assertThat(entries.get(0)).as("unchanged").isSameAs(last.entries().get(0));
        assertThat(entries.get(2)).as("unchanged, moved up").isSameAs(last.entries().get(3));
        assertThat(entries.get(1).readOnly()).as("its flags changed").isTrue();
        assertThat(entries.get(3).mountPoint()).as("its ID reused by another mount").isEqualTo(Path.of("/mnt/z"));
        assertThat(entries.get(3).source()).isEqualTo("/dev/loop5");
    }

    @Test
    void aLineOfTheSameLengthThatDiffersIsParsedAgain() {
        MountInfo.Parsed last = MountInfo.Parsed.of("7 1 7:3 / /mnt/a rw - ext4 /dev/loop3 rw\n", MountInfo.Parsed.NONE);

        List<MountEntry> entries = MountInfo.Parsed.of("7 1 7:3 / /mnt/b rw - ext4 /dev/loop3 rw\n", last).entries();

        assertThat(entries).singleElement().satisfies(e -> assertThat(e.mountPoint()).isEqualTo(Path.of("/mnt/b")));
    }

    @Test
    void aMalformedLineIsRefusedWhateverTheLastTableHeld() {
        MountInfo.Parsed last = MountInfo.Parsed.of(SAMPLE, MountInfo.Parsed.NONE);

        assertThatThrownBy(() -> MountInfo.Parsed.of("22 1 254:0 / / rw\n", last))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("line 1");
    }

    @Test
    void aSecondReadOfThisProcessTableTakesTheFirstsEntries() throws Exception {
        List<MountEntry> first = MountInfo.read();
        List<MountEntry> second = MountInfo.read();

        MountEntry root = first.stream().filter(e -> e.mountPoint().equals(Path.of("/"))).findFirst().orElseThrow();
        assertThat(second).anySatisfy(e -> assertThat(e).isSameAs(root));
    }

    @Test
    void readsThisProcessTableWithRootMount() throws Exception {
        assertThat(MountInfo.read()).anySatisfy(e -> assertThat(e.mountPoint()).isEqualTo(Path.of("/")));
        assertThat(MountInfo.containing(Path.of("/proc/self"))).hasValueSatisfying(
                e -> assertThat(e.fsType()).isEqualTo("proc"));
        assertThat(MountInfo.at(Path.of("/proc"))).hasValueSatisfying(
                e -> assertThat(e.fsType()).isEqualTo("proc"));
    }
}
