package dev.hearth.storage;

/**
 * How one pool is set up on this node, whatever its kind: {@link dev.hearth.storage.file.FilePoolConfig},
 * {@link dev.hearth.storage.lvm.LvmPoolConfig} or {@link dev.hearth.storage.device.DevicePoolConfig}.
 */
public interface PoolConfig {

    String name();

    /** "file", "lvm", "device". */
    String kind();

    /**
     * The whole disks this pool takes (a device pool's disks, the disks an lvm pool grows its group
     * onto), as {@code hearth disks} and the disk assessor apply it; none for a pool that takes no disks.
     */
    default java.util.Optional<dev.hearth.storage.device.DiskAssessor.Rule> diskRule() {
        return java.util.Optional.empty();
    }
}
