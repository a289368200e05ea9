package dev.hearth.storage.file;

import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/** The metadata file beside a volume's image, as Java properties (one format version so far). */
final class VolumeMetadata {

    private static final String FORMAT = "1";
    private static final String PARAM = "param.";

    private VolumeMetadata() {}

    static String encode(Volume volume) {
        Properties props = new Properties();
        props.setProperty("format", FORMAT);
        props.setProperty("id", volume.id().toString());
        props.setProperty("name", volume.name());
        props.setProperty("size", Long.toString(volume.sizeBytes()));
        props.setProperty("created", volume.createdAt().toString());
        volume.parameters().forEach((k, v) -> props.setProperty(PARAM + k, v));
        StringWriter out = new StringWriter();
        try {
            props.store(out, "hearth volume; written atomically, do not edit");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    static Volume decode(VolumeId id, String text) throws IOException {
        Properties props = new Properties();
        props.load(new StringReader(text));
        if (!FORMAT.equals(props.getProperty("format")) || !id.toString().equals(props.getProperty("id"))) {
            throw new IOException("metadata of " + id + " has format " + props.getProperty("format")
                    + " and id " + props.getProperty("id"));
        }
        Map<String, String> parameters = new TreeMap<>();
        for (String key : props.stringPropertyNames()) {
            if (key.startsWith(PARAM)) {
                parameters.put(key.substring(PARAM.length()), props.getProperty(key));
            }
        }
        try {
            return new Volume(id, props.getProperty("name"), Long.parseLong(props.getProperty("size")), parameters,
                    Instant.parse(props.getProperty("created")));
        } catch (RuntimeException e) {
            throw new IOException("metadata of " + id + " is malformed: " + e.getMessage(), e);
        }
    }
}
