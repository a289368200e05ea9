package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.RequiresRoot;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HostTest {

    private static final String ROOT_STATUS = "Name:\tjava\nUid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n";

    @TempDir
    Path root;

    /** A fake machine: root privileges, a 6.1 kernel, and a /dev/loop-control (a file here: it opens). */
    private Host fitHost() throws IOException {
        Files.createDirectories(root.resolve("proc/self"));
        Files.createDirectories(root.resolve("proc/sys/kernel"));
        Files.createDirectories(root.resolve("dev"));
        Files.writeString(root.resolve("proc/self/status"), ROOT_STATUS);
        Files.writeString(root.resolve("proc/sys/kernel/osrelease"), "6.1.0-18-amd64\n");
        Files.createFile(root.resolve("dev/loop-control"));
        return new Host(root, List.of());
    }

    @Test
    void aFitMachineHasNoProblems() throws IOException {
        assertThat(fitHost().problems()).isEmpty();
    }

    @Test
    @RequiresRoot
    void thisMachineIsFit() {
        Host host = Host.local(List.of());

        assertThat(host.problems()).isEmpty();
        assertThat(host.kernelRelease()).isPresent();
    }

    @Test
    void withoutLoopControlTheProblemSaysToLoadTheLoopDriver() throws IOException {
        Host host = fitHost();
        Files.delete(root.resolve("dev/loop-control"));

        assertThat(host.problems()).singleElement().asString()
                .contains(root.resolve("dev/loop-control") + " is missing").contains("modprobe loop");
    }

    @Test
    void aLoopControlThatDoesNotOpenIsAProblemWithItsErrno() throws IOException {
        Host host = fitHost();
        Files.delete(root.resolve("dev/loop-control"));
        Files.createDirectory(root.resolve("dev/loop-control"));

        assertThat(host.problems()).singleElement().asString()
                .startsWith("cannot open " + root.resolve("dev/loop-control")).contains("EISDIR");
    }

    @ParameterizedTest
    @CsvSource({"5.4.0-150-generic,true", "4.19.0-26-amd64,true", "5.7.19,true", "5.8.0,false", "5.15.0-1057-aws,false",
            "6.18.44-fc-v657,false", "10.0,false", "unknown,false"})
    void aKernelBefore58IsAProblemNamingTheMinimum(String release, boolean tooOld) throws IOException {
        Host host = fitHost();
        Files.writeString(root.resolve("proc/sys/kernel/osrelease"), release + "\n");

        if (tooOld) {
            assertThat(host.problems()).singleElement().asString()
                    .contains("kernel " + release + " is too old").contains("LOOP_CONFIGURE").contains("Linux 5.8");
        } else {
            assertThat(host.problems()).isEmpty();
        }
    }

    @Test
    void withoutCapSysAdminTheProblemSaysToRunAsRoot() throws IOException {
        Host host = fitHost();
        Files.writeString(root.resolve("proc/self/status"),
                "Name:\tjava\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n");

        assertThat(host.problems()).singleElement().asString()
                .contains("not running as root (uid 1000, no CAP_SYS_ADMIN)");
    }

    @Test
    void aToolCountsOnlyAsAnExecutableFileInOneOfTheDirectories() throws IOException {
        Path bin = Files.createDirectories(root.resolve("bin"));
        Path sbin = Files.createDirectories(root.resolve("sbin"));
        Files.createFile(sbin.resolve("mkfs.ext4"), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwxr-xr-x")));
        Files.createFile(bin.resolve("mkfs.xfs"), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rw-r--r--")));
        Files.createDirectory(bin.resolve("btrfs"));
        Host host = new Host(root, List.of(bin, sbin));

        assertThat(host.hasTool("mkfs.ext4")).isTrue();
        assertThat(host.hasTool("mkfs.xfs")).as("not executable").isFalse();
        assertThat(host.hasTool("btrfs")).as("a directory").isFalse();
        assertThat(host.hasTool("resize2fs")).as("absent").isFalse();
        assertThat(new Host(root, List.of(bin)).hasTool("mkfs.ext4")).as("in a directory not searched").isFalse();
    }
}
