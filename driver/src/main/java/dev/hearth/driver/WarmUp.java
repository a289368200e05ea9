package dev.hearth.driver;

import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.driver.server.LockKeys;
import dev.hearth.driver.server.RequestLogging;
import dev.hearth.linux.FileOps;
import dev.hearth.linux.LibcLinks;
import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.Pool;
import dev.hearth.storage.Pools;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.mount.Mounter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Runs, once the driver serves and on a thread of its own, the parts of a volume's first
 * lifecycle that change nothing on the node: the libc functions linked ({@link LibcLinks}), each
 * pool's {@link Pool#warmUp}, a stage's read-only steps ({@link Mounter#warmUp}) on a blank file
 * made as a file pool makes an image, a record written as a volume's is, both in the state
 * directory and deleted, the parsing, log line, host check and lock keys of each lifecycle
 * request, and the services' own CreateVolume, NodeUnpublishVolume, NodeUnstageVolume and
 * DeleteVolume of a volume of a scratch pool that is never attached ({@link Rehearsal}), a few
 * times each.
 *
 * <p>Why: the JVM interprets a method the first times it runs, links each call site on its first
 * use, and compiles a method after a few calls (C1, after about four under the image's flags). A
 * node plugin's paths never get hot, so a first lifecycle after a start paid for all of that:
 * 3.8x a later one without this, 3.0x with it, in alternating starts (test/bench/ROUNDS.md). The
 * kubelet and the provisioner make their first volume calls seconds after the plugin registers;
 * this begins 0.3 s after the driver serves and takes about 120 ms, on a thread of its own. The
 * libc functions are linked at once, before that delay: they are a third of the CPU a lifecycle
 * begun the moment the driver serves spent in its handler (median 208 -> 186 ms with them linked
 * at once, 10 alternating starts). An error ends it, logged at FINE: each request does its own
 * work anyway.
 */
final class WarmUp {

    private static final Logger LOG = Logger.getLogger(WarmUp.class.getName());
    /** Enough calls for C1 to have compiled what these paths share with a request's. */
    private static final int ROUNDS = 8;
    /**
     * How long after the driver serves the warm-up begins: its first calls (the Probe that says it
     * is up) are answered first, without the warm-up and the compiles it sets off taking the CPU.
     */
    static final Duration DELAY = Duration.ofMillis(300);
    /** How long {@link #stop} waits for the warm-up to end. */
    private static final Duration STOP_WAIT = Duration.ofSeconds(10);
    /** The blank file a stage's probe reads: more than the first and last MiB it reads of a device. */
    private static final long BLANK_BYTES = 4L << 20;
    /** How often a warm-up that waits for calls at work looks again. */
    private static final Duration QUIET_POLL = Duration.ofMillis(2);
    /**
     * How long no call must have come before a warm-up that saw one goes on: the calls of a burst or
     * of a volume's lifecycle come a few ms apart, and a step begun in such a gap put its CPU on
     * the next calls (24-30 ms of it inside a burst of 64 creates, when it looked only at calls at
     * work the moment it asked).
     */
    static final Duration QUIET_SPAN = Duration.ofMillis(20);

    private WarmUp() {}

    /**
     * Starts the warm-up, {@link #DELAY} from now, with {@code first} run before the rest (the call
     * meters registered); the thread is a daemon, so it never holds a stopping driver up.
     */
    static Thread start(Pools pools, Mounter mounter, HostGate gate, Path stateDir, Rehearsal.Setup rehearsal,
            Runnable first) {
        return start(pools, mounter, gate, stateDir, rehearsal, first, () -> false);
    }

    /**
     * As above; each of its steps waits while {@code busy} says calls are at work, which warm their
     * own paths, so that the warm-up's CPU does not fall on them.
     */
    static Thread start(Pools pools, Mounter mounter, HostGate gate, Path stateDir, Rehearsal.Setup rehearsal,
            Runnable first, BooleanSupplier busy) {
        return Thread.ofPlatform().name("hearth-warm-up").daemon().start(() -> {
            // At once, not after the delay: a volume call begun the moment the driver serves needs
            // them, and the linking takes no lock a call waits on but the one function's it links.
            try {
                LibcLinks.linkAll();
            } catch (RuntimeException e) {
                LOG.log(Level.FINE, "warm-up: " + e, e);
            }
            try {
                Thread.sleep(DELAY);
            } catch (InterruptedException e) {
                return;
            }
            if (!quiet(busy)) {
                return;
            }
            try {
                first.run();
            } catch (RuntimeException e) {
                LOG.log(Level.FINE, "warm-up: " + e, e);
            }
            run(pools, mounter, gate, stateDir, rehearsal, busy);
        });
    }

    /**
     * Ends the warm-up early, if it still runs, and waits until it has removed its scratch files:
     * a stopped driver leaves nothing of it behind. It stops after the round it is in, a few ms.
     */
    static void stop(Thread warmUp) {
        warmUp.interrupt();
        try {
            if (!warmUp.join(STOP_WAIT)) {
                LOG.warning(() -> "the warm-up did not stop within " + STOP_WAIT + "; its scratch files in the state "
                        + "directory go at the next start");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Returns whether it ran to the end. */
    static boolean run(Pools pools, Mounter mounter, HostGate gate, Path stateDir, Rehearsal.Setup setup) {
        return run(pools, mounter, gate, stateDir, setup, () -> false);
    }

    /**
     * Waits while {@code busy}, and once it has been, until it has not been for {@link #QUIET_SPAN};
     * false if interrupted meanwhile (the driver stops).
     */
    private static boolean quiet(BooleanSupplier busy) {
        long quietSince = 0; // 0: no call seen in this wait, go on at the first quiet look
        boolean seen = false;
        while (true) {
            if (busy.getAsBoolean()) {
                seen = true;
                quietSince = System.nanoTime();
            } else if (!seen || System.nanoTime() - quietSince >= QUIET_SPAN.toNanos()) {
                return !Thread.currentThread().isInterrupted();
            }
            try {
                Thread.sleep(QUIET_POLL);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }

    static boolean run(Pools pools, Mounter mounter, HostGate gate, Path stateDir, Rehearsal.Setup setup,
            BooleanSupplier busy) {
        long started = System.nanoTime();
        Path blank = stateDir.resolve(".warm-up-blank");
        Path record = stateDir.resolve(".warm-up-record");
        Rehearsal rehearsal = null;
        try {
            if (!quiet(busy)) {
                return false;
            }
            LibcLinks.linkAll(); // a no-op after start() linked them; run on its own (tests) links them here
            // Replaces what a driver killed in its warm-up left.
            Files.deleteIfExists(record.resolveSibling(record.getFileName() + ".tmp"));
            Files.deleteIfExists(record);
            Files.deleteIfExists(blank);
            Files.createFile(blank);
            FileOps.fallocate(blank, 0, BLANK_BYTES); // as a file pool makes an image: reads as zeros
            List<Sample<?>> requests = samples();
            rehearsal = Rehearsal.open(stateDir, setup);
            Rehearsal scratch = rehearsal;
            int[] mounted = {0};
            // Each step waits for quiet first: calls come first, and a step is not cut short.
            List<Step> steps = List.of(
                    () -> mounted[0] += scratch.round() ? 1 : 0,
                    () -> {
                        for (Pool pool : pools.all()) {
                            pool.warmUp();
                        }
                    },
                    () -> {
                        mounter.warmUp(blank);
                        AtomicFiles.write(record, "a volume's record is written like this one\n");
                        Files.delete(record);
                    },
                    () -> {
                        for (Sample<?> request : requests) {
                            request.handle(gate);
                        }
                    });
            rounds:
            for (int round = 0; round < ROUNDS; round++) {
                for (Step step : steps) {
                    if (!quiet(busy)) {
                        break rounds;
                    }
                    step.run();
                }
            }
            if (Thread.currentThread().isInterrupted()) {
                LOG.fine("warm-up stopped: the driver stops");
                return false;
            }
            LOG.fine(() -> String.format("warm-up done in %.1f ms; %d of its volumes staged and published in a mount"
                    + " namespace of its own", (System.nanoTime() - started) / 1e6, mounted[0]));
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.FINE, "warm-up stopped: " + e, e);
            return false;
        } finally {
            for (Path scratch : List.of(blank, record)) {
                try {
                    Files.deleteIfExists(scratch);
                } catch (IOException e) {
                    LOG.log(Level.FINE, "warm-up: " + scratch + " stays: " + e, e);
                }
            }
            try {
                if (rehearsal != null) {
                    rehearsal.close();
                } else {
                    Rehearsal.removeLeftovers(stateDir);
                }
            } catch (IOException | RuntimeException e) {
                LOG.log(Level.FINE, "warm-up: its scratch pool stays until the next start: " + e, e);
            }
        }
    }

    /** One step of a warm-up round. */
    @FunctionalInterface
    private interface Step {
        void run() throws IOException;
    }

    /** A request as the wire brings it, and its parser. */
    private record Sample<M extends Message>(byte[] bytes, Parser<M> parser) {

        static <M extends Message> Sample<M> of(M message, Parser<M> parser) {
            return new Sample<>(message.toByteArray(), parser);
        }

        /** What the driver does with such a request before its handler runs: parse, name, gate, lock. */
        void handle(HostGate gate) throws IOException {
            M request = parser.parseFrom(bytes);
            RequestLogging.idsOf(request);
            gate.refusal(request);
            LockKeys.of(request);
        }
    }

    /** The requests of a filesystem volume's lifecycle, as the provisioner and the kubelet send them. */
    private static List<Sample<?>> samples() {
        String volumeId = VolumeId.mint("default", "pvc-warm-up").toString();
        String staging = "/var/lib/kubelet/plugins/kubernetes.io/csi/hearth.dev/0/globalmount";
        String target = "/var/lib/kubelet/pods/0/volumes/kubernetes.io~csi/pvc-warm-up/mount";
        VolumeCapability capability = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
        return List.of(
                Sample.of(CreateVolumeRequest.newBuilder().setName("pvc-warm-up")
                        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1L << 30))
                        .addVolumeCapabilities(capability)
                        .putParameters("csi.storage.k8s.io/pvc/name", "warm-up")
                        .putParameters("csi.storage.k8s.io/pvc/namespace", "default")
                        .build(), CreateVolumeRequest.parser()),
                Sample.of(NodeStageVolumeRequest.newBuilder().setVolumeId(volumeId).setStagingTargetPath(staging)
                        .setVolumeCapability(capability).build(), NodeStageVolumeRequest.parser()),
                Sample.of(NodePublishVolumeRequest.newBuilder().setVolumeId(volumeId).setStagingTargetPath(staging)
                        .setTargetPath(target).setVolumeCapability(capability).build(),
                        NodePublishVolumeRequest.parser()),
                Sample.of(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volumeId).setTargetPath(target).build(),
                        NodeUnpublishVolumeRequest.parser()),
                Sample.of(NodeUnstageVolumeRequest.newBuilder().setVolumeId(volumeId).setStagingTargetPath(staging)
                        .build(), NodeUnstageVolumeRequest.parser()),
                Sample.of(DeleteVolumeRequest.newBuilder().setVolumeId(volumeId).build(), DeleteVolumeRequest.parser()));
    }
}
