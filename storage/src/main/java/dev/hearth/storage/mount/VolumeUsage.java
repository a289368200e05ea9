package dev.hearth.storage.mount;

import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.FileSystems;
import dev.hearth.linux.FsStats;
import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** How much of a published volume is used: bytes and inodes of a filesystem, or a block device's size. */
public sealed interface VolumeUsage {

    record Filesystem(long totalBytes, long availableBytes, long usedBytes, long totalInodes, long freeInodes,
            long usedInodes) implements VolumeUsage {}

    record Block(long totalBytes) implements VolumeUsage {}

    /** Reads the usage at a volume path: statvfs for a directory, the device size for a device file. */
    static VolumeUsage of(Path volumePath) {
        try {
            if (BlockDevices.isBlockDevice(volumePath)) {
                return new Block(BlockDevices.size(volumePath));
            }
            if (!Files.isDirectory(volumePath)) {
                throw new StorageException.NotFound("nothing is published at " + volumePath);
            }
            FsStats fs = FileSystems.statvfs(volumePath);
            return new Filesystem(fs.totalBytes(), fs.availableBytes(), fs.totalBytes() - fs.freeBytes(),
                    fs.totalInodes(), fs.freeInodes(), fs.totalInodes() - fs.freeInodes());
        } catch (IOException e) {
            throw new StorageException.Failed("reading usage of " + volumePath + ": " + e.getMessage(), e);
        }
    }
}
