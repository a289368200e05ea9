package dev.hearth.storage;

/**
 * How one pool is set up on this node, whatever its kind: {@link dev.hearth.storage.file.FilePoolConfig},
 * {@link dev.hearth.storage.lvm.LvmPoolConfig} or {@link dev.hearth.storage.device.DevicePoolConfig}.
 */
public interface PoolConfig {

    String name();

    /** "file", "lvm", "device". */
    String kind();
}
