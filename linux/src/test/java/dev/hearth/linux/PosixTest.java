package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class PosixTest {

    @Test
    void umaskReturnsThePreviousMask() {
        int original = Posix.umask(0027);
        try {
            assertThat(Posix.umask(0077)).isEqualTo(0027);
        } finally {
            Posix.umask(original);
        }
    }

    @Test
    void geteuidMatchesTheOwnerOfThisProcess() throws Exception {
        int procOwner = (int) Files.getAttribute(Path.of("/proc/self"), "unix:uid");

        assertThat(Posix.geteuid()).isEqualTo(procOwner);
    }
}
