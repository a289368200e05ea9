package dev.hearth.csi.v1;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Obtains the official CSI descriptor by fetching the upstream Go module at test time and running
 * the tiny program in {@code src/test/resources/officialdesc}, which prints
 * {@code protodesc.ToFileDescriptorProto(csi.File_csi_proto)}. Nothing upstream is kept in the repo.
 */
final class OfficialCsiDescriptor {

  static final String MODULE = "github.com/container-storage-interface/spec";
  static final String VERSION = "v1.12.0";
  private static final List<String> RESOURCES = List.of("go.mod", "main.go");
  private static final long TIMEOUT_MINUTES = 15;

  private OfficialCsiDescriptor() {}

  /** The {@code go} executable on PATH, if any. */
  static Optional<Path> findGo() {
    String path = System.getenv("PATH");
    if (path == null) {
      return Optional.empty();
    }
    for (String dir : path.split(File.pathSeparator)) {
      if (dir.isEmpty()) {
        continue;
      }
      Path candidate = Path.of(dir, "go");
      if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  /** Downloads the upstream module (cached by Go) and returns its compiled csi.proto descriptor. */
  static FileDescriptorProto fetch(Path go, Path workDir) throws IOException, InterruptedException {
    for (String name : RESOURCES) {
      try (InputStream in = OfficialCsiDescriptor.class.getResourceAsStream("/officialdesc/" + name)) {
        if (in == null) {
          throw new IllegalStateException("test resource officialdesc/" + name + " is missing");
        }
        Files.copy(in, workDir.resolve(name), StandardCopyOption.REPLACE_EXISTING);
      }
    }
    run(go, workDir, "mod", "download", MODULE + "@" + VERSION);
    run(go, workDir, "mod", "tidy");
    String resolved = new String(run(go, workDir, "list", "-m", "-f", "{{.Version}}", MODULE),
        StandardCharsets.UTF_8).strip();
    if (!resolved.equals(VERSION)) {
      throw new IllegalStateException("expected " + MODULE + " " + VERSION + " but Go resolved " + resolved);
    }
    byte[] descriptor = run(go, workDir, "run", ".");
    return FileDescriptorProto.parseFrom(descriptor);
  }

  /** Runs {@code go args...} in {@code dir}; returns stdout, throws with stderr on failure. */
  private static byte[] run(Path go, Path dir, String... args) throws IOException, InterruptedException {
    var command = new ArrayList<String>();
    command.add(go.toString());
    command.addAll(List.of(args));
    Path out = Files.createTempFile(dir, "go-", ".out");
    Path err = Files.createTempFile(dir, "go-", ".err");
    var pb = new ProcessBuilder(command).directory(dir.toFile())
        .redirectOutput(out.toFile()).redirectError(err.toFile());
    var env = pb.environment();
    env.put("GOFLAGS", "-mod=mod");
    env.put("GOTOOLCHAIN", "local"); // never download another Go toolchain
    env.put("GOWORK", "off");
    env.put("GO111MODULE", "on");
    env.put("CGO_ENABLED", "0"); // no C compiler needed
    Process p = pb.start();
    p.getOutputStream().close(); // no stdin
    if (!p.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new IllegalStateException("timed out after " + TIMEOUT_MINUTES + " min: " + command);
    }
    if (p.exitValue() != 0) {
      throw new IllegalStateException("`" + String.join(" ", command) + "` in " + dir + " exited "
          + p.exitValue() + ":\n" + Files.readString(err, StandardCharsets.UTF_8));
    }
    return Files.readAllBytes(out);
  }
}
