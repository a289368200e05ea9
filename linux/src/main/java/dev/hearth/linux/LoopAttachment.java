package dev.hearth.linux;

import java.nio.file.Path;

/**
 * A configured loop device as sysfs reports it. {@code backingDeleted} means the backing file was
 * unlinked while attached: the device still serves the old inode, and {@code backingFile} is only
 * the name it had.
 */
public record LoopAttachment(LoopDevice device, Path backingFile, boolean backingDeleted, boolean readOnly,
                             boolean directIo) {}
