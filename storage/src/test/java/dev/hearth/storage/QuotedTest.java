package dev.hearth.storage;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class QuotedTest {

    @Test
    void aShortValueIsQuotedWhole() {
        assertThat(Quoted.of("pvc-1")).isEqualTo("'pvc-1'");
        assertThat(Quoted.of("/var/lib/kubelet/pods/x/volumes")).isEqualTo("'/var/lib/kubelet/pods/x/volumes'");
        assertThat(Quoted.of("")).isEqualTo("''");
    }

    @Test
    void aLongValueShowsAPrefixAndItsLength() {
        String quoted = Quoted.of("v".repeat(70_000));

        assertThat(quoted).isEqualTo("'" + "v".repeat(Quoted.LIMIT) + "…' (70000 chars)");
    }

    @Test
    void aValueOfExactlyTheLimitIsShownWhole() {
        assertThat(Quoted.of("x".repeat(Quoted.LIMIT))).isEqualTo("'" + "x".repeat(Quoted.LIMIT) + "'");
    }

    @Test
    void nulControlCharactersAndNonAsciiAreEscaped() {
        assertThat(Quoted.of("a\0b\nc\td\u0001e")).isEqualTo("'a\\0b\\nc\\td\\u0001e'");
        assertThat(Quoted.of("\u202egnp.exe")).isEqualTo("'\\u202egnp.exe'");
        assertThat(Quoted.of("\ud800")).isEqualTo("'\\ud800'");
        assertThat(Quoted.of("caf\u00e9")).isEqualTo("'caf\\u00e9'");
    }

    @Test
    void quotesAndBackslashesAreEscapedSoTheQuotingIsUnambiguous() {
        assertThat(Quoted.of("it's a\\b")).isEqualTo("'it\\'s a\\\\b'");
    }

    @Test
    void escapesCountTowardsTheLimitAndAreNeverCutInHalf() {
        String quoted = Quoted.of("\0".repeat(1_000));

        assertThat(quoted).isEqualTo("'" + "\\0".repeat(Quoted.LIMIT / 2) + "…' (1000 chars)");
        assertThat(Quoted.of("\u0001".repeat(100))).startsWith("'" + "\\u0001".repeat(Quoted.LIMIT / 6) + "…'");
    }

    @Test
    void whatIsShownIsAlwaysShortPrintableAscii() {
        StringBuilder soup = new StringBuilder();
        for (char c = 0; c < 0xffff; c += 7) {
            soup.append(c);
        }

        String quoted = Quoted.of(soup.toString());

        assertThat(quoted.length()).isLessThanOrEqualTo(Quoted.LIMIT + 32);
        assertThat(quoted.chars().filter(c -> c != '…').allMatch(c -> c >= ' ' && c <= '~')).isTrue();
    }

    @Test
    void noValueIsSaidSo() {
        assertThat(Quoted.of((String) null)).isEqualTo("(none)");
    }
}
