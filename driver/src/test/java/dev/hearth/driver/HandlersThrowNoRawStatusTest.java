package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The CSI services fail only through storage's exceptions, so that every failure becomes a status
 * in one place, ErrorMapping. A text check of their main sources, not of the compiled classes: it
 * finds any mention of grpc's {@code Status}, {@code StatusRuntimeException} or {@code
 * StatusException} (an import, a qualified name, or {@code Status.SOMETHING}), which is how a
 * handler builds a raw status; a status reached some other way (a helper in another module) it
 * would not see. The CSI messages' own {@code VolumeStatus} is not grpc's and is allowed.
 */
class HandlersThrowNoRawStatusTest {

    private static final Path REPOSITORY = Path.of("..").toAbsolutePath().normalize();
    private static final List<String> SERVICE_MODULES = List.of("driver-controller", "driver-node", "identity");
    private static final Pattern RAW_STATUS = Pattern.compile(
            "io\\.grpc\\.Status|(?<![\\w.])Status(RuntimeException|Exception)?\\b(?!\\w)");

    @Test
    void serviceSourcesNeverNameGrpcStatus() throws IOException {
        List<String> found = new ArrayList<>();
        List<Path> sources = new ArrayList<>();
        for (String module : SERVICE_MODULES) {
            Path root = REPOSITORY.resolve(module).resolve("src/main/java");
            try (Stream<Path> files = Files.walk(root)) {
                files.filter(f -> f.toString().endsWith(".java")).forEach(sources::add);
            }
        }
        for (Path source : sources) {
            List<String> lines = read(source);
            for (int i = 0; i < lines.size(); i++) {
                if (RAW_STATUS.matcher(lines.get(i)).find()) {
                    found.add(REPOSITORY.relativize(source) + ":" + (i + 1) + ": " + lines.get(i).strip());
                }
            }
        }

        assertThat(sources).as("the services' sources were found").hasSizeGreaterThanOrEqualTo(SERVICE_MODULES.size());
        assertThat(found).as("throw a StorageException instead; ErrorMapping chooses the status").isEmpty();
    }

    @Test
    void theCheckSeesARawStatus() {
        assertThat(RAW_STATUS.matcher("throw Status.INVALID_ARGUMENT.withDescription(m).asRuntimeException();").find())
                .isTrue();
        assertThat(RAW_STATUS.matcher("import io.grpc.Status;").find()).isTrue();
        assertThat(RAW_STATUS.matcher("catch (StatusRuntimeException e) {").find()).isTrue();
        assertThat(RAW_STATUS.matcher(".setStatus(ListVolumesResponse.VolumeStatus.newBuilder())").find()).isFalse();
    }

    private static List<String> read(Path source) {
        try {
            return Files.readAllLines(source);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
