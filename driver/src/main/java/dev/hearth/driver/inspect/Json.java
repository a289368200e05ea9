package dev.hearth.driver.inspect;

import java.util.List;
import java.util.Map;

/**
 * Writes a tree of maps (keys in their order), lists, strings, numbers, booleans and nulls as
 * indented JSON (RFC 8259). What the inspection prints needs no more, and no library for it.
 */
final class Json {

    private Json() {}

    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out, "");
        return out.append('\n').toString();
    }

    private static void write(Object value, StringBuilder out, String indent) {
        switch (value) {
            case null -> out.append("null");
            case String text -> string(text, out);
            case Boolean flag -> out.append(flag);
            case Integer number -> out.append(number);
            case Long number -> out.append(number);
            case Map<?, ?> map -> {
                if (map.isEmpty()) {
                    out.append("{}");
                    return;
                }
                String inner = indent + "  ";
                out.append("{\n");
                int i = 0;
                for (var entry : map.entrySet()) {
                    out.append(inner);
                    string((String) entry.getKey(), out);
                    out.append(": ");
                    write(entry.getValue(), out, inner);
                    out.append(++i < map.size() ? ",\n" : "\n");
                }
                out.append(indent).append('}');
            }
            case List<?> list -> {
                if (list.isEmpty()) {
                    out.append("[]");
                    return;
                }
                String inner = indent + "  ";
                out.append("[\n");
                for (int i = 0; i < list.size(); i++) {
                    out.append(inner);
                    write(list.get(i), out, inner);
                    out.append(i + 1 < list.size() ? ",\n" : "\n");
                }
                out.append(indent).append(']');
            }
            default -> throw new IllegalArgumentException("no JSON for a " + value.getClass().getName());
        }
    }

    private static void string(String text, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20 || c == 0x7f || Character.isSurrogate(c) && !validSurrogate(text, i)) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    /** A surrogate that is half of a pair; a lone one is escaped so the output stays valid UTF-8. */
    private static boolean validSurrogate(String text, int i) {
        char c = text.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(text.charAt(i - 1));
    }
}
