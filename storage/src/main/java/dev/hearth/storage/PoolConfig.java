package dev.hearth.storage;

/**
 * How one pool is set up on this node, whatever its kind: {@link dev.hearth.storage.file.FilePoolConfig}
 * or {@link dev.hearth.storage.lvm.LvmPoolConfig}.
 */
public interface PoolConfig {

    String name();

    /** "file", "lvm". */
    String kind();
}
