package dev.hearth.storage.probe;

import dev.hearth.storage.probe.Signature.Kind;
import java.io.IOException;
import java.util.List;

/** Swap and hibernation images: the signature ends the first page, whose size the writer chose. */
final class SwapAreas {

    private static final long[] PAGE_SIZES = {4096, 8192, 16384, 32768, 65536};
    private static final List<String> SWAP = List.of("SWAPSPACE2", "SWAP-SPACE");
    private static final List<String> SUSPEND = List.of("S1SUSPEND", "S2SUSPEND", "ULSUSPEND", "LINHIB0001");

    private SwapAreas() {}

    static void detect(DeviceBytes d, List<Signature> found) throws IOException {
        for (long page : PAGE_SIZES) {
            long offset = page - 10;
            for (String magic : SWAP) {
                if (d.has(offset, magic)) {
                    found.add(new Signature(Kind.SWAP, "swap", offset));
                }
            }
            for (String magic : SUSPEND) {
                if (d.has(offset, magic)) {
                    found.add(new Signature(Kind.SWAP, "swsuspend", offset));
                }
            }
        }
    }
}
