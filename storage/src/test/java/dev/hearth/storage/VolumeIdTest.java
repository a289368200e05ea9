package dev.hearth.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.NullAndEmptySource;
import org.junit.jupiter.params.provider.ValueSource;

class VolumeIdTest {

    private static final String NAME = "pvc-0f3c7a52-1b2d-4c8e-9a41-2f6d8e1b7c90";

    @Test
    void mintIsDeterministic() {
        assertThat(VolumeId.mint("default", NAME)).isEqualTo(VolumeId.mint("default", NAME));
        assertThat(VolumeId.mint("default", NAME).toString()).isEqualTo(VolumeId.mint("default", NAME).toString());
    }

    @Test
    void keyIsTheSameInEveryPool() {
        VolumeId fast = VolumeId.mint("fast", NAME);
        VolumeId slow = VolumeId.mint("slow-hdd", NAME);

        assertThat(fast.key()).isEqualTo(slow.key()).isEqualTo(VolumeId.keyOf(NAME));
        assertThat(fast).isNotEqualTo(slow);
    }

    @Test
    void differentNamesGetDifferentKeys() {
        Set<String> keys = new HashSet<>();
        for (int i = 0; i < 1000; i++) {
            keys.add(VolumeId.keyOf("pvc-" + i));
        }
        assertThat(keys).hasSize(1000);
    }

    /**
     * The key is the first 26 characters of lowercase RFC 4648 base32 of SHA-256(UTF-8 name).
     * Volumes made by an earlier version are found only if this never changes.
     */
    @Test
    void keyIsStableAcrossVersions() {
        assertThat(VolumeId.keyOf("")).isEqualTo("4oymiquy7qobjgx36tejs35zeq");
        assertThat(VolumeId.keyOf(NAME)).isEqualTo("mh64zkh6l75dwxf62uprpowga5");
        assertThat(VolumeId.keyOf("ü")).isEqualTo("mb2hjsshlklsjvzwbk5hdjlnlx");
        assertThat(VolumeId.mint("default", NAME)).hasToString("default-mh64zkh6l75dwxf62uprpowga5");
    }

    @ParameterizedTest
    @ValueSource(strings = {"default", "a", "my-pool", "nvme0", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})
    void parseRoundTripsMintedIds(String pool) {
        VolumeId id = VolumeId.mint(pool, NAME);

        assertThat(VolumeId.parse(id.toString())).contains(id);
        assertThat(VolumeId.parse(id.toString()).orElseThrow().pool()).isEqualTo(pool);
    }

    @ParameterizedTest
    @NullAndEmptySource
    @ValueSource(strings = {
        "../x",
        "default-../../etc",
        "default-../../../../etc/passwd",
        "default-mh64zkh6l75dwxf62uprpowga5/../../x",
        "default-mh64zkh6l75dwxf62uprpo/ga5",
        "default-mh64zkh6l75dwxf62uprpowg.5",
        "DEFAULT-mh64zkh6l75dwxf62uprpowga5",
        "default-MH64ZKH6L75DWXF62UPRPOWGA5",
        "default-mh64zkh6l75dwxf62uprpowga", // 25 key characters
        "default-mh64zkh6l75dwxf62uprpowga55", // 27
        "default-mh64zkh6l75dwxf62uprpowga1", // '1' is not base32
        "default-mh64zkh6l75dwxf62uprpowga0",
        "default_mh64zkh6l75dwxf62uprpowga5",
        "defaultmh64zkh6l75dwxf62uprpowga5",
        "-mh64zkh6l75dwxf62uprpowga5",
        "--mh64zkh6l75dwxf62uprpowga5",
        "-pool-mh64zkh6l75dwxf62uprpowga5",
        "pool--mh64zkh6l75dwxf62uprpowga5",
        "po.ol-mh64zkh6l75dwxf62uprpowga5",
        "po/ol-mh64zkh6l75dwxf62uprpowga5",
        "pool -mh64zkh6l75dwxf62uprpowga5",
        " default-mh64zkh6l75dwxf62uprpowga5",
        "default-mh64zkh6l75dwxf62uprpowga5 ",
        "default-mh64zkh6l75dwxf62uprpowga5\n",
        "default-mh64zkh6l75dwxf62uprpowga5\0",
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-mh64zkh6l75dwxf62uprpowga5", // 33-character pool
        "mh64zkh6l75dwxf62uprpowga5",
        "pvc-0f3c7a52-1b2d-4c8e-9a41-2f6d8e1b7c90",
        "default-mh64zkh6l75dwxf62uprpowgä5",
    })
    void parseRejectsIdsTheDriverDidNotMint(String id) {
        assertThat(VolumeId.parse(id)).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "Default", "-a", "a-", "a_b", "a.b", "a/b", ".."})
    void badPoolNamesAreRejected(String pool) {
        assertThat(VolumeId.isPoolName(pool)).isFalse();
        assertThatThrownBy(() -> VolumeId.mint(pool, NAME)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void poolNameOf33CharactersIsRejected() {
        assertThat(VolumeId.isPoolName("x".repeat(32))).isTrue();
        assertThat(VolumeId.isPoolName("x".repeat(33))).isFalse();
        assertThat(VolumeId.isPoolName(null)).isFalse();
    }

    @Test
    void constructorRejectsKeysThatAreNotMinted() {
        assertThatThrownBy(() -> new VolumeId("default", "../../etc/passwd.aaaaaaaaaa"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new VolumeId("default", null)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void keysAreSafeFileNames(@TempDir Path dir) {
        for (String name : new String[] {"", "a/b", "../../etc/passwd", "\0", "-rf", "x".repeat(10_000), "名前"}) {
            VolumeId id = VolumeId.mint("default", name);

            assertThat(id.key()).hasSize(VolumeId.KEY_LENGTH).matches("[a-z2-7]+");
            Path file = dir.resolve(id + ".img");
            assertThat(file.getParent()).isEqualTo(dir);
            assertThat(file.getFileName().toString()).doesNotStartWith("-").doesNotContain("/", "..");
        }
    }

    /**
     * The hand-written checks accept exactly what the patterns of the ID's shape do: every string of
     * up to 3 characters over an alphabet that holds each class's edges, and random longer ones.
     */
    @Test
    void theShapeChecksAcceptWhatTheirPatternsAccept() {
        Pattern pool = Pattern.compile("[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?");
        Pattern key = Pattern.compile("[a-z2-7]{26}");
        String alphabet = "az09-17 A_\u00e9";
        List<String> samples = new ArrayList<>(List.of(""));
        for (int length = 1; length <= 3; length++) {
            List<String> longer = new ArrayList<>();
            for (String sample : samples) {
                if (sample.length() == length - 1) {
                    for (char c : alphabet.toCharArray()) {
                        longer.add(sample + c);
                    }
                }
            }
            samples.addAll(longer);
        }
        Random random = new Random(11);
        String keyChars = "abcdefghijklmnopqrstuvwxyz234567";
        for (int i = 0; i < 20_000; i++) {
            int length = 20 + random.nextInt(16);
            StringBuilder sample = new StringBuilder();
            for (int j = 0; j < length; j++) {
                String from = random.nextInt(50) == 0 ? alphabet : keyChars + "-";
                sample.append(from.charAt(random.nextInt(from.length())));
            }
            samples.add(sample.toString());
            samples.add(sample.substring(0, Math.min(26, length)));
        }

        for (String sample : samples) {
            assertThat(VolumeId.isPoolName(sample)).as("pool name %s", sample).isEqualTo(pool.matcher(sample).matches());
            assertThat(VolumeId.isKey(sample)).as("key %s", sample).isEqualTo(key.matcher(sample).matches());
        }
    }
}
