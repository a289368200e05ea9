package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
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
