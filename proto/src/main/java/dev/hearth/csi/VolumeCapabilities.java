package dev.hearth.csi;

import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.csi.v1.VolumeCapability.AccessMode.Mode;
import io.grpc.Status;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Which volume capabilities hearth serves: mount or block, on one node. A local disk cannot be
 * shared across nodes, so every MULTI_NODE mode is refused.
 */
public final class VolumeCapabilities {

    public static final Set<Mode> ACCESS_MODES = EnumSet.of(Mode.SINGLE_NODE_WRITER, Mode.SINGLE_NODE_READER_ONLY,
            Mode.SINGLE_NODE_SINGLE_WRITER, Mode.SINGLE_NODE_MULTI_WRITER);

    private VolumeCapabilities() {}

    /** Why hearth cannot serve this capability, or empty when it can. */
    public static Optional<String> unsupported(VolumeCapability capability) {
        if (capability.getAccessTypeCase() == VolumeCapability.AccessTypeCase.ACCESSTYPE_NOT_SET) {
            return Optional.of("volume capability has neither mount nor block access type");
        }
        if (!capability.hasAccessMode()) {
            return Optional.of("volume capability has no access mode");
        }
        Mode mode = capability.getAccessMode().getMode();
        if (!ACCESS_MODES.contains(mode)) {
            String named = mode == Mode.UNRECOGNIZED
                    ? capability.getAccessMode().getModeValue() + " (a number CSI does not define)" : mode.name();
            return Optional.of("access mode " + named + " is not supported; a local volume serves one node: "
                    + ACCESS_MODES);
        }
        return Optional.empty();
    }

    /** Checks a request's capabilities, answering INVALID_ARGUMENT for a missing or unsupported one. */
    public static void require(List<VolumeCapability> capabilities) {
        if (capabilities.isEmpty()) {
            throw Status.INVALID_ARGUMENT.withDescription("volume_capabilities are required").asRuntimeException();
        }
        capabilities.forEach(VolumeCapabilities::require);
    }

    public static void require(VolumeCapability capability) {
        unsupported(capability).ifPresent(reason -> {
            throw Status.INVALID_ARGUMENT.withDescription(reason).asRuntimeException();
        });
    }

    public static boolean readOnly(VolumeCapability capability) {
        return capability.getAccessMode().getMode() == Mode.SINGLE_NODE_READER_ONLY;
    }
}
