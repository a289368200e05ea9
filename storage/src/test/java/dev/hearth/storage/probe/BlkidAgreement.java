package dev.hearth.storage.probe;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.storage.probe.Signature.Kind;
import dev.hearth.storage.tool.ToolResult;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Compares the probe's verdict on an image with {@code blkid -p} (libblkid's low-level probe, no
 * cache, no udev), by the rule of issue 10: the same verdict, signed or not, and the same type
 * wherever both name one. Where they differ by design, the image's {@link Expected} says how,
 * and the comparison requires exactly that difference.
 */
final class BlkidAgreement {

    private static final Duration TIMEOUT = Duration.ofMinutes(1);
    private static final Pattern VERSION = Pattern.compile("libblkid (\\d+(?:\\.\\d+)+)");
    private static final ToolRunner TOOLS = new ToolRunner();

    private BlkidAgreement() {}

    /** What {@code blkid -p -o export} said: found (exit 0) with its tags, or nothing (exit 2). */
    record Blkid(boolean found, Map<String, String> tags) {

        /** TYPE (a superblock: filesystem, RAID or crypto member) and PTTYPE (a partition table), where given. */
        Set<String> named() {
            Set<String> named = new HashSet<>();
            for (String key : List.of("TYPE", "PTTYPE")) {
                if (tags.containsKey(key)) {
                    named.add(tags.get(key));
                }
            }
            return named;
        }
    }

    /** How blkid and the probe should compare on one image. */
    sealed interface Expected {}

    /**
     * Both find a signature: each type blkid names the probe names too (a partition table as a
     * table); each primary signature of the probe is one blkid names (a protective MBR as part of
     * blkid's gpt); and unless {@code primariesAtWipefsOffsets} is off (why says why), wipefs,
     * which lists every signature libblkid would erase with its offset, lists each of our primary
     * signatures at our offset. {@code oldBlkidSays} is a tag a libblkid older than
     * {@code fixedIn} adds by mistake: required there, then left out of the comparison.
     */
    record Agree(boolean primariesAtWipefsOffsets, Map<String, String> oldBlkidSays, String fixedIn, String why)
            implements Expected {
        Agree {
            Objects.requireNonNull(why, "why");
        }
    }

    /** blkid finds nothing; the probe finds exactly signatures of these types, for the reason given. */
    record OnlyTheProbeFinds(Set<String> types, String why) implements Expected {}

    /** Neither finds a signature; the probe's verdict is this one (empty, or not empty without a signature). */
    record NoSignature(Class<? extends ProbeResult> verdict) implements Expected {}

    static Agree agree() {
        return new Agree(true, Map.of(), "", "the same signature");
    }

    static Agree agreeExceptWipefsOffsets(String why) {
        return new Agree(false, Map.of(), "", why);
    }

    static Agree agreeButOldBlkidAlsoSays(String key, String value, String fixedIn, String why) {
        return new Agree(true, Map.of(key, value), fixedIn, why);
    }

    /** Probes {@code device} both ways and requires what {@code expected} says. */
    static void check(String image, Path device, Expected expected) {
        ProbeResult ours;
        try {
            ours = SignatureProbe.probe(device);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Blkid blkid = blkid(device);
        String context = image + " (" + device + "): we say \"" + ours.describe() + "\", blkid -p says " + blkid;
        switch (expected) {
            case Agree agree -> agree(device, ours, blkid, agree, context);
            case OnlyTheProbeFinds only -> {
                assertThat(blkid.found()).as(context + " (expected: " + only.why() + ")").isFalse();
                assertThat(ours).as(context).isInstanceOf(ProbeResult.Signed.class);
                assertThat(types(((ProbeResult.Signed) ours).found())).as(context).isEqualTo(only.types());
            }
            case NoSignature none -> {
                assertThat(blkid.found()).as(context).isFalse();
                assertThat(ours).as(context).isInstanceOf(none.verdict());
            }
        }
    }

    private static void agree(Path device, ProbeResult ours, Blkid blkid, Agree agree, String context) {
        assertThat(blkid.found()).as(context).isTrue();
        assertThat(ours).as(context).isInstanceOf(ProbeResult.Signed.class);
        List<Signature> found = ((ProbeResult.Signed) ours).found();
        Map<String, String> tags = new LinkedHashMap<>(blkid.tags());
        if (!agree.oldBlkidSays().isEmpty() && olderThan(agree.fixedIn())) {
            assertThat(tags).as(context + " (libblkid before " + agree.fixedIn() + ": " + agree.why() + ")")
                    .containsAllEntriesOf(agree.oldBlkidSays());
            agree.oldBlkidSays().keySet().forEach(tags::remove);
        }
        Blkid compared = new Blkid(true, tags);
        if (tags.containsKey("TYPE")) {
            assertThat(types(found.stream().filter(s -> s.kind() != Kind.PARTITION_TABLE).toList()))
                    .as(context).contains(tags.get("TYPE"));
        }
        if (tags.containsKey("PTTYPE")) {
            assertThat(types(found.stream().filter(s -> s.kind() == Kind.PARTITION_TABLE).toList()))
                    .as(context).contains(tags.get("PTTYPE"));
        }
        Set<String> named = compared.named();
        if (named.contains("gpt")) {
            named.add("PMBR"); // blkid's gpt prober requires the protective MBR and reports the two as one table
        }
        List<Signature> primaries = found.stream().filter(s -> !s.backup()).toList();
        assertThat(named).as(context).containsAll(types(primaries));
        if (agree.primariesAtWipefsOffsets()) {
            assertThat(wipefs(device)).as(context)
                    .containsAll(primaries.stream().map(s -> s.type() + "@" + s.offset()).toList());
        }
    }

    static Blkid blkid(Path device) {
        ToolResult result = TOOLS.runAllowingFailure(List.of("blkid", "-p", "-o", "export", device.toString()), TIMEOUT);
        if (result.exitCode() == 2) {
            return new Blkid(false, Map.of());
        }
        assertThat(result.exitCode()).as("blkid -p " + device + ": " + result.stderr()).isZero();
        Map<String, String> tags = new LinkedHashMap<>();
        result.stdout().lines().filter(l -> l.contains("=")).forEach(l ->
                tags.put(l.substring(0, l.indexOf('=')), l.substring(l.indexOf('=') + 1)));
        tags.remove("DEVNAME");
        return new Blkid(true, tags);
    }

    /** Every signature wipefs lists, as type@offset. */
    private static Set<String> wipefs(Path device) {
        String listing = TOOLS.run(List.of("wipefs", "--noheadings", "--output", "TYPE,OFFSET", device.toString()),
                TIMEOUT).stdout();
        return listing.lines()
                .map(l -> l.strip().split("\\s+"))
                .map(f -> f[0] + "@" + Long.decode(f[1]))
                .collect(Collectors.toSet());
    }

    /** The installed libblkid's version, as {@code blkid -V} gives it. */
    static Runtime.Version blkidVersion() {
        String text = TOOLS.run(List.of("blkid", "-V"), TIMEOUT).stdout();
        Matcher m = VERSION.matcher(text);
        assertThat(m.find()).as("a libblkid version in: " + text).isTrue();
        return Runtime.Version.parse(m.group(1));
    }

    private static boolean olderThan(String version) {
        return blkidVersion().compareTo(Runtime.Version.parse(version)) < 0;
    }

    private static Set<String> types(List<Signature> signatures) {
        return signatures.stream().map(Signature::type).collect(Collectors.toSet());
    }
}
