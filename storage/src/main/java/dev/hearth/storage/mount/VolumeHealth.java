package dev.hearth.storage.mount;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.LoopDevice;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeCondition;
import dev.hearth.storage.fs.Ext4Health;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A published volume's condition as this node sees it, beyond what its pool knows: the loop
 * device still attached to a live backing file, something still mounted at the volume path, and
 * the filesystem not reporting errors.
 */
public final class VolumeHealth {

    private VolumeHealth() {}

    /** What a volume path holds, as the mount table shows it. */
    public enum AtPath {
        /** The volume: its stage, a publish of its filesystem, a bind of its device node or of its read-only view. */
        VOLUME,
        /** Nothing mounted: a publish since taken down, or never made. */
        NOTHING,
        /** A mount that is not the volume's: another volume, a host filesystem. */
        OTHER
    }

    /**
     * What is at the volume path for the volume whose device is {@code device}; {@link AtPath#NOTHING}
     * when the volume is not attached on this node, as nothing there can then be shown to be the volume.
     */
    public static AtPath at(Optional<Path> device, Path volumePath) {
        return device.isEmpty() ? AtPath.NOTHING : Publisher.at(volumePath, device.get());
    }

    /**
     * Whether something other than the volume whose device is {@code device} is mounted at {@code
     * path}; a volume not attached on this node is mounted nowhere here, so then anything mounted.
     */
    public static boolean holdsOther(Optional<Path> device, Path path) {
        return Publisher.holdsOther(path, device);
    }

    /**
     * @param pool the pool's own verdict, which wins when abnormal
     * @param device the device the volume is attached as, if any
     * @param at what is at the volume path (see {@link #at}); never {@link AtPath#OTHER}, which is not the volume
     */
    public static VolumeCondition check(VolumeCondition pool, Optional<Path> device, Path volumePath, AtPath at) {
        if (pool.abnormal()) {
            return pool;
        }
        if (device.isEmpty()) {
            return VolumeCondition.abnormal("the volume's device is not attached on this node any more");
        }
        try {
            Optional<LoopDevice> number = LoopDevice.fromPath(device.get());
            Optional<LoopAttachment> loop = number.isPresent() ? Loop.describe(number.get()) : Optional.empty();
            if (loop.isPresent() && loop.get().backingDeleted()) {
                return VolumeCondition.abnormal(device.get() + " serves a backing file that has been deleted: "
                        + loop.get().backingFile());
            }
            if (at != AtPath.VOLUME) {
                return VolumeCondition.abnormal("nothing is mounted at " + volumePath + " any more");
            }
            OptionalLong errors = Ext4Health.errorCount(device.get());
            if (errors.isPresent() && errors.getAsLong() > 0) {
                return VolumeCondition.abnormal("ext4 on " + device.get() + " has recorded " + errors.getAsLong()
                        + " errors; check the kernel log and run e2fsck");
            }
            return VolumeCondition.NORMAL;
        } catch (IOException e) {
            throw new StorageException.Failed("checking " + volumePath + ": " + e.getMessage(), e);
        }
    }
}
