package dev.hearth.linux.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;

/**
 * The host's side of a guest that runs several scenarios in one boot and reports each by lines
 * {@code <MARKER>-START <name> ...} before and {@code <MARKER> <name> PASS|FAIL} after: the
 * outcomes, and one test per scenario whose failure shows that scenario's part of the output.
 */
public final class GuestScenarios {

    private GuestScenarios() {}

    /** Each scenario the guest reported, in order, with "PASS" or "FAIL". */
    public static Map<String, String> outcomes(UserModeLinux.Result guest, String marker) {
        Map<String, String> outcomes = new LinkedHashMap<>();
        Matcher m = Pattern.compile("^" + Pattern.quote(marker) + " (\\S+) (PASS|FAIL)$", Pattern.MULTILINE)
                .matcher(guest.output());
        while (m.find()) {
            outcomes.put(m.group(1), m.group(2));
        }
        return outcomes;
    }

    /** One test per outcome; {@code context} (a seed, say) goes into each failure's message. */
    public static Stream<DynamicTest> tests(UserModeLinux.Result guest, String marker, Map<String, String> outcomes,
            String context) {
        return outcomes.entrySet().stream().map(e -> DynamicTest.dynamicTest(e.getKey(), () ->
                assertThat(e.getValue()).as(e.getKey() + context + " in the guest:\n"
                        + section(guest.output(), marker, e.getKey())).isEqualTo("PASS")));
    }

    /** From the scenario's start line to its outcome line; the whole output if either is missing. */
    static String section(String output, String marker, String scenario) {
        Matcher start = Pattern.compile("^" + Pattern.quote(marker + "-START " + scenario) + "( |$)", Pattern.MULTILINE)
                .matcher(output);
        int end = output.indexOf(marker + " " + scenario + " ");
        return start.find() && end > start.start() ? output.substring(start.start(), end) : output;
    }
}
