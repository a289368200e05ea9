package dev.hearth.storage.mount;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FormatJournalTest {

    private static final VolumeId VOLUME = VolumeId.mint("test", "journal-test-volume");
    private static final VolumeId OTHER = VolumeId.mint("test", "another-volume");

    @TempDir
    Path dir;

    @Test
    void anEntryIsOpenFromBeginToEndForItsVolumeOnly() throws IOException {
        FormatJournal journal = new FormatJournal(dir.resolve("formatting"));

        journal.begin(VOLUME, Path.of("/dev/loop7"));

        assertThat(journal.isOpen(VOLUME)).isTrue();
        assertThat(journal.isOpen(OTHER)).isFalse();
        journal.end(VOLUME);
        assertThat(journal.isOpen(VOLUME)).isFalse();
        journal.end(VOLUME); // again: nothing to close
        assertThat(journal.isOpen(VOLUME)).isFalse();
    }

    @Test
    void anEntryNamesItsDeviceAndSurvivesARestart() throws IOException {
        new FormatJournal(dir.resolve("formatting")).begin(VOLUME, Path.of("/dev/loop7"));

        FormatJournal restarted = new FormatJournal(dir.resolve("formatting"));

        assertThat(restarted.isOpen(VOLUME)).isTrue();
        try (var entries = Files.list(dir.resolve("formatting"))) {
            assertThat(entries.toList()).singleElement()
                    .satisfies(entry -> assertThat(Files.readString(entry)).isEqualTo("/dev/loop7\n"));
        }
    }

    @Test
    void beginningAgainKeepsOneEntry() throws IOException {
        FormatJournal journal = new FormatJournal(dir.resolve("formatting"));
        journal.begin(VOLUME, Path.of("/dev/loop7-a-longer-name"));

        journal.begin(VOLUME, Path.of("/dev/loop8"));

        try (var entries = Files.list(dir.resolve("formatting"))) {
            assertThat(entries.toList()).singleElement()
                    .satisfies(entry -> assertThat(Files.readString(entry)).isEqualTo("/dev/loop8\n"));
        }
    }

    @Test
    void forgetDeletedDropsEveryRecordOfTheVolumesThatAreGoneAndKeepsTheRest() throws IOException {
        FormatJournal journal = new FormatJournal(dir.resolve("formatting"));
        journal.begin(VOLUME, Path.of("/dev/loop7"));
        journal.beginGrowth(VOLUME, Path.of("/dev/loop7"));
        journal.markViews(VOLUME);
        journal.begin(OTHER, Path.of("/dev/loop8"));
        Files.writeString(dir.resolve("formatting/not-a-volume-id.formatting"), "?");

        assertThat(journal.forgetDeleted(id -> !id.equals(VOLUME))).containsExactly(VOLUME);

        assertThat(journal.isOpen(VOLUME)).isFalse();
        assertThat(journal.isGrowing(VOLUME)).isFalse();
        assertThat(journal.hasViews(VOLUME)).isFalse();
        assertThat(journal.isOpen(OTHER)).as("a volume that still exists keeps its record").isTrue();
        assertThat(dir.resolve("formatting/not-a-volume-id.formatting")).as("no volume's: not ours to judge").exists();
        assertThat(journal.forgetDeleted(id -> true)).isEmpty();
    }
}
