package dev.hearth.storage.lvm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * LVM's metadata text, the format a volume group's metadata area holds and {@code vgcfgbackup}
 * writes: {@code name = value} settings and {@code name { ... }} sections, values being
 * double-quoted strings (backslash escapes), integers, or {@code [ ... ]} lists of those;
 * {@code #} starts a comment outside a string. Anything else is refused, never guessed at.
 */
final class MetadataText {

    /** A {@code name { ... }} section: its settings and subsections, in the order written. */
    record Section(String name, Map<String, Object> entries) {

        Optional<Section> section(String key) {
            return entries.get(key) instanceof Section s ? Optional.of(s) : Optional.empty();
        }

        List<Section> sections() {
            return entries.values().stream().filter(Section.class::isInstance).map(Section.class::cast).toList();
        }

        Optional<String> string(String key) {
            return entries.get(key) instanceof String s ? Optional.of(s) : Optional.empty();
        }

        Optional<Long> number(String key) {
            return entries.get(key) instanceof Long n ? Optional.of(n) : Optional.empty();
        }

        /** A list of strings; empty if there is no such setting, refused if it holds something else. */
        List<String> strings(String key) {
            Object value = entries.get(key);
            if (value == null) {
                return List.of();
            }
            if (!(value instanceof List<?> list) || !list.stream().allMatch(String.class::isInstance)) {
                throw new IllegalArgumentException("'" + key + "' in section '" + name + "' is not a list of strings");
            }
            return list.stream().map(String.class::cast).toList();
        }

        long requireNumber(String key) {
            return number(key).orElseThrow(() -> new IllegalArgumentException(
                    "section '" + name + "' has no number '" + key + "'"));
        }
    }

    private final String text;
    private int at;

    private MetadataText(String text) {
        this.text = text;
    }

    /** The whole text as one unnamed section. */
    static Section parse(String text) {
        MetadataText parser = new MetadataText(text);
        Section top = parser.body("", false);
        return top;
    }

    private Section body(String name, boolean closed) {
        Map<String, Object> entries = new LinkedHashMap<>();
        while (true) {
            skipSpace();
            if (at >= text.length()) {
                if (closed) {
                    throw error("section '" + name + "' is not closed");
                }
                return new Section(name, entries);
            }
            if (text.charAt(at) == '}') {
                if (!closed) {
                    throw error("'}' without a section");
                }
                at++;
                return new Section(name, entries);
            }
            String key = identifier();
            skipSpace();
            char next = at < text.length() ? text.charAt(at) : 0;
            Object value;
            if (next == '{') {
                at++;
                value = body(key, true);
            } else if (next == '=') {
                at++;
                value = value();
            } else {
                throw error("expected '=' or '{' after '" + key + "'");
            }
            if (entries.putIfAbsent(key, value) != null) {
                throw error("'" + key + "' twice in section '" + name + "'");
            }
        }
    }

    private Object value() {
        skipSpace();
        if (at >= text.length()) {
            throw error("value expected");
        }
        char c = text.charAt(at);
        if (c == '"') {
            return string();
        }
        if (c == '[') {
            at++;
            List<Object> list = new ArrayList<>();
            skipSpace();
            if (peek() == ']') {
                at++;
                return List.copyOf(list);
            }
            while (true) {
                Object item = value();
                if (item instanceof List<?>) {
                    throw error("a list inside a list");
                }
                list.add(item);
                skipSpace();
                char sep = peek();
                at++;
                if (sep == ']') {
                    return List.copyOf(list);
                }
                if (sep != ',') {
                    throw error("expected ',' or ']' in a list");
                }
            }
        }
        return number();
    }

    private String string() {
        StringBuilder out = new StringBuilder();
        at++;
        while (at < text.length()) {
            char c = text.charAt(at++);
            if (c == '"') {
                return out.toString();
            }
            if (c == '\\') {
                if (at >= text.length()) {
                    break;
                }
                c = text.charAt(at++);
            }
            out.append(c);
        }
        throw error("string not closed");
    }

    private Long number() {
        int start = at;
        if (peek() == '-') {
            at++;
        }
        while (at < text.length() && Character.isDigit(text.charAt(at))) {
            at++;
        }
        if (at == start || (at == start + 1 && text.charAt(start) == '-')) {
            throw error("expected a string, a number or a list");
        }
        if (at < text.length() && text.charAt(at) == '.') {
            throw error("a fractional number, which no setting hearth reads has");
        }
        try {
            return Long.parseLong(text, start, at, 10);
        } catch (NumberFormatException e) {
            throw error("number out of range");
        }
    }

    /** Names of settings and sections: LVM allows letters, digits and {@code _ . + -} in VG and LV names. */
    private String identifier() {
        int start = at;
        while (at < text.length()) {
            char c = text.charAt(at);
            if (Character.isLetterOrDigit(c) || c == '_' || c == '.' || c == '+' || c == '-') {
                at++;
            } else {
                break;
            }
        }
        if (at == start) {
            throw error("expected a name");
        }
        return text.substring(start, at);
    }

    private void skipSpace() {
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c == '#') {
                while (at < text.length() && text.charAt(at) != '\n') {
                    at++;
                }
            } else if (Character.isWhitespace(c) || c == 0) {
                at++;
            } else {
                return;
            }
        }
    }

    private char peek() {
        return at < text.length() ? text.charAt(at) : 0;
    }

    private IllegalArgumentException error(String what) {
        int line = 1;
        for (int i = 0; i < Math.min(at, text.length()); i++) {
            if (text.charAt(i) == '\n') {
                line++;
            }
        }
        return new IllegalArgumentException("LVM metadata text, line " + line + ": " + what);
    }
}
