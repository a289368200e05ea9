package dev.hearth.linux;

/**
 * A device-mapper device as DM_DEV_STATUS reports it; what {@code dmsetup info} prints.
 *
 * @param name          its name, as under {@code /dev/mapper}
 * @param uuid          its uuid (LVM's is {@code LVM-<vg uuid><lv uuid>}); empty when it has none
 * @param major         its block device's major number
 * @param minor         its block device's minor number
 * @param openCount     how many times its block device is open: a mount counts once, as does each
 *                      open file descriptor and each device-mapper device stacked on it
 * @param targetCount   the targets of its live table; 0 without one
 * @param eventNumber   bumped by the kernel on each event (a thin pool crossing its low-water mark,
 *                      a table swap); {@code dmsetup info}'s "events"
 * @param suspended     I/O to it is held until it is resumed
 * @param readOnly      it refuses writes
 * @param liveTable     it has an active table (dmsetup's "L"): without one it maps nothing
 * @param inactiveTable a loaded table waits for the next resume to become live (dmsetup's "I")
 */
public record DeviceStatus(String name, String uuid, int major, int minor, int openCount, int targetCount,
        long eventNumber, boolean suspended, boolean readOnly, boolean liveTable, boolean inactiveTable) {

    /** {@code major:minor}, as sysfs and {@code /proc/self/mountinfo} write a device number. */
    public String deviceNumber() {
        return major + ":" + minor;
    }
}
