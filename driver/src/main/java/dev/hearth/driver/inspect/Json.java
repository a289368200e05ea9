package dev.hearth.driver.inspect;

import dev.hearth.driver.server.LogFormat;
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

    /** JSON's string escapes, as the log lines use them (a surrogate pair comes out as two escapes). */
    private static void string(String text, StringBuilder out) {
        out.append(LogFormat.quoted(text));
    }
}
