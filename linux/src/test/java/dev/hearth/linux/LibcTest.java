package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.invoke.MethodHandle;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class LibcTest {

    /** A holder class of a function that linkAll forgets would leave its first request to link it. */
    @Test
    void linkAllLinksEveryFunctionHolder() {
        long holders = Arrays.stream(Libc.class.getDeclaredClasses())
                .filter(c -> Arrays.stream(c.getDeclaredFields()).anyMatch(LibcTest::isHandle))
                .count();

        assertThat(holders).isGreaterThanOrEqualTo(14);
        assertThat(LibcLinks.linkAll()).isEqualTo((int) holders);
        assertThat(LibcLinks.linkAll()).as("a second call links nothing new").isEqualTo((int) holders);
    }

    @Test
    void linkedFunctionsAnswer() {
        LibcLinks.linkAll();

        assertThat(Libc.geteuid()).isGreaterThanOrEqualTo(0);
        try (Arena arena = Arena.ofConfined()) {
            assertThat(Libc.lseek(arena, -1, 0, Libc.SEEK_DATA)).isEqualTo(-Errno.EBADF);
        }
    }

    private static boolean isHandle(Field field) {
        return Modifier.isStatic(field.getModifiers())
                && (field.getType() == MethodHandle.class || field.getType() == Optional.class);
    }
}
