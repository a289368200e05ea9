package dev.hearth.storage.fs;

import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.Capabilities;
import dev.hearth.linux.XfsGeometry;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.tool.ToolException;
import dev.hearth.storage.tool.ToolResult;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Grows a mounted filesystem to fill its (grown) device, online, for NodeExpandVolume. Idempotent:
 * when the filesystem already fills the device no tool runs at all.
 */
public final class Grower {

    // An online grow adds block groups or AGs and writes their metadata: seconds, minutes on slow disks.
    static final Duration GROW_TIMEOUT = Duration.ofMinutes(10);
    /**
     * How far below the device size a filesystem may end and still count as filling it. Each rounds
     * the device down to whole blocks, and ext4 and xfs leave off a last group or AG too small to be
     * worth having; those can never be used, so growing "to" them again would run the tool forever.
     */
    static final long SLACK_BYTES = 1L << 20;

    /** How a grow command is run; tests wrap the real runner to see which commands ran. */
    @FunctionalInterface
    interface Tool {
        ToolResult run(List<String> argv, Duration timeout);
    }

    private final Tool tool;

    public Grower(ToolRunner runner) {
        this(runner::run);
    }

    Grower(Tool tool) {
        this.tool = tool;
    }

    /**
     * Grows the filesystem of {@code type} on {@code device}, mounted at {@code mountPoint}, to the
     * device's current size: {@code resize2fs <device>}, {@code xfs_growfs -d <mountPoint>} or
     * {@code btrfs filesystem resize max <mountPoint>}.
     *
     * @throws StorageException.Failed if the sizes cannot be read, the filesystem is larger than its
     *     device, or the tool fails (for ext4 refused for want of CAP_SYS_RESOURCE, the message names
     *     the capability)
     */
    public void growMounted(Path device, Path mountPoint, FilesystemType type) {
        long deviceSize;
        long filesystemSize;
        try {
            deviceSize = BlockDevices.size(device);
            filesystemSize = currentSize(device, mountPoint, type);
        } catch (IOException e) {
            throw new StorageException.Failed("reading the sizes of " + device + " and its " + type.kernelName()
                    + " filesystem: " + e.getMessage(), e);
        }
        if (filesystemSize > deviceSize) {
            throw new StorageException.Failed("the " + type.kernelName() + " filesystem on " + device + " is "
                    + filesystemSize + " bytes, larger than the device's " + deviceSize + "; refusing to resize it");
        }
        if (deviceSize - filesystemSize < SLACK_BYTES) {
            return;
        }
        List<String> command = growCommand(type, device.toAbsolutePath(), mountPoint.toAbsolutePath());
        try {
            tool.run(command, GROW_TIMEOUT);
        } catch (ToolException e) {
            if (type == FilesystemType.EXT4 && lacksSysResource()) {
                throw StorageException.Failed.byTool("growing ext4 on " + device + " online needs CAP_SYS_RESOURCE,"
                        + " which this process lacks; grant it to the driver's container. " + e.getMessage(), e);
            }
            throw StorageException.Failed.byTool("growing the " + type.kernelName() + " filesystem on " + device
                    + ": " + e.getMessage(), e);
        }
    }

    /**
     * Grows an unmounted ext4 to fill its device before it is first mounted: {@code e2fsck -f -p}
     * (resize2fs insists on a freshly checked filesystem) then {@code resize2fs}. Offline, it needs
     * no CAP_SYS_RESOURCE, which an online grow does. Other types grow once mounted; a filesystem
     * that already fills its device is left alone without running a tool.
     *
     * @return whether it grew the filesystem
     * @throws StorageException.Failed if the sizes cannot be read or e2fsck or resize2fs fails
     */
    public boolean growUnmountedExt4(Path device) {
        long deviceSize;
        long filesystemSize;
        try {
            deviceSize = BlockDevices.size(device);
            filesystemSize = FilesystemSize.of(device).orElseThrow(() -> new StorageException.Failed(
                    "no ext4 superblock found on " + device + " to grow"));
        } catch (IOException e) {
            throw new StorageException.Failed("reading the sizes of " + device + " and its ext4: " + e.getMessage(), e);
        }
        if (deviceSize - filesystemSize < SLACK_BYTES) {
            return false;
        }
        Path target = device.toAbsolutePath();
        // -p repairs only what is safe without asking; exit 1 means "errors corrected", which is fine.
        try {
            tool.run(List.of("e2fsck", "-f", "-p", target.toString()), GROW_TIMEOUT);
        } catch (ToolException e) {
            if (e.exitCode().orElse(-1) != 1) {
                throw StorageException.Failed.byTool("e2fsck of " + device + " before growing it: " + e.getMessage(), e);
            }
        }
        try {
            tool.run(List.of("resize2fs", target.toString()), GROW_TIMEOUT);
        } catch (ToolException e) {
            throw StorageException.Failed.byTool("growing the ext4 filesystem on " + device + ": " + e.getMessage(), e);
        }
        return true;
    }

    /** The size the mounted filesystem has now, as the kernel sees it. */
    private static long currentSize(Path device, Path mountPoint, FilesystemType type) throws IOException {
        if (type == FilesystemType.XFS) {
            return XfsGeometry.dataBytes(mountPoint); // its on-disk superblock lags behind a grow
        }
        return FilesystemSize.of(device).orElseThrow(() -> new StorageException.Failed(
                "no " + type.kernelName() + " superblock found on " + device + " to grow"));
    }

    static List<String> growCommand(FilesystemType type, Path device, Path mountPoint) {
        return switch (type) {
            // resize2fs finds the mount itself and resizes through it (EXT4_IOC_RESIZE_FS).
            case EXT4 -> List.of("resize2fs", device.toString());
            case XFS -> List.of("xfs_growfs", "-d", mountPoint.toString());
            // Single-device filesystems: "max" resizes devid 1.
            case BTRFS -> List.of("btrfs", "filesystem", "resize", "max", mountPoint.toString());
        };
    }

    private static boolean lacksSysResource() {
        try {
            return !Capabilities.effective(Capabilities.CAP_SYS_RESOURCE);
        } catch (IOException e) {
            return false; // cannot tell; the tool's own message has to do
        }
    }
}
