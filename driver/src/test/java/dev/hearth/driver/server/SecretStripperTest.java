package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.Csi;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class SecretStripperTest {

    private final SecretStripper stripper = new SecretStripper();

    private static VolumeCapability mountCapability() {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4").addMountFlags("noatime"))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
    }

    @Test
    void createVolumeSecretsNeverAppear() {
        CreateVolumeRequest request = CreateVolumeRequest.newBuilder()
                .setName("pvc-1")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1L << 30))
                .addVolumeCapabilities(mountCapability())
                .putParameters("hearth.dev/pool", "fast")
                .putSecrets("csi.storage.k8s.io/provisioner-secret-name", "hunter2")
                .putSecrets("token", "s3cr3t-t0k3n")
                .build();

        String text = stripper.toText(request);

        assertThat(text)
                .doesNotContain("hunter2", "s3cr3t-t0k3n", "provisioner-secret-name", "token")
                .contains(
                        "name: \"pvc-1\"",
                        "capacity_range { required_bytes: 1073741824 }",
                        "volume_capabilities { mount { fs_type: \"ext4\" mount_flags: \"noatime\" }"
                                + " access_mode { mode: SINGLE_NODE_WRITER } }",
                        "parameters { key: \"hearth.dev/pool\" value: \"fast\" }",
                        "secrets: \"***stripped***\"");
        assertThat(text.split("\\*\\*\\*stripped\\*\\*\\*", -1)).as("one mark for the whole map").hasSize(2);
    }

    @Test
    void nodeStageSecretsNeverAppear() {
        NodeStageVolumeRequest request = NodeStageVolumeRequest.newBuilder()
                .setVolumeId("hv-7")
                .setStagingTargetPath("/var/lib/kubelet/plugins/kubernetes.io/csi/hearth/abc/globalmount")
                .setVolumeCapability(mountCapability())
                .putPublishContext("device", "/dev/loop3")
                .putVolumeContext("hearth.dev/pool", "fast")
                .putSecrets("luks-passphrase", "correct horse battery staple")
                .build();

        String text = stripper.toText(request);

        assertThat(text)
                .doesNotContain("correct horse battery staple", "luks-passphrase")
                .contains(
                        "volume_id: \"hv-7\"",
                        "publish_context { key: \"device\" value: \"/dev/loop3\" }",
                        "volume_context { key: \"hearth.dev/pool\" value: \"fast\" }",
                        "secrets: \"***stripped***\"");
    }

    @Test
    void withoutSecretsItReadsAsProtobufTextFormat() {
        CreateVolumeRequest request = CreateVolumeRequest.newBuilder()
                .setName("pvc \"quoted\" \u00e9")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1L << 30).setLimitBytes(2L << 30))
                .addVolumeCapabilities(mountCapability())
                .addVolumeCapabilities(VolumeCapability.newBuilder().setBlock(VolumeCapability.BlockVolume.getDefaultInstance()))
                .putParameters("a", "b")
                .build();

        String text = stripper.toText(request);

        assertThat(text).isEqualTo(TextFormat.printer().emittingSingleLine(true).printToString(request).strip());
    }

    @Test
    void emptyMessageIsEmptyText() {
        assertThat(stripper.toText(CreateVolumeRequest.getDefaultInstance())).isEmpty();
    }

    /** Every field the CSI contract marks secret, filled with a marker, in every message that has one. */
    @Test
    void everySecretFieldOfTheCsiContractIsStripped() {
        List<Descriptor> withSecrets = allMessages(Csi.getDescriptor().getMessageTypes().stream())
                .filter(type -> type.getFields().stream().anyMatch(SecretStripperTest::isSecret))
                .toList();
        assertThat(withSecrets).hasSizeGreaterThanOrEqualTo(9);

        for (Descriptor type : withSecrets) {
            Message message = withSecretsFilledIn(type);

            assertThat(stripper.toText(message))
                    .as(type.getName())
                    .contains("***stripped***")
                    .doesNotContain("TOP-SECRET");
        }
    }

    private static Stream<Descriptor> allMessages(Stream<Descriptor> types) {
        return types.flatMap(t -> Stream.concat(Stream.of(t), allMessages(t.getNestedTypes().stream())));
    }

    private static boolean isSecret(FieldDescriptor field) {
        return field.getOptions().getExtension(Csi.csiSecret);
    }

    private static Message withSecretsFilledIn(Descriptor type) {
        DynamicMessage.Builder builder = DynamicMessage.newBuilder(type);
        List<FieldDescriptor> secrets = new ArrayList<>(type.getFields().stream().filter(SecretStripperTest::isSecret).toList());
        for (FieldDescriptor field : secrets) {
            if (field.isMapField()) {
                Descriptor entry = field.getMessageType();
                builder.addRepeatedField(field, DynamicMessage.newBuilder(entry)
                        .setField(entry.findFieldByName("key"), "TOP-SECRET-KEY")
                        .setField(entry.findFieldByName("value"), "TOP-SECRET-VALUE")
                        .build());
            } else if (field.getJavaType() == FieldDescriptor.JavaType.STRING) {
                builder.setField(field, "TOP-SECRET");
            } else {
                throw new AssertionError("unexpected secret field type: " + field.getFullName());
            }
        }
        return builder.build();
    }
}
