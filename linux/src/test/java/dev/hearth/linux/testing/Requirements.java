package dev.hearth.linux.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Decides whether a test that needs root or host tools may run. Locally a missing requirement
 * skips the test and says why; in CI ({@code CI=true}) it fails the test instead, because a CI
 * run that silently skips the real tests proves nothing.
 */
final class Requirements implements ExecutionCondition {

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        List<String> missing = new ArrayList<>();
        context.getElement().ifPresent(element -> {
            RequiresRoot root = element.getAnnotation(RequiresRoot.class);
            if (root != null && !isRoot()) {
                missing.add("root (uid 0)");
            }
            RequiresTools tools = element.getAnnotation(RequiresTools.class);
            if (tools != null) {
                Arrays.stream(tools.value()).filter(t -> !onPath(t)).forEach(t -> missing.add("tool " + t));
            }
        });
        if (missing.isEmpty()) {
            return ConditionEvaluationResult.enabled("requirements met");
        }
        String reason = "needs " + String.join(", ", missing);
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            throw new IllegalStateException("CI=true but the test environment lacks: " + reason
                    + " (.ci/run must install it)");
        }
        return ConditionEvaluationResult.disabled("skipped: " + reason);
    }

    static boolean isRoot() {
        try {
            return Files.readAllLines(Path.of("/proc/self/status")).stream()
                    .filter(l -> l.startsWith("Uid:"))
                    .map(l -> l.split("\\s+")[2]) // real, effective, saved, fs: take effective
                    .anyMatch("0"::equals);
        } catch (IOException e) {
            return false;
        }
    }

    static boolean onPath(String tool) {
        String path = System.getenv().getOrDefault("PATH", "") + ":/usr/sbin:/sbin";
        return Arrays.stream(path.split(":"))
                .filter(dir -> !dir.isEmpty())
                .anyMatch(dir -> Files.isExecutable(Path.of(dir, tool)));
    }
}
