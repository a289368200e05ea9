package dev.hearth.storage.file;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.storage.Claim;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.io.StringReader;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The records' own writer against the properties format that every release reads with {@link Properties#load}. */
class MetadataTest {

    /** What a name or a parameter may hold: the format's separators, escapes, comment marks, spaces, line ends. */
    private static final String HOSTILE = " =:#!\\\t\n\r\f\u0001\u007f é漢\uD83D\uDE00 \\u0041 key=value # not a comment";

    @Test
    void aVolumeWithEveryAwkwardCharacterReadsBackAsItWasAndAsPropertiesReadsIt() throws IOException {
        Map<String, String> parameters = new HashMap<>();
        parameters.put("plain", "value");
        parameters.put(HOSTILE, HOSTILE);
        parameters.put(" leading", " leading and trailing ");
        parameters.put("empty", "");
        VolumeId id = VolumeId.mint("default", "awkward");
        Volume volume = new Volume(id, HOSTILE, 1L << 30, parameters, Optional.empty(),
                Instant.parse("2026-11-28T02:30:32.695351Z"), Optional.of(new Claim("ns", "data-db-0", "pvc-1")));

        String text = Metadata.encode(volume);

        assertThat(Metadata.decode(id, text)).isEqualTo(volume);
        Properties read = new Properties();
        read.load(new StringReader(text));
        assertThat(read.getProperty("name")).isEqualTo(HOSTILE);
        assertThat(read.getProperty("param." + HOSTILE)).isEqualTo(HOSTILE);
        assertThat(read.getProperty("param. leading")).isEqualTo(" leading and trailing ");
        assertThat(read.getProperty("param.empty")).isEmpty();
        assertThat(read.getProperty("claim.name")).isEqualTo("data-db-0");
        assertThat(text.lines().filter(l -> !l.startsWith("#"))).as("one line per entry").hasSize(read.size());
    }

    @Test
    void randomStringsReadBackAsPropertiesWroteThem() throws IOException {
        Random random = new Random(11);
        for (int round = 0; round < 200; round++) {
            StringBuilder key = new StringBuilder();
            StringBuilder value = new StringBuilder();
            for (int i = 0; i < 1 + random.nextInt(12); i++) {
                key.append((char) random.nextInt(0x180));
                value.append((char) random.nextInt(0x180));
            }
            StringBuilder out = new StringBuilder();
            Metadata.escape(out, key.toString(), true);
            out.append('=');
            Metadata.escape(out, value.toString(), false);
            Properties read = new Properties();
            read.load(new StringReader(out.toString()));

            assertThat(read).as("%s", out).containsExactly(Map.entry(key.toString(), value.toString()));
        }
    }

    @Test
    void aSnapshotReadsBack() throws IOException {
        SnapshotId id = SnapshotId.mint("default", "snap: #1");
        Snapshot snapshot = new Snapshot(id, "snap: #1", VolumeId.mint("default", "source"), 1L << 20,
                Instant.parse("2026-11-28T02:30:32Z"));

        assertThat(Metadata.decode(id, Metadata.encode(snapshot))).isEqualTo(snapshot);
    }
}
