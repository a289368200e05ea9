package dev.hearth.storage;

import java.nio.file.Path;

/**
 * A volume's block device on this node, and whether the call that returned it attached it (so a
 * failed stage knows what is its own to detach again, without reading the device table twice).
 */
public record Attachment(Path device, boolean attachedNow) {}
