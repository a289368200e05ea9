package dev.hearth.storage.file;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.LoopDevice;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The node's loop devices as a file pool reads and changes them: sysfs and the loop ioctls in
 * production; a seam through which tests count how much of the node one request reads.
 */
interface LoopTable {

    /** Every configured device: its cost grows with the number of loop devices on the node. */
    List<LoopAttachment> list() throws IOException;

    /** One device, from its own sysfs directory: the same cost on any node. */
    Optional<LoopAttachment> describe(LoopDevice device) throws IOException;

    LoopDevice attach(Path image, boolean directIo) throws IOException;

    void detach(LoopDevice device) throws IOException;

    /** Takes back a detach that waits for the device's last close; false if the device is gone. */
    boolean keep(LoopDevice device) throws IOException;

    LoopTable SYSFS = new LoopTable() {
        @Override
        public List<LoopAttachment> list() throws IOException {
            return Loop.list();
        }

        @Override
        public Optional<LoopAttachment> describe(LoopDevice device) throws IOException {
            return Loop.describe(device);
        }

        @Override
        public LoopDevice attach(Path image, boolean directIo) throws IOException {
            return Loop.attach(image, false, directIo);
        }

        @Override
        public void detach(LoopDevice device) throws IOException {
            Loop.detach(device);
        }

        @Override
        public boolean keep(LoopDevice device) throws IOException {
            return Loop.keep(device);
        }
    };
}
