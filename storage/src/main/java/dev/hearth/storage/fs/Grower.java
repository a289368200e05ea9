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
     *     device, or the tool fails
     * @throws StorageException.Precondition for an ext4 the kernel will not grow for want of
     *     CAP_SYS_RESOURCE (the message names the capability)
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
                // The node's state, which its admin fixes; nothing failed that a retry would not repeat.
                throw new StorageException.Precondition("growing ext4 on " + device + " online needs"
                        + " CAP_SYS_RESOURCE, which this process lacks; grant it to the driver's container. "
                        + e.getMessage(), e);
            }
            throw StorageException.Failed.byTool("growing the " + type.kernelName() + " filesystem on " + device
                    + ": " + e.getMessage(), e);
        }
    }

    /*
     * An unmounted ext4 grows before it is first mounted, offline, which needs no CAP_SYS_RESOURCE
     * (an online grow does): checkExt4 (resize2fs insists on a freshly checked filesystem), then
     * resizeExt4. Other types grow once mounted. The caller keeps a record around resizeExt4 alone,
     * so that repairExt4 (-y) only ever runs on damage a cut-short resize of its own left.
     */

    /**
     * Whether the unmounted ext4 on {@code device} ends more than {@link #SLACK_BYTES} short of it:
     * whether it has to grow.
     *
     * @throws StorageException.Failed if the sizes cannot be read
     */
    public boolean ext4FallsShort(Path device) {
        try {
            long deviceSize = BlockDevices.size(device);
            long filesystemSize = FilesystemSize.of(device).orElseThrow(() -> new StorageException.Failed(
                    "no ext4 superblock found on " + device + " to grow"));
            return deviceSize - filesystemSize >= SLACK_BYTES;
        } catch (IOException e) {
            throw new StorageException.Failed("reading the sizes of " + device + " and its ext4: " + e.getMessage(), e);
        }
    }

    /**
     * {@code e2fsck -f -p}: repairs only what is safe without asking (exit 1, "errors corrected", is
     * fine), and refuses anything else.
     *
     * @throws StorageException.Precondition if it finds errors -p does not repair (exit 4): the volume's damage
     * @throws StorageException.Failed if e2fsck itself fails
     */
    public void checkExt4(Path device) {
        try {
            tool.run(List.of("e2fsck", "-f", "-p", device.toAbsolutePath().toString()), GROW_TIMEOUT);
        } catch (ToolException e) {
            int exit = e.exitCode().orElse(-1);
            if (exit == 4) {
                // Errors left uncorrected: damage that -p does not repair on its own, in the volume, not the node.
                throw new StorageException.Precondition("the ext4 on " + device + " has errors that e2fsck -p does not"
                        + " repair, so it is neither grown nor mounted; repair it (e2fsck -f) before staging it: "
                        + e.getMessage(), e);
            }
            if (exit != 1) {
                throw StorageException.Failed.byTool("e2fsck of " + device + " before growing it: " + e.getMessage(), e);
            }
        }
    }

    /**
     * {@code e2fsck -f -y}, for an ext4 whose last offline grow was cut short (the caller holds the
     * record that proves it): a resize2fs killed midway leaves new groups, free counts or the resize
     * inode half written, which -p refuses to repair. A grow adds groups after the ones that held
     * data before it and moves nothing while the reserved descriptor blocks suffice (mkfs.ext4
     * reserves enough for 1,024 times the size it made).
     *
     * @throws StorageException.Failed if e2fsck fails or leaves errors uncorrected
     */
    public void repairExt4(Path device) {
        try {
            tool.run(List.of("e2fsck", "-f", "-y", device.toAbsolutePath().toString()), GROW_TIMEOUT);
        } catch (ToolException e) {
            // 1: errors corrected; 2: corrected, and a mounted root would need a reboot (not ours).
            if (e.exitCode().orElse(-1) > 2) {
                throw StorageException.Failed.byTool("e2fsck -y of " + device + ", whose last grow was cut short: "
                        + e.getMessage(), e);
            }
        }
    }

    /**
     * {@code resize2fs}: grows the unmounted, freshly checked ext4 to fill its device.
     *
     * @throws StorageException.Failed if resize2fs fails
     */
    public void resizeExt4(Path device) {
        try {
            tool.run(List.of("resize2fs", device.toAbsolutePath().toString()), GROW_TIMEOUT);
        } catch (ToolException e) {
            throw StorageException.Failed.byTool("growing the ext4 filesystem on " + device + ": " + e.getMessage(), e);
        }
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
