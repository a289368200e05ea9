package dev.hearth.linux;

/**
 * One target of a device-mapper device's live table, with the status line its target type
 * reports; one line of {@code dmsetup status}. {@link ThinPoolStatus#parse} and
 * {@link ThinStatus#parse} read the status of the {@code thin-pool} and {@code thin} types.
 *
 * @param startSector   where the target begins in the device, in 512-byte sectors
 * @param lengthSectors how much of the device it maps, in 512-byte sectors
 * @param type          the target type, e.g. {@code linear}, {@code thin-pool}, {@code thin}, {@code snapshot}
 * @param status        what the target type reports of itself; empty for types that report nothing (linear)
 */
public record TargetStatus(long startSector, long lengthSectors, String type, String status) {}
