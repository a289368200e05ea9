package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LinuxExceptionTest {

    @Test
    void messageNamesCallArgumentsErrnoSymbolAndText() {
        LinuxException e = new LinuxException("mount", "/dev/loop3 -> /mnt/x, ext4", Errno.EBUSY);

        assertThat(e).hasMessage("mount(/dev/loop3 -> /mnt/x, ext4): EBUSY (Device or resource busy)");
        assertThat(e.errno()).isEqualTo(16);
        assertThat(e.is(Errno.EBUSY)).isTrue();
        assertThat(e.is(Errno.EINVAL)).isFalse();
        assertThat(e.errnoName()).isEqualTo("EBUSY");
        assertThat(e.call()).isEqualTo("mount");
        assertThat(e.arguments()).isEqualTo("/dev/loop3 -> /mnt/x, ext4");
    }

    @Test
    void isAnIOException() {
        assertThat(new LinuxException("umount2", "/x", Errno.EINVAL)).isInstanceOf(java.io.IOException.class);
    }

    @Test
    void realFailureCarriesTheErrnoAndThePath(@TempDir Path dir) {
        Path missing = dir.resolve("missing");

        assertThatThrownBy(() -> FileSystems.statvfs(missing))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue())
                .hasMessage("statvfs(" + missing + "): ENOENT (No such file or directory)");
    }

    @Test
    void errnoTableNamesAndDescribesCommonNumbers() {
        assertThat(Errno.name(Errno.ENXIO)).isEqualTo("ENXIO");
        assertThat(Errno.description(Errno.ENOSPC)).isEqualTo("No space left on device");
        assertThat(Errno.byName("EROFS")).hasValue(30);
        assertThat(Errno.byName("ENOPE")).isEmpty();
    }

    @Test
    void errnoOutsideTheTableIsNamedByLibcOrByNumber() {
        assertThat(Errno.name(133)).isIn("EHWPOISON", "errno 133"); // glibc < 2.32 has no strerrorname_np
        assertThat(Errno.name(4000)).isEqualTo("errno 4000");
        assertThat(Errno.description(4000)).isEqualTo("Unknown error 4000");
    }
}
