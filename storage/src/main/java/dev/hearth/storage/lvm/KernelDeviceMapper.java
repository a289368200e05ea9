package dev.hearth.storage.lvm;

import dev.hearth.linux.DeviceMapper;
import dev.hearth.linux.DeviceStatus;
import dev.hearth.linux.TargetStatus;
import dev.hearth.linux.ThinPoolStatus;
import dev.hearth.linux.ThinStatus;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/** {@link DirectReport.DeviceMapperView} through the kernel's device-mapper ioctls: no process, no dmsetup. */
final class KernelDeviceMapper implements DirectReport.DeviceMapperView {

    @Override
    public OptionalInt openCount(String device) throws IOException {
        Optional<DeviceStatus> status = status(device);
        return status.isPresent() ? OptionalInt.of(status.get().openCount()) : OptionalInt.empty();
    }

    @Override
    public Optional<String> liveDeviceNumber(String device) throws IOException {
        return status(device).filter(DeviceStatus::liveTable).map(DeviceStatus::deviceNumber);
    }

    @Override
    public boolean suspended(String device) throws IOException {
        return status(device).map(DeviceStatus::suspended).orElse(false);
    }

    @Override
    public Optional<DirectReport.PoolStatus> thinPool(String device) throws IOException {
        Optional<String> line = target(device, "thin-pool");
        if (line.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(switch (parse(device, line.get(), ThinPoolStatus::parse)) {
            case ThinPoolStatus.Failed _ -> new DirectReport.PoolStatus(-1, 0, 0, 0, 0, true, "", false);
            case ThinPoolStatus.Working w -> new DirectReport.PoolStatus(w.transactionId(), w.usedMetadataBlocks(),
                    w.totalMetadataBlocks(), w.usedDataBlocks(), w.totalDataBlocks(), false, w.mode().word(),
                    w.needsCheck());
        });
    }

    @Override
    public Optional<DirectReport.ThinStatus> thin(String device) throws IOException {
        Optional<String> line = target(device, "thin");
        if (line.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(switch (parse(device, line.get(), ThinStatus::parse)) {
            case ThinStatus.Failed _ -> new DirectReport.ThinStatus(0, true);
            case ThinStatus.Working w -> new DirectReport.ThinStatus(w.mappedSectors(), false);
        });
    }

    /**
     * No device-mapper device can have a name of 128 bytes or more (an LV of a long name in a group
     * of a long name cannot be active): asked for one, the answer is that there is none.
     */
    private static Optional<DeviceStatus> status(String device) throws IOException {
        return DeviceMapper.possibleName(device) ? DeviceMapper.status(device) : Optional.empty();
    }

    /** The status line of the device's one target, if it is of that type. */
    private static Optional<String> target(String device, String type) throws IOException {
        // No commit forced on a thin pool per query (lvs asks the same way); it commits every second anyway.
        if (!DeviceMapper.possibleName(device)) {
            return Optional.empty();
        }
        Optional<List<TargetStatus>> targets = DeviceMapper.tableStatus(device, true);
        if (targets.isEmpty() || targets.get().size() != 1 || !targets.get().getFirst().type().equals(type)) {
            return Optional.empty();
        }
        return Optional.of(targets.get().getFirst().status());
    }

    private static <T> T parse(String device, String line, java.util.function.Function<String, T> parser)
            throws IOException {
        try {
            return parser.apply(line);
        } catch (IllegalArgumentException e) {
            throw new IOException(device + ": " + e.getMessage(), e);
        }
    }
}
