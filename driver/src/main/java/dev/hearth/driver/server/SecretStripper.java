package dev.hearth.driver.server;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.TextFormat;
import dev.hearth.csi.v1.Csi;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Renders a message as one line of protobuf text format with every field marked {@code
 * (csi.v1.csi_secret) = true} shown as {@value #STRIPPED}, however deep it sits (nested messages,
 * repeated fields, map values). The whole field is replaced, keys included, as csi-lib-utils'
 * protosanitizer does: secret names can be telling too.
 */
public final class SecretStripper {

    public static final String STRIPPED = "***stripped***";

    private final TextFormat.Printer values = TextFormat.printer().emittingSingleLine(true);
    private final ConcurrentHashMap<FieldDescriptor, Boolean> secret = new ConcurrentHashMap<>();

    public String toText(MessageOrBuilder message) {
        StringBuilder out = new StringBuilder();
        appendFields(message, out);
        return out.toString();
    }

    private void appendFields(MessageOrBuilder message, StringBuilder out) {
        for (Map.Entry<FieldDescriptor, Object> entry : message.getAllFields().entrySet()) {
            FieldDescriptor field = entry.getKey();
            if (isSecret(field)) {
                separate(out).append(name(field)).append(": \"").append(STRIPPED).append('"');
            } else if (field.isRepeated()) {
                for (Object value : (List<?>) entry.getValue()) {
                    appendField(field, value, out);
                }
            } else {
                appendField(field, entry.getValue(), out);
            }
        }
    }

    private void appendField(FieldDescriptor field, Object value, StringBuilder out) {
        separate(out).append(name(field));
        if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
            out.append(" { ");
            appendFields((MessageOrBuilder) value, out);
            separate(out).append('}');
            return;
        }
        out.append(": ");
        try {
            values.printFieldValue(field, value, out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private boolean isSecret(FieldDescriptor field) {
        return secret.computeIfAbsent(field, f -> f.getOptions().getExtension(Csi.csiSecret));
    }

    private static String name(FieldDescriptor field) {
        return field.isExtension() ? "[" + field.getFullName() + "]" : field.getName();
    }

    private static StringBuilder separate(StringBuilder out) {
        if (!out.isEmpty() && out.charAt(out.length() - 1) != ' ') {
            out.append(' ');
        }
        return out;
    }
}
