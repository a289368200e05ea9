package dev.hearth.driver.inspect;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which mounts are a stage or a publish, and of which driver, by the kubelet's layout (pkg/volume/csi). */
class KubeletPathsTest {

    private static final Path EPHEMERAL = Path.of("/var/lib/hearth/ephemeral");
    private static final String OURS = "csi.hearth.dev";

    @TempDir
    Path kubelet;

    private KubeletPaths.Place at(String path) {
        return KubeletPaths.of(kubelet.resolve(path), EPHEMERAL, OURS);
    }

    private void volData(String directory, String driver) throws IOException {
        Path file = Files.createDirectories(kubelet.resolve(directory)).resolve("vol_data.json");
        Files.writeString(file, "{\"attachmentID\":\"csi-0f\",\"driverName\":\"" + driver + "\",\"nodeName\":\"a\","
                + "\"specVolID\":\"pvc-1\",\"volumeHandle\":\"default-x\",\"volumeLifecycleMode\":\"Persistent\"}");
    }

    @Test
    void aFilesystemStageIsNamedByTheDriverAndTheHashOfTheVolumeId() {
        KubeletPaths.Place place = at("plugins/kubernetes.io/csi/csi.hearth.dev/" + "ab".repeat(32) + "/globalmount");

        assertThat(place).isEqualTo(new KubeletPaths.Place(MountRole.STAGING, Optional.of(OURS)));
        assertThat(at("plugins/kubernetes.io/csi/other.example.com/" + "ab".repeat(32) + "/globalmount").driver())
                .contains("other.example.com");
    }

    @Test
    void publishesAndOlderStagesSayTheirDriverInVolData() throws IOException {
        volData("pods/7c1e/volumes/kubernetes.io~csi/pvc-1", OURS);
        volData("plugins/kubernetes.io/csi/pv/pvc-2", "other.example.com");

        assertThat(at("pods/7c1e/volumes/kubernetes.io~csi/pvc-1/mount"))
                .isEqualTo(new KubeletPaths.Place(MountRole.PUBLISH, Optional.of(OURS)));
        assertThat(at("plugins/kubernetes.io/csi/pv/pvc-2/globalmount"))
                .isEqualTo(new KubeletPaths.Place(MountRole.STAGING, Optional.of("other.example.com")));
        assertThat(at("pods/9d2f/volumes/kubernetes.io~csi/pvc-3/mount"))
                .as("no vol_data.json: a publish of no driver we can name")
                .isEqualTo(new KubeletPaths.Place(MountRole.PUBLISH, Optional.empty()));
    }

    @Test
    void aBlockVolumesPlacesShareOneVolDataForItsPv() throws IOException {
        volData("plugins/kubernetes.io/csi/volumeDevices/pvc-4/data", OURS);

        assertThat(at("plugins/kubernetes.io/csi/volumeDevices/staging/pvc-4"))
                .isEqualTo(new KubeletPaths.Place(MountRole.STAGING, Optional.of(OURS)));
        assertThat(at("plugins/kubernetes.io/csi/volumeDevices/publish/pvc-4/7c1e"))
                .isEqualTo(new KubeletPaths.Place(MountRole.PUBLISH, Optional.of(OURS)));
        assertThat(at("plugins/kubernetes.io/csi/volumeDevices/pvc-4/dev/7c1e"))
                .isEqualTo(new KubeletPaths.Place(MountRole.DEVICE_MAP, Optional.of(OURS)));
    }

    @Test
    void hearthsEphemeralStagingIsOursAndAnythingElseIsOther() {
        assertThat(KubeletPaths.of(EPHEMERAL.resolve("default-x"), EPHEMERAL, OURS))
                .isEqualTo(new KubeletPaths.Place(MountRole.STAGING, Optional.of(OURS)));
        assertThat(KubeletPaths.of(EPHEMERAL, EPHEMERAL, OURS).role()).isEqualTo(MountRole.OTHER);
        assertThat(KubeletPaths.of(Path.of("/mnt/data"), EPHEMERAL, OURS))
                .isEqualTo(new KubeletPaths.Place(MountRole.OTHER, Optional.empty()));
        assertThat(at("pods/7c1e/volumes/kubernetes.io~empty-dir/cache").role()).isEqualTo(MountRole.OTHER);
    }
}
