package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InotifyTest {

    private static final int CHANGES = Inotify.IN_CREATE | Inotify.IN_DELETE | Inotify.IN_MOVED_FROM
            | Inotify.IN_MOVED_TO;

    @TempDir
    Path dir;

    @Test
    void drainReturnsWhatHappenedInOrderAndThenNothing() throws Exception {
        try (Inotify inotify = Inotify.open()) {
            int watch = inotify.watch(dir, CHANGES);
            assertThat(inotify.drain()).isEmpty();

            Files.createFile(dir.resolve("a.part"));
            Files.move(dir.resolve("a.part"), dir.resolve("a"));
            Files.delete(dir.resolve("a"));
            List<Inotify.Event> events = inotify.drain();

            assertThat(events).containsExactly(
                    new Inotify.Event(watch, Inotify.IN_CREATE, "a.part"),
                    new Inotify.Event(watch, Inotify.IN_MOVED_FROM, "a.part"),
                    new Inotify.Event(watch, Inotify.IN_MOVED_TO, "a"),
                    new Inotify.Event(watch, Inotify.IN_DELETE, "a"));
            assertThat(inotify.drain()).isEmpty();
        }
    }

    @Test
    void aLongNameComesWhole() throws Exception {
        String name = "x".repeat(255);
        try (Inotify inotify = Inotify.open()) {
            inotify.watch(dir, CHANGES);
            Files.createFile(dir.resolve(name));

            assertThat(inotify.drain()).extracting(Inotify.Event::name).containsExactly(name);
        }
    }

    @Test
    void watchingTheSameDirectoryAgainGivesTheSameWatch() throws Exception {
        try (Inotify inotify = Inotify.open()) {
            assertThat(inotify.watch(dir, CHANGES)).isEqualTo(inotify.watch(dir, CHANGES));
        }
    }

    @Test
    void watchingWhatIsNotADirectoryFailsWithItsErrno() throws Exception {
        Path file = Files.createFile(dir.resolve("file"));
        try (Inotify inotify = Inotify.open()) {
            assertThatThrownBy(() -> inotify.watch(dir.resolve("missing"), CHANGES))
                    .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue());
            assertThatThrownBy(() -> inotify.watch(file, CHANGES))
                    .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.errnoName()).isEqualTo("ENOTDIR"));
        }
    }
}
