package dev.hearth.storage.lvm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads what {@code lvm ... --reportformat json} prints: {@code {"report": [{"lv": [{"lv_name":
 * "a", ...}, ...]}]}}. LVM writes every field as a string, so a row is a map of strings; the
 * parser still accepts any JSON (numbers, literals and nesting become text or are skipped) and
 * refuses what is not JSON.
 */
final class ReportJson {

    private final String text;
    private int at;

    private ReportJson(String text) {
        this.text = text;
    }

    /** The rows of every report section named {@code section} ("lv", "vg", "pv", ...). */
    static List<Map<String, String>> rows(String json, String section) {
        ReportJson parser = new ReportJson(json);
        Object root = parser.value();
        parser.space();
        if (parser.at != json.length()) {
            throw parser.error("text after the report");
        }
        List<Map<String, String>> rows = new ArrayList<>();
        if (root instanceof Map<?, ?> top && top.get("report") instanceof List<?> reports) {
            for (Object report : reports) {
                if (report instanceof Map<?, ?> sections && sections.get(section) instanceof List<?> entries) {
                    for (Object entry : entries) {
                        if (entry instanceof Map<?, ?> row) {
                            Map<String, String> fields = new LinkedHashMap<>();
                            row.forEach((k, v) -> fields.put(k.toString(), v instanceof String s ? s : String.valueOf(v)));
                            rows.add(fields);
                        }
                    }
                }
            }
            return rows;
        }
        throw new IllegalArgumentException("not an lvm report: no \"report\" list");
    }

    private Object value() {
        space();
        if (at >= text.length()) {
            throw error("unexpected end");
        }
        char c = text.charAt(at);
        return switch (c) {
            case '{' -> object();
            case '[' -> array();
            case '"' -> string();
            default -> literal();
        };
    }

    private Map<String, Object> object() {
        Map<String, Object> map = new LinkedHashMap<>();
        at++;
        space();
        if (peek() == '}') {
            at++;
            return map;
        }
        while (true) {
            space();
            if (peek() != '"') {
                throw error("expected a field name");
            }
            String key = string();
            space();
            expect(':');
            map.put(key, value());
            space();
            char c = next();
            if (c == '}') {
                return map;
            }
            if (c != ',') {
                throw error("expected , or }");
            }
        }
    }

    private List<Object> array() {
        List<Object> list = new ArrayList<>();
        at++;
        space();
        if (peek() == ']') {
            at++;
            return list;
        }
        while (true) {
            list.add(value());
            space();
            char c = next();
            if (c == ']') {
                return list;
            }
            if (c != ',') {
                throw error("expected , or ]");
            }
        }
    }

    private String string() {
        expect('"');
        StringBuilder out = new StringBuilder();
        while (true) {
            char c = next();
            if (c == '"') {
                return out.toString();
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            char escaped = next();
            switch (escaped) {
                case '"', '\\', '/' -> out.append(escaped);
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> {
                    if (at + 4 > text.length()) {
                        throw error("short \\u escape");
                    }
                    try {
                        out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    } catch (NumberFormatException e) {
                        throw error("bad \\u escape");
                    }
                    at += 4;
                }
                default -> throw error("bad escape \\" + escaped);
            }
        }
    }

    private String literal() {
        int start = at;
        while (at < text.length() && "{}[],: \t\r\n\"".indexOf(text.charAt(at)) < 0) {
            at++;
        }
        if (start == at) {
            throw error("unexpected character '" + text.charAt(at) + "'");
        }
        return text.substring(start, at);
    }

    private void space() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
    }

    private char peek() {
        if (at >= text.length()) {
            throw error("unexpected end");
        }
        return text.charAt(at);
    }

    private char next() {
        char c = peek();
        at++;
        return c;
    }

    private void expect(char c) {
        if (next() != c) {
            at--;
            throw error("expected '" + c + "'");
        }
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("lvm report is not valid JSON at offset " + at + ": " + what);
    }
}
