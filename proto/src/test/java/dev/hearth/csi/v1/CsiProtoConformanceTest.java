package dev.hearth.csi.v1;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Our hand-written csi.proto must be wire-identical to the official CSI v1.12.0, apart from the one
 * documented rename ({@code mutable_parameters} to {@code mutable_params}, same number, type and
 * json_name) that keeps the generated Java compiling.
 */
class CsiProtoConformanceTest {

  /** The only accepted differences: the documented rename, everywhere upstream uses the name. */
  static final List<String> EXPECTED_RENAMES = List.of(
      rename("csi.v1.CreateVolumeRequest", 8),
      rename("csi.v1.ValidateVolumeCapabilitiesRequest", 6),
      rename("csi.v1.ValidateVolumeCapabilitiesResponse.Confirmed", 4),
      rename("csi.v1.ControllerModifyVolumeRequest", 3));

  private static String rename(String message, int number) {
    return message + " field " + number + ": name: official=mutable_parameters ours=mutable_params";
  }

  private static FileDescriptorProto ours() {
    return Csi.getDescriptor().toProto();
  }

  @Test
  void wireIdenticalToOfficialCsiExceptDocumentedRename(@TempDir Path work) throws Exception {
    Path go = OfficialCsiDescriptor.findGo().orElse(null);
    if (go == null) {
      String why = "`go` is not on PATH, so the official CSI " + OfficialCsiDescriptor.VERSION
          + " descriptor cannot be fetched for comparison";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        fail(why + " (CI=true: install Go to run this conformance test)");
      }
      Assumptions.abort(why + "; skipping (with CI=true this is a failure)");
    }

    FileDescriptorProto official = OfficialCsiDescriptor.fetch(go, work);
    assertThat(official.getPackage()).isEqualTo("csi.v1");
    assertThat(official.getMessageTypeCount()).as("official message count").isGreaterThan(50);
    assertThat(official.getServiceCount()).as("official service count").isEqualTo(5);

    List<String> diffs = DescriptorDiff.compare(official, ours());
    assertThat(diffs)
        .as(() -> "differences from official CSI " + OfficialCsiDescriptor.VERSION + " (" + diffs.size()
            + "):\n  " + String.join("\n  ", diffs) + "\n")
        .containsExactlyInAnyOrderElementsOf(EXPECTED_RENAMES);
  }

  @Test
  void comparisonSeesNothingBetweenIdenticalDescriptors() {
    assertThat(DescriptorDiff.compare(ours(), ours())).isEmpty();
  }

  @Test
  void undoingTheRenameYieldsExactlyTheExpectedDifferences() {
    // Rebuild the upstream spelling from ours: name, entry type, implicit json_name.
    var upstream = ours().toBuilder();
    for (var msg : List.of("CreateVolumeRequest", "ValidateVolumeCapabilitiesRequest",
        "ValidateVolumeCapabilitiesResponse.Confirmed", "ControllerModifyVolumeRequest")) {
      var m = message(upstream, msg);
      var entry = m.getNestedTypeBuilderList().stream()
          .filter(n -> n.getName().equals("MutableParamsEntry")).findFirst().orElseThrow();
      entry.setName("MutableParametersEntry");
      var f = field(m, "mutable_params");
      f.setName("mutable_parameters").clearJsonName()
          .setTypeName(f.getTypeName().replace("MutableParamsEntry", "MutableParametersEntry"));
    }
    assertThat(DescriptorDiff.compare(upstream.build(), ours()))
        .containsExactlyInAnyOrderElementsOf(EXPECTED_RENAMES);
  }

  @Test
  void comparisonReportsDeliberateAlterations() {
    var altered = ours().toBuilder();
    field(message(altered, "CreateVolumeRequest"), "name").setName("volume_name");
    field(message(altered, "DeleteVolumeRequest"), "volume_id").setNumber(9);
    field(message(altered, "NodePublishVolumeRequest"), "secrets").clearOptions();
    field(message(altered, "GetCapacityRequest"), "parameters").setJsonName("params");
    field(message(altered, "Snapshot"), "size_bytes").setType(FieldDescriptorProto.Type.TYPE_INT32);
    message(altered, "ControllerServiceCapability.RPC").getEnumTypeBuilder(0).getValueBuilderList().stream()
        .filter(v -> v.getName().equals("MODIFY_VOLUME")).findFirst().orElseThrow().setNumber(16);
    altered.getServiceBuilderList().stream().filter(s -> s.getName().equals("SnapshotMetadata"))
        .findFirst().orElseThrow().getMethodBuilder(1).setServerStreaming(false);
    altered.getExtensionBuilderList().stream().filter(e -> e.getName().equals("csi_secret"))
        .findFirst().orElseThrow().setNumber(1061);

    List<String> diffs = DescriptorDiff.compare(ours(), altered.build());

    assertThat(diffs).containsExactlyInAnyOrder(
        "csi.v1.CreateVolumeRequest field 1: name: official=name ours=volume_name",
        "csi.v1.CreateVolumeRequest field 1: json_name: official=name ours=volumeName",
        "csi.v1.DeleteVolumeRequest field 1: missing in ours: volume_id",
        "csi.v1.DeleteVolumeRequest field 9: only in ours: volume_id",
        "csi.v1.NodePublishVolumeRequest field 7: option (csi.v1.csi_secret): official=1 ours=null",
        "csi.v1.GetCapacityRequest field 2: json_name: official=parameters ours=params",
        "csi.v1.Snapshot field 1: type: official=int64 ours=int32",
        "csi.v1.ControllerServiceCapability.RPC.Type.MODIFY_VOLUME: number: official=14 ours=16",
        "rpc csi.v1.SnapshotMetadata.GetMetadataDelta: server_streaming: official=true ours=false",
        "extension csi.v1.csi_secret: number: official=1059 ours=1061");
  }

  private static DescriptorProto.Builder message(FileDescriptorProto.Builder file, String dotted) {
    String[] path = dotted.split("\\.");
    DescriptorProto.Builder m = file.getMessageTypeBuilderList().stream()
        .filter(b -> b.getName().equals(path[0])).findFirst().orElseThrow();
    for (int i = 1; i < path.length; i++) {
      String name = path[i];
      m = m.getNestedTypeBuilderList().stream().filter(b -> b.getName().equals(name)).findFirst().orElseThrow();
    }
    return m;
  }

  private static FieldDescriptorProto.Builder field(DescriptorProto.Builder message, String name) {
    return message.getFieldBuilderList().stream().filter(f -> f.getName().equals(name)).findFirst().orElseThrow();
  }
}
