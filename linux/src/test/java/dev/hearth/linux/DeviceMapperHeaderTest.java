package dev.hearth.linux;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.hearth.linux.testing.ScratchFilesystem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * DeviceMapper's numbers and struct layouts against what the C compiler makes of
 * {@code <linux/dm-ioctl.h>} on this machine, rather than against literals copied from it. Runs
 * where gcc and the kernel headers (linux-libc-dev) are installed; on an x86_64 or aarch64 host it
 * checks that architecture.
 */
class DeviceMapperHeaderTest {

    private static final Path HEADER = Path.of("/usr/include/linux/dm-ioctl.h");

    @TempDir
    Path dir;

    @Test
    void numbersAndLayoutsAreThoseOfTheUapiHeader() throws Exception {
        Map<String, Long> c = compileAndRun("""
                #include <stdio.h>
                #include <stddef.h>
                #include <sys/ioctl.h>
                #include <linux/dm-ioctl.h>
                #define SIZE(t) printf("sizeof " #t " %zu\\n", sizeof(struct t))
                #define AT(t, f) printf(#t "." #f " %zu\\n", offsetof(struct t, f))
                #define VALUE(n) printf(#n " %llu\\n", (unsigned long long) (n))
                int main(void) {
                    SIZE(dm_ioctl); SIZE(dm_target_spec);
                    AT(dm_ioctl, version); AT(dm_ioctl, data_size); AT(dm_ioctl, data_start);
                    AT(dm_ioctl, target_count); AT(dm_ioctl, open_count); AT(dm_ioctl, flags);
                    AT(dm_ioctl, event_nr); AT(dm_ioctl, padding); AT(dm_ioctl, dev);
                    AT(dm_ioctl, name); AT(dm_ioctl, uuid); AT(dm_ioctl, data);
                    AT(dm_target_spec, sector_start); AT(dm_target_spec, length); AT(dm_target_spec, status);
                    AT(dm_target_spec, next); AT(dm_target_spec, target_type);
                    VALUE(DM_DEV_STATUS); VALUE(DM_TABLE_STATUS); VALUE(DM_VERSION_MAJOR);
                    VALUE(DM_NAME_LEN); VALUE(DM_UUID_LEN); VALUE(DM_MAX_TYPE_NAME);
                    VALUE(DM_READONLY_FLAG); VALUE(DM_SUSPEND_FLAG); VALUE(DM_ACTIVE_PRESENT_FLAG);
                    VALUE(DM_INACTIVE_PRESENT_FLAG); VALUE(DM_BUFFER_FULL_FLAG); VALUE(DM_NOFLUSH_FLAG);
                    return 0;
                }
                """);

        Map<String, Long> java = new HashMap<>();
        java.put("sizeof dm_ioctl", DeviceMapper.DM_IOCTL.byteSize());
        java.put("sizeof dm_target_spec", DeviceMapper.DM_TARGET_SPEC.byteSize());
        Stream.of("version", "data_size", "data_start", "target_count", "open_count", "flags", "event_nr", "padding",
                "dev", "name", "uuid", "data").forEach(f ->
                java.put("dm_ioctl." + f, DeviceMapper.DM_IOCTL.byteOffset(groupElement(f))));
        Stream.of("sector_start", "length", "status", "next", "target_type").forEach(f ->
                java.put("dm_target_spec." + f, DeviceMapper.DM_TARGET_SPEC.byteOffset(groupElement(f))));
        java.put("DM_DEV_STATUS", DeviceMapper.DM_DEV_STATUS);
        java.put("DM_TABLE_STATUS", DeviceMapper.DM_TABLE_STATUS);
        java.put("DM_VERSION_MAJOR", (long) DeviceMapper.VERSION_MAJOR);
        java.put("DM_NAME_LEN", (long) DeviceMapper.DM_NAME_LEN);
        java.put("DM_UUID_LEN", (long) DeviceMapper.DM_UUID_LEN);
        java.put("DM_MAX_TYPE_NAME", (long) DeviceMapper.DM_MAX_TYPE_NAME);
        java.put("DM_READONLY_FLAG", (long) DeviceMapper.DM_READONLY_FLAG);
        java.put("DM_SUSPEND_FLAG", (long) DeviceMapper.DM_SUSPEND_FLAG);
        java.put("DM_ACTIVE_PRESENT_FLAG", (long) DeviceMapper.DM_ACTIVE_PRESENT_FLAG);
        java.put("DM_INACTIVE_PRESENT_FLAG", (long) DeviceMapper.DM_INACTIVE_PRESENT_FLAG);
        java.put("DM_BUFFER_FULL_FLAG", (long) DeviceMapper.DM_BUFFER_FULL_FLAG);
        java.put("DM_NOFLUSH_FLAG", (long) DeviceMapper.DM_NOFLUSH_FLAG);

        assertThat(java).isEqualTo(c);
    }

    private Map<String, Long> compileAndRun(String source) throws Exception {
        boolean gcc = Stream.of(System.getenv().getOrDefault("PATH", "").split(":"))
                .anyMatch(d -> !d.isEmpty() && Files.isExecutable(Path.of(d, "gcc")));
        boolean ready = gcc && Files.isRegularFile(HEADER);
        if (!ready && "true".equalsIgnoreCase(System.getenv("CI"))) {
            throw new IllegalStateException("CI=true but the test environment lacks gcc or " + HEADER
                    + " (linux-libc-dev); .ci/run must install them");
        }
        assumeTrue(ready, "needs gcc and " + HEADER + " (linux-libc-dev)");
        Path c = Files.writeString(dir.resolve("dm.c"), source);
        Path exe = dir.resolve("dm");
        ScratchFilesystem.run(List.of("gcc", "-Wall", "-Werror", "-o", exe.toString(), c.toString()));
        Map<String, Long> values = new HashMap<>();
        for (String line : ScratchFilesystem.run(List.of(exe.toString())).split("\n")) {
            int space = line.lastIndexOf(' ');
            values.put(line.substring(0, space), Long.parseUnsignedLong(line.substring(space + 1)));
        }
        return values;
    }
}
