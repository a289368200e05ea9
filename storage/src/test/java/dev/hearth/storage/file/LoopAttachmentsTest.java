package dev.hearth.storage.file;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.storage.Attachment;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** How much of the node's loop devices a file pool reads to find, attach and detach one volume. */
@RequiresRoot
class LoopAttachmentsTest {

    private static final int IDLE_DEVICES = 200;

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private final CountingTable table = new CountingTable();

    @Test
    void aVolumesAttachLookupsAndDetachReadNoneOfTheNodesOtherLoopDevices() throws IOException {
        Set<LoopDevice> idle = attachIdleDevices(IDLE_DEVICES);
        FilePool pool = open();
        VolumeId first = create(pool, "first");
        pool.attach(first); // the pool's first lookup learns the node's devices, once
        pool.detach(first);
        VolumeId volume = create(pool, "second");
        table.reset();

        Attachment attached = pool.attach(volume);
        Optional<Path> found = pool.attachedDevice(volume);
        Attachment again = pool.attach(volume);
        pool.detach(volume);
        Optional<Path> afterDetach = pool.attachedDevice(volume);

        assertThat(attached.attachedNow()).isTrue();
        assertThat(found).contains(attached.device());
        assertThat(again).isEqualTo(new Attachment(attached.device(), false));
        assertThat(afterDetach).isEmpty();
        assertThat(table.scans.get()).as("scans of every loop device").isZero();
        assertThat(table.described).as("devices whose sysfs was read")
                .containsOnly(LoopDevice.fromPath(attached.device()).orElseThrow())
                .doesNotContainAnyElementsOf(idle);
    }

    /**
     * A detach while someone else still has the device open waits for their last close; an attach
     * before it takes the detach back and gets the same device, which the close then leaves bound:
     * the volume's until it is detached again.
     */
    @Test
    void anAttachTakesBackADetachStillWaitingForTheLastClose() throws IOException {
        FilePool pool = open();
        VolumeId volume = create(pool, "pvc");
        Attachment first = pool.attach(volume);

        Attachment again;
        try (FileChannel holder = FileChannel.open(first.device(), StandardOpenOption.READ)) {
            pool.detach(volume);
            again = pool.attach(volume);
        }

        assertThat(again).isEqualTo(new Attachment(first.device(), true));
        assertThat(pool.attachedDevice(volume)).contains(first.device());
        assertThat(Loop.describe(LoopDevice.fromPath(first.device()).orElseThrow())).get()
                .extracting(LoopAttachment::detaching).isEqualTo(false);
        pool.detach(volume);
        assertThat(pool.attachedDevice(volume)).isEmpty();
    }

    @Test
    void aDeviceAttachedBeforeThePoolOpenedIsFoundAndNotAttachedAgain() throws IOException {
        FilePool pool = open();
        VolumeId volume = create(pool, "pvc");
        pool.close();
        Path image = dir.resolve("pool").resolve(volume + ".img");
        LoopDevice before = Loop.attach(image, false, true);
        cleanup.add(() -> Loop.detach(before));

        FilePool reopened = open();

        assertThat(reopened.attachedDevice(volume)).contains(before.path());
        assertThat(reopened.attach(volume)).isEqualTo(new Attachment(before.path(), false));
        reopened.detach(volume);
        assertThat(Loop.describe(before)).isEmpty();
    }

    @Test
    void aDeviceDetachedBehindThePoolsBackIsNoLongerItsVolumesDevice() throws IOException {
        FilePool pool = open();
        VolumeId volume = create(pool, "pvc");
        Path device = pool.attach(volume).device();
        Loop.detach(LoopDevice.fromPath(device).orElseThrow());

        assertThat(pool.attachedDevice(volume)).isEmpty();
        Attachment again = pool.attach(volume);
        assertThat(again.attachedNow()).isTrue();
        assertThat(Loop.describe(LoopDevice.fromPath(again.device()).orElseThrow()).map(LoopAttachment::backingFile))
                .contains(dir.resolve("pool").toRealPath().resolve(volume + ".img"));
        pool.detach(volume);
    }

    @Test
    void aDeviceStillOpenWhenDetachedStaysTheVolumesDeviceUntilItsLastClose() throws Exception {
        FilePool pool = open();
        VolumeId volume = create(pool, "pvc");
        Path device = pool.attach(volume).device();

        Optional<Path> whileOpen;
        try (FileChannel holder = FileChannel.open(device, StandardOpenOption.READ)) { // as a second mount would
            pool.detach(volume);
            whileOpen = pool.attachedDevice(volume);
        }
        Optional<Path> afterClose = pool.attachedDevice(volume);
        for (int i = 0; i < 50 && afterClose.isPresent(); i++) { // the kernel clears it at the last close
            Thread.sleep(100);
            afterClose = pool.attachedDevice(volume);
        }

        assertThat(whileOpen).contains(device);
        assertThat(afterClose).isEmpty();
    }

    @Test
    void aDeviceOpenAMomentLongerIsGoneWhenDetachReturns() throws Exception {
        FilePool pool = open();
        VolumeId volume = create(pool, "pvc");
        Path device = pool.attach(volume).device();
        FileChannel holder = FileChannel.open(device, StandardOpenOption.READ);
        // Closed 50 ms into the detach: a fork's copy of a descriptor, a view's own last close.
        CompletableFuture<Void> closed = CompletableFuture.runAsync(() -> {
            try {
                Thread.sleep(50);
                holder.close();
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });

        pool.detach(volume);

        closed.get(10, TimeUnit.SECONDS);
        assertThat(pool.attachedDevice(volume)).as("the volume's device right after detach").isEmpty();
    }

    private FilePool open() throws IOException {
        FilePool pool = FilePool.open(new FilePoolConfig("default", dir.resolve("pool"), 256 * MIB,
                Provisioning.THIN, true, 8 * MIB), new ToolRunner(), table);
        cleanup.add(pool::close);
        return pool;
    }

    private VolumeId create(FilePool pool, String name) {
        VolumeId id = pool.create(new VolumeRequest(name, new CapacityRange(16 * MIB, 0), Map.of())).id();
        cleanup.add(() -> pool.detach(id));
        return id;
    }

    private Set<LoopDevice> attachIdleDevices(int count) throws IOException {
        Set<LoopDevice> devices = new HashSet<>();
        for (int i = 0; i < count; i++) {
            Path file = dir.resolve("idle-" + i);
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                raf.setLength(MIB);
            }
            LoopDevice device = Loop.attach(file, true, false);
            cleanup.add(() -> Loop.detach(device));
            devices.add(device);
        }
        return devices;
    }

    /** The real sysfs and ioctls, counting the scans of all devices and the devices read one by one. */
    private static final class CountingTable implements LoopTable {
        final AtomicInteger scans = new AtomicInteger();
        final List<LoopDevice> described = new java.util.concurrent.CopyOnWriteArrayList<>();

        void reset() {
            scans.set(0);
            described.clear();
        }

        @Override
        public List<LoopAttachment> list() throws IOException {
            scans.incrementAndGet();
            return SYSFS.list();
        }

        @Override
        public Optional<LoopAttachment> describe(LoopDevice device) throws IOException {
            described.add(device);
            return SYSFS.describe(device);
        }

        @Override
        public LoopDevice attach(Path image, boolean directIo) throws IOException {
            return SYSFS.attach(image, directIo);
        }

        @Override
        public void detach(LoopDevice device) throws IOException {
            SYSFS.detach(device);
        }

        @Override
        public boolean keep(LoopDevice device) throws IOException {
            return SYSFS.keep(device);
        }
    }
}
