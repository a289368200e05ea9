package dev.hearth.driver;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.hearth.linux.DiskScan;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.ScratchFilesystem;
import dev.hearth.storage.device.DiskClaims;
import dev.hearth.storage.device.DiskIdentity;
import dev.hearth.storage.lvm.ClaimedPv;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code hearth disks} on real loop devices standing in for a node's disks, run as {@code Main}
 * runs it: each disk's verdict in the table and in the JSON's documented fields, a file pool's
 * image hidden, a claim without its disk listed, and not a byte written anywhere.
 */
@RequiresRoot
@RequiresTools("mkfs.ext4")
class DisksCommandTest {

    private static final Instant SINCE = Instant.parse("2026-11-24T06:00:00Z");

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private final Map<String, LoopDevice> devices = new LinkedHashMap<>();
    private final Map<String, Path> files = new LinkedHashMap<>();

    @Test
    void eachDiskHasItsVerdictInTheTableAndTheJsonAndNothingIsWritten() throws Exception {
        Path state = dir.resolve("state");
        attach("empty", 64 * MIB);
        mkfs(file("signed", 64 * MIB));
        attach("signed");
        mkfs(file("mounted", 64 * MIB));
        attach("mounted");
        Path target = Files.createDirectory(dir.resolve("mnt"));
        Scratch.mount(cleanup, devices.get("mounted").path().toString(), target, "ext4", 0, null);
        Scratch.writeAt(file("data", 64 * MIB), 8192, new byte[] {1, 2, 3});
        attach("data");
        attach("small", 16 * MIB);
        attach("pv", 64 * MIB);
        attach("volume", 64 * MIB);
        Files.createDirectories(state.resolve("pools/files"));
        attach("image", Scratch.sparseFile(state.resolve("pools/files/vol.img"), 64 * MIB));
        DiskClaims claims = new DiskClaims(state.resolve("disks"));
        claims.claim(new DiskClaims.Claim(identity("pv"), "grow", ClaimedPv.holder("vg0"), SINCE));
        claims.claim(new DiskClaims.Claim(identity("volume"), "whole", "pvc-1234", SINCE));
        DiskIdentity gone = new DiskIdentity("serial", "ACME:GONE-1", 1L << 40);
        claims.claim(new DiskClaims.Claim(gone, "whole", "pvc-5678", SINCE));
        List<String> stateBefore = tree(state);
        Map<String, String> before = checksums();
        String pool = "name=grow,kind=lvm,vg=vg0,disks=" + globs() + ",min-size=32Mi";
        String files = "name=files,dir=" + state.resolve("pools/files");

        CommandRun table = run("disks", "--state-dir", state.toString(), "--pool", pool, "--pool", files);
        CommandRun json = run("disks", "--state-dir", state.toString(), "--pool", pool, "--pool", files, "-o", "json");

        assertThat(table.exit()).as(table.err()).isZero();
        assertThat(table.out()).startsWith("DEVICE  ").contains("VERDICT\n");
        assertThat(line(table, "empty")).endsWith("eligible for pool grow");
        assertThat(line(table, "signed")).contains("holds ext4 at offset 0x438").endsWith("(selected by pool grow)");
        assertThat(line(table, "mounted")).contains("in use: " + name("mounted") + " mounted at " + target);
        assertThat(line(table, "data")).contains("no known signature, but non-zero data at offset 8192");
        assertThat(line(table, "small")).contains("too small: 16.0 MiB, the pool takes 32.0 MiB or more");
        assertThat(line(table, "pv")).endsWith("claimed for vg0 (pool grow): not yet a physical volume; the pool's "
                + "next pass makes it one");
        assertThat(line(table, "volume")).endsWith("claimed by pvc-1234 of pool whole");
        assertThat(table.out().lines()).noneMatch(l -> l.startsWith(devices.get("image").path() + " "));
        assertThat(table.out())
                .contains("Not shown: " + devices.get("image").path() + " (loop devices of hearth's file pool images")
                .contains("Claimed but not on this node: serial ACME:GONE-1, 1099511627776 bytes, pvc-5678 of pool "
                        + "whole")
                .contains("Pools taking whole disks, first match wins: grow (lvm, disks=" + globs()
                        + ",min-size=32Mi,check=sampled)");

        assertThat(json.exit()).as(json.err()).isZero();
        JsonObject top = JsonParser.parseString(json.out()).getAsJsonObject();
        assertThat(top.get("claimsDirectory").getAsString()).isEqualTo(state.resolve("disks").toString());
        assertThat(top.getAsJsonArray("pools").get(0).getAsJsonObject().get("check").getAsString()).isEqualTo("sampled");
        assertThat(top.get("probed").getAsBoolean()).isFalse();
        assertThat(strings(top.getAsJsonArray("hiddenLoopDevices")))
                .containsExactly(devices.get("image").path().toString());
        assertThat(top.getAsJsonArray("missingClaims").get(0).getAsJsonObject().get("holder").getAsString())
                .isEqualTo("pvc-5678");
        assertThat(code(top, "empty")).isEqualTo("eligible");
        JsonObject empty = disk(top, "empty");
        assertThat(empty.get("sizeBytes").getAsLong()).isEqualTo(64 * MIB);
        assertThat(empty.get("logicalSectorBytes").getAsInt()).isEqualTo(512);
        assertThat(empty.get("backingFile").getAsString()).isEqualTo(this.files.get("empty").toRealPath().toString());
        assertThat(empty.getAsJsonObject("identity").get("source").getAsString()).isEqualTo("loop");
        assertThat(empty.get("pool").getAsString()).isEqualTo("grow");
        assertThat(empty.get("ifSelected").isJsonNull()).isTrue();
        JsonObject signature = verdict(top, "signed").getAsJsonArray("signatures").get(0).getAsJsonObject();
        assertThat(signature.get("type").getAsString()).isEqualTo("ext4");
        assertThat(signature.get("kind").getAsString()).isEqualTo("filesystem");
        assertThat(signature.get("offsetBytes").getAsLong()).isEqualTo(0x438);
        assertThat(signature.get("backup").getAsBoolean()).isFalse();
        assertThat(strings(verdict(top, "mounted").getAsJsonArray("uses")))
                .containsExactly(name("mounted") + " mounted at " + target);
        assertThat(strings(disk(top, "mounted").getAsJsonArray("mountPoints"))).containsExactly(target.toString());
        assertThat(verdict(top, "data").get("nonZeroOffsetBytes").getAsLong()).isEqualTo(8192);
        assertThat(verdict(top, "small").get("minSizeBytes").getAsLong()).isEqualTo(32 * MIB);
        JsonObject pv = verdict(top, "pv");
        assertThat(pv.get("code").getAsString()).isEqualTo("claimed");
        assertThat(pv.getAsJsonObject("claim").get("volumeGroup").getAsString()).isEqualTo("vg0");
        assertThat(pv.getAsJsonObject("claim").get("since").getAsString()).isEqualTo(SINCE.toString());
        assertThat(pv.getAsJsonObject("physicalVolume").get("state").getAsString()).isEqualTo("unwritten");
        assertThat(verdict(top, "volume").getAsJsonObject("claim").get("volumeGroup").isJsonNull()).isTrue();
        assertThat(verdict(top, "volume").has("physicalVolume")).isFalse();

        assertThat(checksums()).as("every disk, byte for byte").isEqualTo(before);
        assertThat(tree(state)).as("the state directory").isEqualTo(stateBefore);
    }

    @Test
    void withoutAPoolTakingDisksEveryDiskIsNotSelectedAndProbeSaysWhatAPoolWouldFind() throws Exception {
        Path state = dir.resolve("state");
        attach("empty", 64 * MIB);
        mkfs(file("signed", 64 * MIB));
        attach("signed");

        CommandRun plain = run("disks", "--state-dir", state.toString(), "-o", "json");
        CommandRun probed = run("disks", "--state-dir", state.toString(), "-o", "json", "--probe");
        CommandRun table = run("disks", "--state-dir", state.toString(), "--probe");

        JsonObject top = JsonParser.parseString(plain.out()).getAsJsonObject();
        assertThat(top.getAsJsonArray("pools")).isEmpty();
        assertThat(code(top, "empty")).isEqualTo("not-selected");
        assertThat(disk(top, "empty").get("ifSelected").isJsonNull()).isTrue();
        JsonObject read = JsonParser.parseString(probed.out()).getAsJsonObject();
        assertThat(read.get("probed").getAsBoolean()).isTrue();
        assertThat(code(read, "empty")).isEqualTo("not-selected");
        assertThat(disk(read, "empty").getAsJsonObject("ifSelected").get("code").getAsString()).isEqualTo("eligible");
        assertThat(disk(read, "signed").getAsJsonObject("ifSelected").get("code").getAsString())
                .isEqualTo("signature");
        assertThat(line(table, "signed")).endsWith("not selected; if selected: holds ext4 at offset 0x438, "
                + "ext4 (backup copy) at offset 0x800438");
        assertThat(table.out()).contains("No pool takes whole disks (a device pool, or an lvm pool with disks=)");
        assertThat(state).as("nothing made").doesNotExist();
    }

    @Test
    void withoutPoolFlagsThePoolsServeRecordedAreRead() throws Exception {
        Path state = dir.resolve("state");
        attach("empty", 64 * MIB);
        Files.createDirectories(state);
        new ServeRecord(List.of("name=files", "name=grow,kind=lvm,vg=vg0,disks=" + globs()), Optional.empty(), state,
                "csi.hearth.dev", SINCE).write();

        CommandRun run = run("disks", "--state-dir", state.toString());

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(line(run, "empty")).endsWith("eligible for pool grow");
        Files.writeString(ServeRecord.file(state), "format=9\n");
        CommandRun unreadable = run("disks", "--state-dir", state.toString());
        assertThat(unreadable.exit()).isEqualTo(1);
        assertThat(unreadable.err()).contains("hearth disks: cannot read the pools of " + ServeRecord.file(state)
                + ": " + ServeRecord.file(state) + " has format 9").contains("name them with --pool");
    }

    @Test
    void anOutputFormatOtherThanTableOrJsonIsAUsageError() {
        CommandRun run = run("disks", "-o", "yaml");

        assertThat(run.exit()).isEqualTo(2);
        assertThat(run.err()).contains("--output must be table or json, not 'yaml'");
    }

    // ---- helpers

    private static CommandRun run(String... args) {
        return CommandRun.of(args);
    }

    private Path file(String role, long size) throws IOException {
        Path file = Scratch.sparseFile(dir.resolve(role + ".img"), size);
        files.put(role, file);
        return file;
    }

    private void attach(String role) throws IOException {
        attach(role, files.get(role));
    }

    private void attach(String role, long size) throws IOException {
        attach(role, file(role, size));
    }

    private void attach(String role, Path file) throws IOException {
        files.put(role, file);
        devices.put(role, Scratch.attach(cleanup, file, false, true));
    }

    private String name(String role) {
        return devices.get(role).path().getFileName().toString();
    }

    private DiskIdentity identity(String role) throws IOException {
        return DiskIdentity.of(DiskScan.named(new DiskScan().disks(), name(role)).orElseThrow()).orElseThrow();
    }

    /** The selector's globs: this test's devices only, whatever else the host has attached. */
    private String globs() {
        return String.join("|", devices.entrySet().stream().filter(e -> !e.getKey().equals("image"))
                .map(e -> e.getValue().path().toString()).toList());
    }

    private String line(CommandRun run, String role) {
        String prefix = devices.get(role).path() + " ";
        return run.out().lines().filter(l -> l.startsWith(prefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no line for " + prefix + " in\n" + run.out()));
    }

    private JsonObject disk(JsonObject top, String role) {
        for (JsonElement disk : top.getAsJsonArray("disks")) {
            if (disk.getAsJsonObject().get("path").getAsString().equals(devices.get(role).path().toString())) {
                return disk.getAsJsonObject();
            }
        }
        throw new AssertionError("no disk " + devices.get(role).path() + " in " + top);
    }

    private JsonObject verdict(JsonObject top, String role) {
        return disk(top, role).getAsJsonObject("verdict");
    }

    private String code(JsonObject top, String role) {
        return verdict(top, role).get("code").getAsString();
    }

    private static List<String> strings(JsonArray array) {
        List<String> out = new ArrayList<>();
        array.forEach(e -> out.add(e.getAsString()));
        return out;
    }

    private static List<String> tree(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            return walk.map(p -> root.relativize(p).toString()).sorted().toList();
        }
    }

    private Map<String, String> checksums() throws Exception {
        Map<String, String> sums = new LinkedHashMap<>();
        for (var role : files.entrySet()) {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            try (InputStream in = new DigestInputStream(Files.newInputStream(role.getValue()), digest)) {
                in.transferTo(OutputStream.nullOutputStream());
            }
            sums.put(role.getKey(), HexFormat.of().formatHex(digest.digest()));
        }
        return sums;
    }

    private static void mkfs(Path file) throws IOException {
        ScratchFilesystem.run(List.of("mkfs.ext4", "-q", "-F", file.toString()));
    }
}
