package dev.hearth.linux;

import java.nio.file.Path;

/**
 * A configured loop device as sysfs reports it. {@code backingDeleted} means the backing file was
 * unlinked while attached: the device still serves the old inode, and {@code backingFile} is only
 * the name it had. {@code detaching} means the device goes at its last close (a detach asked while
 * someone still had it open, or a device set up to clear itself): until then it serves the file as
 * before, but nothing that does not hold it open, such as a bind mount of its node, keeps it.
 */
public record LoopAttachment(LoopDevice device, Path backingFile, boolean backingDeleted, boolean readOnly,
                             boolean directIo, boolean detaching) {}
