package dev.hearth.driver.inspect;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where the kubelet mounts CSI volumes, and which driver a mount there belongs to. The kubelet's
 * layout (pkg/volume/csi, under its root directory, /var/lib/kubelet by default):
 *
 * <pre>
 * plugins/kubernetes.io/csi/&lt;driver&gt;/&lt;sha256 of the volume ID&gt;/globalmount   filesystem staging
 * plugins/kubernetes.io/csi/pv/&lt;pv&gt;/globalmount                              filesystem staging (before 1.24)
 * pods/&lt;pod uid&gt;/volumes/kubernetes.io~csi/&lt;pv&gt;/mount                     filesystem publish
 * plugins/kubernetes.io/csi/volumeDevices/staging/&lt;pv&gt;                       block staging
 * plugins/kubernetes.io/csi/volumeDevices/publish/&lt;pv&gt;/&lt;pod uid&gt;             block publish
 * plugins/kubernetes.io/csi/volumeDevices/&lt;pv&gt;/dev/&lt;pod uid&gt;                 the kubelet's bind of it
 * </pre>
 *
 * Beside each, the kubelet keeps {@code vol_data.json}, which names the driver ({@code driverName}):
 * next to {@code mount} and {@code globalmount}, and in {@code volumeDevices/<pv>/data/}. The paths
 * are matched by their ends, so a kubelet with another root directory is recognised as well.
 */
final class KubeletPaths {

    private static final String CSI = "/plugins/kubernetes\\.io/csi/";
    /** A block volume's places: the first group is the kubelet's root, the second the PV's name. */
    private static final List<BlockPlace> BLOCK = List.of(
            new BlockPlace(Pattern.compile("(.*)" + CSI + "volumeDevices/staging/([^/]+)"), MountRole.STAGING),
            new BlockPlace(Pattern.compile("(.*)" + CSI + "volumeDevices/publish/([^/]+)/[^/]+"), MountRole.PUBLISH),
            new BlockPlace(Pattern.compile("(.*)" + CSI + "volumeDevices/([^/]+)/dev/[^/]+"), MountRole.DEVICE_MAP));
    private static final Pattern STAGING = Pattern.compile("(.*)" + CSI + "([^/]+)/([^/]+)/globalmount");
    private static final Pattern PUBLISH = Pattern.compile(".*/pods/[^/]+/volumes/kubernetes\\.io~csi/[^/]+/mount");
    private static final Pattern HASH = Pattern.compile("[0-9a-f]{64}");
    private static final Pattern DRIVER_NAME = Pattern.compile("\"driverName\"\\s*:\\s*\"([^\"]*)\"");

    /** What a mount at {@code path} is, and which driver it is for when that can be told. */
    record Place(MountRole role, Optional<String> driver) {}

    private record BlockPlace(Pattern pattern, MountRole role) {}

    private KubeletPaths() {}

    /** @param ephemeral where hearth stages ephemeral inline volumes ({@code STATE_DIR/ephemeral}) */
    static Place of(Path path, Path ephemeral, String ourDriver) {
        String text = path.toString();
        if (path.startsWith(ephemeral) && !path.equals(ephemeral)) {
            return new Place(MountRole.STAGING, Optional.of(ourDriver));
        }
        for (BlockPlace block : BLOCK) {
            Matcher m = block.pattern().matcher(text);
            if (m.matches()) {
                Path data = Path.of(m.group(1), "plugins/kubernetes.io/csi/volumeDevices", m.group(2), "data",
                        "vol_data.json");
                return new Place(block.role(), driverIn(data));
            }
        }
        Matcher staging = STAGING.matcher(text);
        if (staging.matches()) {
            boolean byHash = HASH.matcher(staging.group(3)).matches() && !staging.group(2).equals("pv");
            return new Place(MountRole.STAGING, byHash ? Optional.of(staging.group(2))
                    : driverIn(path.resolveSibling("vol_data.json")));
        }
        if (PUBLISH.matcher(text).matches()) {
            return new Place(MountRole.PUBLISH, driverIn(path.resolveSibling("vol_data.json")));
        }
        return new Place(MountRole.OTHER, Optional.empty());
    }

    /** The driver a kubelet's {@code vol_data.json} names; empty if it is not there or names none. */
    static Optional<String> driverIn(Path volData) {
        try {
            Matcher m = DRIVER_NAME.matcher(Files.readString(volData));
            return m.find() ? Optional.of(m.group(1)) : Optional.empty();
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }
}
