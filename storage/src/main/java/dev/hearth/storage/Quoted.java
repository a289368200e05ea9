package dev.hearth.storage;

/**
 * A value a request sent, as an error message quotes it: in single quotes, every character
 * outside printable ASCII escaped ({@code \0}, {@code \n}, {@code \u202e}, ...), and cut to a
 * short prefix with the full length after it, e.g. {@code 'vvvv…' (70000 chars)}.
 *
 * <p>A request can carry anything, and a message that repeated it whole could grow past what a
 * gRPC client accepts as status metadata (8 KiB by default; the client then sees a transport
 * error instead of the status), or put control characters into the logs that show it.
 */
public final class Quoted {

    /** At most this many characters of the value are shown; a kubelet path (~150) fits whole. */
    public static final int LIMIT = 256;

    private Quoted() {}

    public static String of(java.nio.file.Path path) {
        return of(path.toString());
    }

    public static String of(String value) {
        if (value == null) {
            return "(none)";
        }
        StringBuilder out = new StringBuilder(Math.min(value.length(), LIMIT) + 24).append('\'');
        int shown = 0;
        for (; shown < value.length(); shown++) {
            String escaped = escape(value.charAt(shown));
            if (out.length() - 1 + escaped.length() > LIMIT) {
                break;
            }
            out.append(escaped);
        }
        if (shown == value.length()) {
            return out.append('\'').toString();
        }
        return out.append("…' (").append(value.length()).append(" chars)").toString();
    }

    private static String escape(char c) {
        return switch (c) {
            case '\0' -> "\\0";
            case '\n' -> "\\n";
            case '\r' -> "\\r";
            case '\t' -> "\\t";
            case '\'' -> "\\'";
            case '\\' -> "\\\\";
            default -> c >= ' ' && c <= '~' ? String.valueOf(c) : String.format("\\u%04x", (int) c);
        };
    }
}
