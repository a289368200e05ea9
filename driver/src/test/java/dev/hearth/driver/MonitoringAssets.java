package dev.hearth.driver;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.IntPredicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the queries out of deploy/components/monitoring (the Grafana dashboard and the alert rules)
 * and the metric names out of PromQL, just enough for those files: the rules are YAML, but each
 * {@code expr} is written on one line or as a {@code |} block, as the rules file asks.
 */
final class MonitoringAssets {

    private MonitoringAssets() {}

    /** deploy/components/monitoring, from the driver module's directory (where Maven runs tests). */
    static Path directory() {
        Path dir = Path.of("..", "deploy", "components", "monitoring").toAbsolutePath().normalize();
        if (!Files.isDirectory(dir)) {
            throw new AssertionError("no " + dir + ": tests run from the driver module's directory");
        }
        return dir;
    }

    /** Each alert's or recording rule's name and its expression, in file order. */
    static Map<String, String> ruleExpressions(String yaml) {
        Map<String, String> rules = new LinkedHashMap<>();
        Pattern named = Pattern.compile("^\\s*-?\\s*(?:alert|record):\\s*(\\S+)\\s*$");
        Pattern expr = Pattern.compile("^(\\s*)-?\\s*expr:\\s*(.*)$");
        List<String> lines = yaml.lines().toList();
        String name = null;
        for (int i = 0; i < lines.size(); i++) {
            Matcher n = named.matcher(lines.get(i));
            if (n.matches()) {
                name = n.group(1);
                continue;
            }
            Matcher e = expr.matcher(lines.get(i));
            if (!e.matches()) {
                continue;
            }
            if (name == null || rules.containsKey(name)) {
                throw new AssertionError("line " + (i + 1) + ": an expr without an alert or record name before it");
            }
            String value = e.group(2).strip();
            if (value.equals("|") || value.equals("|-")) {
                int indent = e.group(1).length();
                StringBuilder block = new StringBuilder();
                while (i + 1 < lines.size() && (lines.get(i + 1).isBlank() || indentOf(lines.get(i + 1)) > indent)) {
                    block.append(lines.get(++i).strip()).append('\n');
                }
                value = block.toString().strip();
            } else if (value.isEmpty() || value.startsWith(">") || value.startsWith("\"") || value.startsWith("'")
                    || value.contains(" #")) {
                throw new AssertionError("line " + (i + 1) + ": write expr on one line, unquoted, or as a | block");
            }
            rules.put(name, value);
        }
        return rules;
    }

    private static int indentOf(String line) {
        return line.length() - line.stripLeading().length();
    }

    /** Every query of a Grafana dashboard: its panels' targets and its query variables. */
    static List<String> dashboardQueries(String json) {
        List<String> queries = new ArrayList<>();
        collect(JsonParser.parseString(json), queries);
        return queries;
    }

    private static void collect(JsonElement element, List<String> queries) {
        if (element.isJsonArray()) {
            element.getAsJsonArray().forEach(e -> collect(e, queries));
        } else if (element.isJsonObject()) {
            JsonObject object = element.getAsJsonObject();
            if (object.has("expr") && object.get("expr").isJsonPrimitive()) {
                queries.add(object.get("expr").getAsString());
            }
            // A query variable: {"type": "query", "query": {"query": "label_values(...)"}} or a plain string.
            if (object.has("type") && object.get("type").isJsonPrimitive()
                    && object.get("type").getAsString().equals("query") && object.has("query")) {
                JsonElement query = object.get("query");
                queries.add(query.isJsonObject() ? query.getAsJsonObject().get("query").getAsString() : query.getAsString());
            }
            object.entrySet().forEach(e -> collect(e.getValue(), queries));
        }
    }

    /** Words that are PromQL (or Grafana), not metric names, where they stand alone. */
    private static final Set<String> KEYWORDS = Set.of("and", "or", "unless", "bool", "offset", "inf", "nan",
            "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
            "quantile", "limitk", "limit_ratio", "atan2");

    /** Keywords followed by a list of label names in parentheses. */
    private static final Set<String> LABEL_LISTS = Set.of("by", "without", "on", "ignoring", "group_left", "group_right");

    /**
     * The metric names a PromQL expression selects: the identifiers left once strings, numbers,
     * durations, label matchers, label lists, functions, keywords and Grafana variables are taken
     * out; plus the names given as {@code __name__="..."}. Grafana's {@code label_values(metric,
     * label)} counts its first argument only.
     */
    static Set<String> metricNames(String expr) {
        Set<String> names = new LinkedHashSet<>();
        int i = 0;
        while (i < expr.length()) {
            char c = expr.charAt(i);
            if (c == '"' || c == '\'' || c == '`') {
                i = skipString(expr, i);
            } else if (c == '#') {
                i = skipTo(expr, i, '\n');
            } else if (c == '{') {
                int end = skipBalanced(expr, i, '{', '}');
                Matcher name = Pattern.compile("__name__\\s*=\\s*\"([^\"]+)\"").matcher(expr.substring(i, end));
                while (name.find()) {
                    names.add(name.group(1));
                }
                i = end;
            } else if (c == '[') {
                i = skipBalanced(expr, i, '[', ']');
            } else if (c == '$') {
                i = skipVariable(expr, i);
            } else if (Character.isDigit(c) || (c == '.' && i + 1 < expr.length() && Character.isDigit(expr.charAt(i + 1)))) {
                i = skipWhile(expr, i, ch -> Character.isLetterOrDigit(ch) || ch == '.' || ch == '_');
            } else if (Character.isLetter(c) || c == '_' || c == ':') {
                int end = skipWhile(expr, i, ch -> Character.isLetterOrDigit(ch) || ch == '_' || ch == ':');
                String word = expr.substring(i, end);
                int next = skipWhile(expr, end, Character::isWhitespace);
                boolean call = next < expr.length() && expr.charAt(next) == '(';
                if (LABEL_LISTS.contains(word.toLowerCase(Locale.ROOT))) {
                    i = call ? skipBalanced(expr, next, '(', ')') : end;
                } else if (word.equals("label_values") && call) {
                    int close = skipBalanced(expr, next, '(', ')');
                    String arguments = expr.substring(next + 1, close - 1);
                    int comma = topLevelComma(arguments);
                    if (comma >= 0) {
                        names.addAll(metricNames(arguments.substring(0, comma)));
                    }
                    i = close;
                } else {
                    if (!call && !KEYWORDS.contains(word.toLowerCase(Locale.ROOT))) {
                        names.add(word);
                    }
                    i = end;
                }
            } else {
                i++;
            }
        }
        return names;
    }

    private static int skipString(String text, int start) {
        char quote = text.charAt(start);
        int i = start + 1;
        while (i < text.length() && text.charAt(i) != quote) {
            i += text.charAt(i) == '\\' && quote != '`' ? 2 : 1;
        }
        return i + 1;
    }

    private static int skipTo(String text, int start, char end) {
        int at = text.indexOf(end, start);
        return at < 0 ? text.length() : at + 1;
    }

    /** Past the bracket that closes the one at {@code start}, stepping over strings inside. */
    private static int skipBalanced(String text, int start, char open, char close) {
        int depth = 0;
        int i = start;
        while (i < text.length()) {
            char c = text.charAt(i);
            if (c == '"' || c == '\'' || c == '`') {
                i = skipString(text, i);
                continue;
            }
            if (c == open) {
                depth++;
            } else if (c == close && --depth == 0) {
                return i + 1;
            }
            i++;
        }
        throw new AssertionError("unbalanced " + open + " in: " + text);
    }

    /** {@code $var}, {@code ${var}}, {@code ${var:format}}, {@code $__rate_interval}. */
    private static int skipVariable(String text, int start) {
        if (start + 1 < text.length() && text.charAt(start + 1) == '{') {
            return skipTo(text, start, '}');
        }
        return skipWhile(text, start + 1, ch -> Character.isLetterOrDigit(ch) || ch == '_');
    }

    private static int skipWhile(String text, int start, IntPredicate predicate) {
        int i = start;
        while (i < text.length() && predicate.test(text.charAt(i))) {
            i++;
        }
        return i;
    }

    private static int topLevelComma(String arguments) {
        int depth = 0;
        for (int i = 0; i < arguments.length(); i++) {
            char c = arguments.charAt(i);
            if (c == '"' || c == '\'' || c == '`') {
                i = skipString(arguments, i) - 1;
            } else if (c == '(' || c == '{' || c == '[') {
                depth++;
            } else if (c == ')' || c == '}' || c == ']') {
                depth--;
            } else if (c == ',' && depth == 0) {
                return i;
            }
        }
        return -1;
    }
}
