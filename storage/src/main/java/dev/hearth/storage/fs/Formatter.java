package dev.hearth.storage.fs;

import dev.hearth.storage.Emptiness;
import dev.hearth.storage.probe.ProbeResult;
import dev.hearth.storage.probe.Signature;
import dev.hearth.storage.probe.SignatureProbe;
import dev.hearth.storage.tool.ToolException;
import dev.hearth.storage.tool.ToolResult;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Makes filesystems, but only on devices proven blank. Independent checks stand between a
 * request and someone's data: our own {@link SignatureProbe}; libblkid ({@code blkid -p}, which
 * knows many more formats) where the caller has no proof that the device was never written; and
 * mkfs's own refusal (xfs and btrfs only: mkfs.ext4 never asks when stdin is not a terminal, so it
 * would overwrite anything). No force flag is passed.
 *
 * <p>A first format ({@link #formatProvenEmpty}) has the pool's proof instead of libblkid's look,
 * because libblkid could find nothing there and costs a process (5 ms on a host, 50 ms under
 * user-mode Linux: a third of a stage beside mkfs). The places libblkid reads on a device are its
 * first and last MiB, which the probe has just read and found all zeros, so no magic of any format
 * is there, and a few places beyond them (1, 2 and 4 MiB in, 3087 sectors before the end) whose
 * headers the probe knows as well (an strace of {@code blkid -p}, util-linux 2.38, on zero-filled
 * devices of 64 MiB to 5 TiB; {@code RealImagesProbeTest} checks it against the installed blkid).
 * A header some later libblkid looked for elsewhere would lie inside a volume its pool proves no
 * user has written: a file image with no data extent is zeros throughout, and an LV never handed
 * out holds only what its extents kept from before it was made, which a new volume is formatted over.
 *
 * <p>It speaks in its own exceptions, which its caller, the {@code Mounter}, turns into storage
 * ones: the Mounter knows whether a refusal is foreign data or a failure of the node.
 */
public final class Formatter {

    // mkfs on a large, slow disk writes inode tables and the journal; minutes are normal.
    static final Duration MKFS_TIMEOUT = Duration.ofMinutes(10);
    static final Duration BLKID_TIMEOUT = Duration.ofMinutes(1);
    private static final int BLKID_NOTHING_FOUND = 2;

    /** How a device is probed; tests replace it to reach the checks behind it. */
    @FunctionalInterface
    interface Prober {
        ProbeResult probe(Path device, long sizeBytes) throws IOException;
    }

    /** How tools are run ({@link ToolRunner#runAllowingFailure}); tests wrap it to see which ran. */
    @FunctionalInterface
    interface Tools {
        ToolResult runAllowingFailure(List<String> argv, Duration timeout);
    }

    private final Tools runner;
    private final Prober prober;

    public Formatter(ToolRunner runner) {
        this(runner, SignatureProbe::probe);
    }

    Formatter(ToolRunner runner, Prober prober) {
        this(runner::runAllowingFailure, prober);
    }

    Formatter(Tools runner, Prober prober) {
        this.runner = runner;
        this.prober = prober;
    }

    /** {@link #format(Path, FilesystemType, long)} with the size the device's channel reports. */
    public void format(Path device, FilesystemType type) {
        long size;
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.READ)) {
            size = channel.size();
        } catch (IOException e) {
            throw new UncheckedIOException("reading the size of " + device + ": " + e.getMessage(), e);
        }
        format(device, type, size);
    }

    /**
     * Formats the device, {@code sizeBytes} long, with the given filesystem. Throws
     * {@link NotBlankException} without writing anything if the device is not provably empty,
     * {@link ToolException} if mkfs fails, {@link UncheckedIOException} if the device cannot be
     * read, and {@link IllegalStateException} if mkfs claims success but the device does not
     * then show the filesystem asked for.
     */
    public void format(Path device, FilesystemType type, long sizeBytes) {
        Path target = device.toAbsolutePath(); // never let a path start with '-' on a command line
        ProbeResult before = probe(prober, target, sizeBytes);
        if (!(before instanceof ProbeResult.Empty)) {
            throw new NotBlankException(target, before);
        }
        refuseIfBlkidFindsAnything(target);
        mkfs(mkfsCommand(type, target));
        checkMade(type, target, sizeBytes);
    }

    /**
     * Formats a device its pool proves never written and that the caller has just probed and found
     * empty (the first-format decision does both, under the volume's lock): neither the probe nor
     * libblkid looks again (see the class comment for why libblkid need not); what mkfs made is
     * still checked. Throws as {@link #format(Path, FilesystemType, long)} does.
     */
    public void formatProvenEmpty(Path device, FilesystemType type, long sizeBytes, ProbeResult.Empty probed,
            Emptiness.Proven proof) {
        Path target = device.toAbsolutePath();
        mkfs(mkfsCommand(type, target));
        checkMade(type, target, sizeBytes);
    }

    /**
     * Formats over the remains of this driver's own mkfs that was interrupted by a crash, which the
     * caller's format journal proves: the device held nothing before that mkfs started, so the
     * half-written filesystem is all there is. No probe, and mkfs's force flag.
     */
    public void reformatInterrupted(Path device, FilesystemType type, long sizeBytes) {
        Path target = device.toAbsolutePath();
        List<String> command = new ArrayList<>(mkfsCommand(type, target));
        command.add(1, type == FilesystemType.EXT4 ? "-F" : "-f");
        mkfs(command);
        checkMade(type, target, sizeBytes);
    }

    /**
     * The filesystem a probe shows, if it is one of ours and nothing else competes for the
     * device at a primary location. Backup copies are ignored: they are not what mount reads.
     */
    public static Optional<FilesystemType> detect(ProbeResult result) {
        if (!(result instanceof ProbeResult.Signed signed)) {
            return Optional.empty();
        }
        List<Signature> primary = signed.primary();
        boolean onlyFilesystems = !primary.isEmpty()
                && primary.stream().allMatch(s -> s.kind() == Signature.Kind.FILESYSTEM);
        List<String> types = primary.stream().map(Signature::type).distinct().toList();
        if (!onlyFilesystems || types.size() != 1) {
            return Optional.empty();
        }
        return FilesystemType.fromKernelName(types.getFirst());
    }

    /** mkfs exited 0; the device must now show the filesystem asked for, and nothing else. */
    private static void checkMade(FilesystemType type, Path target, long sizeBytes) {
        ProbeResult after = probe(SignatureProbe::probe, target, sizeBytes);
        if (detect(after).orElse(null) != type) {
            throw new IllegalStateException("mkfs." + type.kernelName() + " succeeded on " + target
                    + " but the device now " + after.describe());
        }
    }

    static List<String> mkfsCommand(FilesystemType type, Path device) {
        String target = device.toString();
        return switch (type) {
            // No root-reserved blocks: a volume belongs to one workload, not to a system that
            // needs rescue space. No discard: the device was just proven empty.
            case EXT4 -> List.of("mkfs.ext4", "-q", "-m", "0", "-E", "lazy_itable_init=1,nodiscard", target);
            case XFS -> List.of("mkfs.xfs", "-q", "-K", target);
            case BTRFS -> List.of("mkfs.btrfs", "-q", "-K", target);
        };
    }

    private static ProbeResult probe(Prober prober, Path device, long sizeBytes) {
        try {
            return prober.probe(device, sizeBytes);
        } catch (IOException e) {
            throw new UncheckedIOException("probing " + device + ": " + e.getMessage(), e);
        }
    }

    /** Runs mkfs; throws {@link ToolException} unless it exits 0. */
    private void mkfs(List<String> command) {
        ToolResult result = runner.runAllowingFailure(command, MKFS_TIMEOUT);
        if (!result.succeeded()) {
            throw ToolException.exited(command, result);
        }
    }

    private void refuseIfBlkidFindsAnything(Path device) {
        List<String> command = List.of("blkid", "-p", "-o", "export", device.toString());
        ToolResult result = runner.runAllowingFailure(command, BLKID_TIMEOUT);
        if (result.exitCode() == BLKID_NOTHING_FOUND) {
            return;
        }
        // 0: something found; 8: several things found ("ambivalent"); anything else is an error,
        // and an unreadable device is not a blank one either.
        if (result.exitCode() == 0 || result.exitCode() == 8) {
            String what = result.stdout().lines()
                    .filter(l -> l.startsWith("TYPE=") || l.startsWith("PTTYPE="))
                    .collect(Collectors.joining(", "));
            throw new NotBlankException(device, new ProbeResult.NotEmpty("blkid -p reports "
                    + (what.isEmpty() ? "a signature: " + result.stderr().strip() : what)));
        }
        throw ToolException.exited(command, result);
    }
}
