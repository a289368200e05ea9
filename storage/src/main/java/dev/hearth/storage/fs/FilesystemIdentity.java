package dev.hearth.storage.fs;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.tool.ToolException;
import dev.hearth.storage.tool.ToolResult;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * Gives a copied filesystem an identity of its own. A clone or restored snapshot of an xfs volume
 * carries its source's UUID, and xfs refuses to mount a second filesystem with a UUID already
 * mounted ("Filesystem has duplicate UUID"), so the clone could never be used beside its source.
 */
public final class FilesystemIdentity {

    static final Duration XFS_ADMIN_TIMEOUT = Duration.ofMinutes(2);
    private static final byte[] XFS_MAGIC = "XFSB".getBytes(StandardCharsets.US_ASCII);
    private static final int XFS_UUID_OFFSET = 32; // sb_uuid in struct xfs_dsb
    private static final int XFS_INPROGRESS_OFFSET = 126; // sb_inprogress: mkfs has not finished
    // xfs_admin prints this, and exits 0, when it refuses to touch a filesystem with a dirty log.
    private static final String DIRTY_LOG = "log which needs to";

    private final ToolRunner runner;

    public FilesystemIdentity(ToolRunner runner) {
        this.runner = runner;
    }

    /**
     * Gives the unmounted xfs in {@code imageOrDevice} a new random UUID ({@code xfs_admin -U
     * generate}); on a v5 filesystem the original stays recorded as its metadata UUID, so nothing
     * else is rewritten. The result is checked by reading the superblock back.
     *
     * @throws IllegalArgumentException if it holds no xfs
     * @throws StorageException.Precondition if the image file is attached to a loop device
     * @throws StorageException.Failed if xfs_admin fails or the UUID did not change; when the log is dirty (the image was
     *     copied while mounted and not frozen) the message says so
     */
    public void renewXfsUuid(Path imageOrDevice) throws IOException {
        Path target = imageOrDevice.toAbsolutePath(); // never a leading '-' on a command line
        refuseIfAttached(target);
        UUID before = xfsUuid(target).orElseThrow(() -> new IllegalArgumentException(
                "no xfs superblock on " + target + "; cannot renew its UUID"));
        ToolResult result;
        try {
            result = runner.run(List.of("xfs_admin", "-U", "generate", target.toString()), XFS_ADMIN_TIMEOUT);
        } catch (ToolException e) {
            throw StorageException.Failed.byTool("renewing the UUID of the xfs on " + target + ": " + e.getMessage(), e);
        }
        Optional<UUID> after = xfsUuid(target);
        if (after.isPresent() && !after.get().equals(before)) {
            return;
        }
        String output = (result.stdout() + "\n" + result.stderr()).strip();
        if (output.contains(DIRTY_LOG)) {
            throw new StorageException.Failed("cannot renew the UUID of the xfs on " + target + ": its log is dirty,"
                    + " so it was copied while mounted and not frozen; mount it once (with -o nouuid) to replay"
                    + " the log, or copy it again from a frozen or unmounted source. xfs_admin: " + output);
        }
        throw new StorageException.Failed("xfs_admin -U generate " + target + " reported success but the UUID is"
                + " still " + before + ": " + output);
    }

    /**
     * xfs_admin notices a mounted device but not a mounted loop device's backing file: it would
     * rewrite the superblock under a live filesystem.
     */
    private static void refuseIfAttached(Path image) throws IOException {
        if (!Files.isRegularFile(image)) {
            return;
        }
        Optional<LoopAttachment> attached = Loop.findByBackingFile(image);
        if (attached.isPresent()) {
            throw new StorageException.Precondition("refusing to change the xfs UUID in " + image + ": it is attached"
                    + " as " + attached.get().device() + "; renew it before attaching");
        }
    }

    /** The UUID in the primary superblock of the xfs on {@code imageOrDevice}, if it holds one. */
    public static Optional<UUID> xfsUuid(Path imageOrDevice) throws IOException {
        return xfsHead(imageOrDevice, XFS_UUID_OFFSET + 16)
                .map(head -> new UUID(head.getLong(XFS_UUID_OFFSET), head.getLong(XFS_UUID_OFFSET + 8)));
    }

    /**
     * Whether the xfs on {@code imageOrDevice} says its mkfs never finished ({@code sb_inprogress},
     * which mkfs.xfs sets first and clears last; the kernel refuses to mount such a filesystem).
     * False where there is no xfs.
     */
    public static boolean xfsFormatUnfinished(Path imageOrDevice) throws IOException {
        return xfsHead(imageOrDevice, XFS_INPROGRESS_OFFSET + 1)
                .filter(head -> head.get(XFS_INPROGRESS_OFFSET) != 0).isPresent();
    }

    /** The first {@code length} bytes of the primary superblock, if {@code imageOrDevice} holds an xfs. */
    private static Optional<ByteBuffer> xfsHead(Path imageOrDevice, int length) throws IOException {
        ByteBuffer head = ByteBuffer.allocate(length);
        try (FileChannel channel = FileChannel.open(imageOrDevice, StandardOpenOption.READ)) {
            while (head.hasRemaining() && channel.read(head, head.position()) > 0) {
                // a short file leaves zeros, which are no xfs
            }
        }
        return head.slice(0, XFS_MAGIC.length).equals(ByteBuffer.wrap(XFS_MAGIC)) ? Optional.of(head) : Optional.empty();
    }
}
