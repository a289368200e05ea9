package dev.hearth.storage.probe;

import java.io.IOException;
import java.util.List;

/** Looks for one family of signatures and adds what it finds. */
@FunctionalInterface
interface Detector {
    void detect(DeviceBytes device, List<Signature> found) throws IOException;
}
