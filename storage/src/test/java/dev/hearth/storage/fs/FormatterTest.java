package dev.hearth.storage.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.Emptiness;
import dev.hearth.storage.probe.ProbeResult;
import dev.hearth.storage.probe.Signature;
import dev.hearth.storage.probe.Signature.Kind;
import dev.hearth.storage.probe.SignatureProbe;
import dev.hearth.storage.tool.ToolException;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class FormatterTest {

    private static final long MIB = 1 << 20;
    private static final Duration TOOL_TIMEOUT = Duration.ofMinutes(2);

    private final ToolRunner tools = new ToolRunner();
    private final Formatter formatter = new Formatter(tools);

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(FilesystemType.class)
    @RequiresTools({"mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "blkid"})
    void formatsAnEmptyDevice(FilesystemType type) throws IOException {
        Path device = sparse(sizeFor(type));

        formatter.format(device, type, sizeFor(type));

        assertThat(Formatter.detect(SignatureProbe.probe(device, sizeFor(type)))).contains(type);
        assertThat(tools.run(List.of("blkid", "-p", "-s", "TYPE", "-o", "value", device.toString()), TOOL_TIMEOUT)
                .stdout().strip()).isEqualTo(type.kernelName());
    }

    @Test
    @RequiresTools({"mkfs.ext4", "blkid"})
    void theSizeMayComeFromTheDevice() throws IOException {
        Path device = sparse(64 * MIB);

        formatter.format(device, FilesystemType.EXT4);

        assertThat(Formatter.detect(SignatureProbe.probe(device))).contains(FilesystemType.EXT4);
    }

    @ParameterizedTest
    @EnumSource(FilesystemType.class)
    @RequiresTools({"mkfs.ext4", "dumpe2fs"})
    void refusesAFormattedDeviceAndLeavesItIntact(FilesystemType type) throws IOException {
        Path device = sparse(320 * MIB);
        tools.run(List.of("mkfs.ext4", "-q", device.toString()), TOOL_TIMEOUT);
        String uuid = ext4Uuid(device);
        String digest = sha256(device);

        NotBlankException e = catchThrowableOfType(NotBlankException.class,
                () -> formatter.format(device, type, 320 * MIB));

        assertThat(e).hasMessageStartingWith("refusing to format " + device + ": holds ext4 at offset 0x438");
        assertThat(e.device()).isEqualTo(device);
        assertThat(e.found()).isInstanceOf(ProbeResult.Signed.class);
        assertThat(ext4Uuid(device)).isEqualTo(uuid);
        assertThat(sha256(device)).isEqualTo(digest);
    }

    @Test
    @RequiresTools({"mkfs.ext4", "blkid"})
    void refusesRandomBytesInTheHead() throws IOException {
        Path device = sparse(64 * MIB);
        byte[] noise = new byte[4096];
        new Random(42).nextBytes(noise);
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(noise), 8192);
        }
        String digest = sha256(device);

        NotBlankException e = catchThrowableOfType(NotBlankException.class,
                () -> formatter.format(device, FilesystemType.EXT4, 64 * MIB));

        assertThat(e.found()).isInstanceOf(ProbeResult.NotEmpty.class);
        assertThat(e).hasMessageContaining("non-zero data at offset 8192");
        assertThat(sha256(device)).isEqualTo(digest);
    }

    @Test
    @RequiresTools({"mkfs.ext4", "blkid"})
    void blkidIsASecondNetBehindOurProbe() throws IOException {
        Path device = sparse(64 * MIB);
        tools.run(List.of("mkfs.ext4", "-q", device.toString()), TOOL_TIMEOUT);
        String digest = sha256(device);
        Formatter blindProbe = new Formatter(tools, (path, size) -> ProbeResult.EMPTY);

        NotBlankException e = catchThrowableOfType(NotBlankException.class,
                () -> blindProbe.format(device, FilesystemType.XFS, 64 * MIB));

        assertThat(e).hasMessageContaining("blkid -p reports").hasMessageContaining("TYPE=ext4");
        assertThat(sha256(device)).isEqualTo(digest);
    }

    @Test
    @RequiresTools({"mkfs.ext4", "blkid"})
    void withoutAProofBlkidIsAsked() throws IOException {
        Path device = sparse(64 * MIB);
        List<String> ran = new ArrayList<>();

        recording(ran).format(device, FilesystemType.EXT4, 64 * MIB);

        assertThat(ran).containsExactly("blkid", "mkfs.ext4");
    }

    @Test
    @RequiresTools("mkfs.ext4")
    void aDeviceProvenEmptyIsFormattedWithoutAskingBlkid() throws IOException {
        Path device = sparse(64 * MIB);
        List<String> ran = new ArrayList<>();
        ProbeResult.Empty probed = (ProbeResult.Empty) SignatureProbe.probe(device, 64 * MIB);

        recording(ran).formatProvenEmpty(device, FilesystemType.EXT4, 64 * MIB, probed, new Emptiness.Proven());

        assertThat(ran).containsExactly("mkfs.ext4");
        assertThat(Formatter.detect(SignatureProbe.probe(device, 64 * MIB))).contains(FilesystemType.EXT4);
    }

    @Test
    @RequiresTools({"mkfs.xfs", "blkid"})
    void aFailingMkfsSurfacesItsComplaint() {
        Path device = sparse(64 * MIB); // xfs needs 300 MiB

        ToolException e = catchThrowableOfType(ToolException.class,
                () -> formatter.format(device, FilesystemType.XFS, 64 * MIB));

        assertThat(e.reason()).isEqualTo(ToolException.Reason.EXITED_NON_ZERO);
        assertThat(e).hasMessageStartingWith("mkfs.xfs -q -K " + device);
    }

    @ParameterizedTest
    @EnumSource(FilesystemType.class)
    void mkfsIsNeverForced(FilesystemType type) {
        List<String> command = Formatter.mkfsCommand(type, Path.of("/dev/sdx"));

        assertThat(command.getFirst()).isEqualTo("mkfs." + type.kernelName());
        assertThat(command).doesNotContain("-f", "-F", "--force").endsWith("/dev/sdx");
    }

    @Test
    void detectNamesOnlyAnUncontestedFilesystemOfOurs() {
        Signature ext4 = new Signature(Kind.FILESYSTEM, "ext4", 0x438);
        Signature ext4Backup = new Signature(Kind.FILESYSTEM, "ext4", 8193 * 1024 + 0x38, true);
        Signature xfs = new Signature(Kind.FILESYSTEM, "xfs", 0);
        Signature lvm = new Signature(Kind.VOLUME_MANAGER, "LVM2_member", 0x218);

        assertThat(Formatter.detect(signed(ext4))).contains(FilesystemType.EXT4);
        assertThat(Formatter.detect(signed(ext4, ext4Backup))).contains(FilesystemType.EXT4);
        assertThat(Formatter.detect(signed(xfs, ext4Backup))).contains(FilesystemType.XFS);
        assertThat(Formatter.detect(signed(new Signature(Kind.FILESYSTEM, "btrfs", 0x10040))))
                .contains(FilesystemType.BTRFS);
        assertThat(Formatter.detect(signed(ext4Backup))).isEmpty();
        assertThat(Formatter.detect(signed(ext4, xfs))).isEmpty();
        assertThat(Formatter.detect(signed(ext4, lvm))).isEmpty();
        assertThat(Formatter.detect(signed(new Signature(Kind.FILESYSTEM, "ext3", 0x438)))).isEmpty();
        assertThat(Formatter.detect(signed(new Signature(Kind.FILESYSTEM, "vfat", 0x36)))).isEmpty();
        assertThat(Formatter.detect(ProbeResult.EMPTY)).isEmpty();
        assertThat(Formatter.detect(new ProbeResult.NotEmpty("junk"))).isEmpty();
    }

    /** A formatter with the real tools and probe that notes the name of each tool it runs. */
    private Formatter recording(List<String> ran) {
        return new Formatter((argv, timeout) -> {
            ran.add(argv.getFirst());
            return tools.runAllowingFailure(argv, timeout);
        }, SignatureProbe::probe);
    }

    private static ProbeResult signed(Signature... signatures) {
        return new ProbeResult.Signed(List.of(signatures));
    }

    private static long sizeFor(FilesystemType type) {
        return switch (type) {
            case EXT4 -> 64 * MIB;
            case XFS -> 320 * MIB;
            case BTRFS -> 128 * MIB;
        };
    }

    private Path sparse(long size) {
        Path file = dir.resolve("device-" + System.nanoTime());
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.allocate(1), size - 1);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return file;
    }

    private String ext4Uuid(Path device) {
        return tools.run(List.of("dumpe2fs", "-h", device.toString()), TOOL_TIMEOUT).stdout().lines()
                .filter(l -> l.startsWith("Filesystem UUID:"))
                .findFirst()
                .orElseThrow();
    }

    private static String sha256(Path file) throws IOException {
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        try (InputStream in = Files.newInputStream(file)) {
            byte[] chunk = new byte[1 << 20];
            for (int n; (n = in.read(chunk)) > 0; ) {
                digest.update(chunk, 0, n);
            }
        }
        return HexFormat.of().formatHex(digest.digest());
    }
}
