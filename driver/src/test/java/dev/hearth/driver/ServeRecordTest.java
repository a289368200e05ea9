package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The record {@code hearth serve} leaves in its state directory for {@code hearth volumes}. */
class ServeRecordTest {

    @TempDir
    Path state;

    @Test
    void theFlagsReadBackAsTheyWereGiven() throws IOException {
        ServeRecord record = new ServeRecord(List.of("name=default,dir=/var/lib/hearth/pools/default,reserve=10%",
                "name=lvm,kind=lvm,vg=hearth,thinpool=thin,overprovision=2"), Optional.of("lvm"), state,
                "csi.hearth.dev", Instant.parse("2026-11-24T10:00:00Z"));

        record.write();

        assertThat(ServeRecord.read(state)).isEqualTo(record);
        try (var files = Files.list(state)) {
            assertThat(files).containsExactly(state.resolve("serve.properties"));
        }
    }

    /**
     * Values with every character Properties escapes read back as they were, and each line is the
     * one {@link Properties#store} writes for it into a stream, all ASCII (store adds only its date
     * comment).
     */
    @Test
    void oddValuesAreEscapedAsPropertiesStoreEscapesThem() throws IOException {
        String odd = " name=x,dir=/srv/a b:c#d!e\\f\tg\nh\ri\fj\u00e9k\u2603l\u0001 ";
        Path oddState = Files.createDirectory(state.resolve("s p=ace \u00e9"));
        ServeRecord record = new ServeRecord(List.of(odd, "name=plain"), Optional.of(" lead"), oddState,
                "csi.hearth.dev", Instant.parse("2026-11-24T10:00:00.123Z"));

        record.write();

        assertThat(ServeRecord.read(oddState)).isEqualTo(record);
        Properties props = new Properties();
        props.setProperty("format", "1");
        props.setProperty("state-dir", record.stateDir().toString());
        props.setProperty("driver-name", "csi.hearth.dev");
        props.setProperty("default-pool", " lead");
        props.setProperty("pool.1", odd);
        props.setProperty("pool.2", "name=plain");
        props.setProperty("written", "2026-11-24T10:00:00.123Z");
        ByteArrayOutputStream stored = new ByteArrayOutputStream();
        props.store(stored, null);
        List<String> ours = record.text().lines().filter(l -> !l.startsWith("#")).toList();
        assertThat(ours).containsExactlyInAnyOrderElementsOf(
                stored.toString(StandardCharsets.ISO_8859_1).lines().filter(l -> !l.startsWith("#")).toList());
        assertThat(ours).first().isEqualTo("format=1");
    }

    @Test
    void withoutADefaultPoolNoneIsRecorded() throws IOException {
        ServeRecord record = new ServeRecord(List.of("name=default"), Optional.empty(), state, "other.example.com",
                Instant.parse("2026-11-24T10:00:00Z"));

        record.write();

        assertThat(ServeRecord.read(state).defaultPool()).isEmpty();
        assertThat(ServeRecord.read(state).driverName()).isEqualTo("other.example.com");
    }

    @Test
    void aMissingOrIncompleteRecordIsRefused() throws IOException {
        assertThatThrownBy(() -> ServeRecord.read(state)).isInstanceOf(NoSuchFileException.class);

        Files.writeString(state.resolve("serve.properties"), "format=1\nstate-dir=/x\n");
        assertThatThrownBy(() -> ServeRecord.read(state)).isInstanceOf(IOException.class)
                .hasMessageContaining("incomplete");
        Files.writeString(state.resolve("serve.properties"), "format=2\n");
        assertThatThrownBy(() -> ServeRecord.read(state)).isInstanceOf(IOException.class)
                .hasMessageContaining("format 2");
    }
}
