package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.linux.Host;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.tool.ToolRunner;
import io.grpc.Status;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A running driver on a machine that lacks something: its /dev, /proc and tool directory are a
 * fake tree whose parts link to the real ones, so each lack is one link removed. Probe, /healthz
 * and the calls themselves must say what is missing and what to install or load.
 */
class HostPrerequisitesTest {

    /** e2fsprogs and util-linux, but not xfsprogs or btrfs-progs. */
    private static final List<String> TOOLS = List.of("blkid", "mkfs.ext4", "e2fsck", "resize2fs");

    @TempDir
    Path dir;

    @TempDir
    Path root;

    private Path tools;
    private TestDriver driver;

    @BeforeEach
    void fakeMachine() throws IOException {
        Files.createDirectories(root.resolve("proc/self"));
        Files.createDirectories(root.resolve("proc/sys/kernel"));
        Files.createDirectories(root.resolve("dev"));
        Files.copy(Path.of("/proc/self/status"), root.resolve("proc/self/status"));
        Files.writeString(root.resolve("proc/sys/kernel/osrelease"), "6.1.0-18-amd64\n");
        Files.createSymbolicLink(root.resolve("dev/loop-control"), Path.of("/dev/loop-control"));
        tools = Files.createDirectories(root.resolve("sbin"));
        for (String tool : TOOLS) {
            Path real = ToolRunner.SEARCH_PATH.stream().map(d -> Path.of(d, tool)).filter(Files::isExecutable)
                    .findFirst().orElseThrow(() -> new AssertionError(tool + " is not installed"));
            Files.createSymbolicLink(tools.resolve(tool), real);
        }
    }

    private TestDriver start(FilesystemType defaultType) throws IOException {
        driver = TestDriver.start(dir, defaultType, new Host(root, List.of(tools)));
        return driver;
    }

    @AfterEach
    void stop() throws IOException {
        if (driver != null) {
            driver.close();
        }
    }

    @Test
    void withoutXfsprogsTheDriverServesExt4AndBlockAndRefusesXfsNamingThePackage() throws IOException {
        start(FilesystemType.EXT4);

        assertThat(driver.identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
        assertThat(driver.create("ext4", MIB, mount("ext4")).getVolumeId()).isNotEmpty();
        assertThat(driver.create("default-type", MIB, mount("")).getVolumeId()).isNotEmpty();
        assertThat(driver.create("block", MIB, block()).getVolumeId()).isNotEmpty();
        assertThat(failure(() -> driver.create("xfs", MIB, mount("xfs"))))
                .contains("mkfs.xfs, xfs_growfs, xfs_admin not found in " + tools)
                .contains("install xfsprogs");
        assertThat(driver.poolFiles()).noneMatch(f -> f.toString().contains("xfs"));
    }

    @Test
    void aDefaultFilesystemWithoutItsToolsMakesTheDriverUnhealthy() throws Exception {
        start(FilesystemType.XFS);

        assertThat(failure(() -> driver.identity().probe(ProbeRequest.getDefaultInstance())))
                .contains("mkfs.xfs").contains("xfs volumes (--default-fs-type)").contains("install xfsprogs");
        assertThat(healthz()).satisfies(r -> {
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(r.body()).contains("install xfsprogs");
        });
        assertThat(failure(() -> driver.create("default-type", MIB, mount("")))).contains("install xfsprogs");
        assertThat(driver.create("ext4", MIB, mount("ext4")).getVolumeId()).isNotEmpty();
    }

    /**
     * The loop driver unloaded: Probe and /healthz fail saying to load it, calls that would set
     * something up are refused with the same words, teardown still works; once it is back, all is
     * well again without a restart.
     */
    @Test
    void withoutLoopControlProbeHealthzAndSetupCallsSayToLoadTheLoopDriverTeardownStillWorks() throws Exception {
        start(FilesystemType.EXT4);
        String id = driver.create("before", MIB, mount("ext4")).getVolumeId();
        Files.delete(root.resolve("dev/loop-control"));

        assertThat(failure(() -> driver.identity().probe(ProbeRequest.getDefaultInstance())))
                .contains(root.resolve("dev/loop-control") + " is missing").contains("modprobe loop");
        assertThat(healthz()).satisfies(r -> {
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(r.body()).contains("modprobe loop");
        });
        assertThat(failure(() -> driver.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(dir.resolve("staging").toString()).setVolumeCapability(mount("ext4")).build())))
                .startsWith("this node cannot serve volumes: ").contains("modprobe loop");
        assertThat(failure(() -> driver.create("after", MIB, block()))).contains("modprobe loop");
        assertThat(driver.poolLoopDevices()).isEmpty();
        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
        assertThat(driver.poolFiles()).isEmpty();

        Files.createSymbolicLink(root.resolve("dev/loop-control"), Path.of("/dev/loop-control"));

        assertThat(driver.identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
        assertThat(healthz().statusCode()).isEqualTo(200);
        assertThat(driver.create("after", MIB, block()).getVolumeId()).isNotEmpty();
    }

    @Test
    void aKernelWithoutLoopConfigureIsNamedWithTheMinimumVersion() throws IOException {
        Files.writeString(root.resolve("proc/sys/kernel/osrelease"), "5.4.0-150-generic\n");
        start(FilesystemType.EXT4);

        assertThat(failure(() -> driver.identity().probe(ProbeRequest.getDefaultInstance())))
                .contains("kernel 5.4.0-150-generic is too old").contains("LOOP_CONFIGURE")
                .contains("Linux 5.8 or newer");
        assertThat(failure(() -> driver.create("pvc", MIB, mount("ext4")))).contains("Linux 5.8");
    }

    @Test
    void withoutCapSysAdminProbeSaysToRunAsRoot() throws IOException {
        Files.writeString(root.resolve("proc/self/status"),
                "Name:\tjava\nUid:\t65534\t65534\t65534\t65534\nCapEff:\t0000000000000000\n");
        start(FilesystemType.EXT4);

        assertThat(failure(() -> driver.identity().probe(ProbeRequest.getDefaultInstance())))
                .contains("not running as root (uid 65534, no CAP_SYS_ADMIN)");
    }

    /** The description of the FAILED_PRECONDITION the call must end with. */
    private static String failure(Runnable call) {
        Throwable thrown = catchThrowable(call::run);
        assertThat(thrown).as("the call fails").isNotNull();
        Status status = Status.fromThrowable(thrown);
        assertThat(status.getCode()).as("%s", status).isEqualTo(Status.Code.FAILED_PRECONDITION);
        return status.getDescription();
    }

    private HttpResponse<String> healthz() throws IOException, InterruptedException {
        try (HttpClient client = HttpClient.newHttpClient()) {
            return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + driver.metricsPort()
                    + "/healthz")).build(), HttpResponse.BodyHandlers.ofString());
        }
    }
}
