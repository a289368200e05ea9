package dev.hearth.driver;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.OneofDescriptor;
import com.google.protobuf.Message;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.csi.v1.VolumeCapability.AccessMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * Random but well-typed CSI requests. Every field of a request is filled (or left out) through
 * protobuf reflection, so every RPC and every field is covered without a list to keep up to date;
 * the value comes from a generator chosen by the field's name: IDs of real and made-up volumes,
 * paths, sizes, capabilities, parameter maps, and strings of every awkward kind (NUL, control
 * characters, lone surrogates, 100k characters).
 *
 * <p>To reach past validation, half of the requests are coherent: every field names one real
 * volume the way the kubelet or the provisioner would (its ID, its staging path, its capability),
 * and then most of them get one field replaced by a random value.
 *
 * <p>Every absolute path a request carries lies under {@code root}, so that nothing the driver
 * does on its behalf (mkdir, mount, unmount, delete) can reach outside the test's directory.
 */
final class RequestFuzzer {

    /** The size of the volumes the fuzz prepares, and the pools' default. */
    static final long SIZE = 64 * TestDriver.MIB;

    /** A volume the fuzz knows of, and where the kubelet would stage and publish it. */
    record Known(String id, String name, String pool, boolean block, String fsType, Path staging, Path target) {}

    private static final String[] SPECIAL = {".", "..", "/", "-", "_", " ", "\0", "\n", "\r\n", "%", "%00", "%s",
        "'", "\"", "\\", "\u202e", "\ud800", "\udc00x", "\ud83d\ude00", "null", "true", "-1", "0",
        "99999999999999999999", "0x10", "1e3", "${x}", "../../etc/passwd", "default", "second",
        "csi.storage.k8s.io/", "hearth.dev/"};
    private static final String[] FS_TYPES = {"", "ext4", "xfs", "btrfs", "EXT4", " xfs ", "ntfs", "ext3", "xfs\0",
        "ext4 "};
    private static final String[] MOUNT_FLAGS = {"noatime", "nodev", "nosuid", "ro", "rw", "discard",
        "errors=remount-ro", "bind", "rbind", "remount", "shared", "defaults", "x-mount.mkdir",
        "nonsense_option=1", "", "a,b", "ro\0", "lazytime"};
    private static final String[] SIZES = {"16Mi", "1Mi", "1", "1Gi", "0", "", "-1", "1.5Gi", "10Ti", "512 Mi", " 1Gi ",
        "99999999999999999999", "9223372036854775807Pi", "1e9", "Gi", "0x20000000"};
    private static final String[] GROUPS = {"", "0", "1000", "-1", "wheel", "4294967296", "65534", "12.5"};
    private static final long[] BYTES = {0, 1, TestDriver.MIB, SIZE, SIZE + 1, TestDriver.GIB, 2 * TestDriver.GIB,
        1L << 40, Long.MAX_VALUE, Long.MIN_VALUE, -1, -TestDriver.MIB, 1000};

    /** The fields the driver takes as paths on the node: {@link #path} and {@link #confined} keep them under the root. */
    private static final Set<String> PATH_FIELDS = Set.of("staging_target_path", "target_path", "volume_path");

    private final Random random;
    private final Path root;
    private final List<Known> volumes = new ArrayList<>();
    private final List<String> snapshots = new ArrayList<>();
    private final List<Path> fixtures = new ArrayList<>();

    // What the request being built is about.
    private Known focus;
    private boolean coherent;

    RequestFuzzer(Random random, Path root) {
        this.random = random;
        this.root = root;
    }

    void learnVolume(Known volume) {
        if (volumes.stream().noneMatch(v -> v.id().equals(volume.id())) && volumes.size() < 16) {
            volumes.add(volume);
        }
    }

    void learnSnapshot(String id) {
        if (!snapshots.contains(id)) {
            snapshots.add(id);
        }
    }

    /** Paths that exist under the root (files, devices, symlinks...), for requests to name. */
    void learnFixture(Path path) {
        fixtures.add(path);
    }

    List<Known> volumes() {
        return List.copyOf(volumes);
    }

    /** Where a volume the fuzz learns of would be staged and published. */
    Known known(String id, String name, String pool, boolean block, String fsType) {
        int n = volumes.size();
        return new Known(id, name, pool, block, fsType, root.resolve("staging/v" + n),
                root.resolve("pods/v" + n + (block ? "/dev" : "/vol")));
    }

    int random(int bound) {
        return random.nextInt(bound);
    }

    Message request(Message prototype) {
        focus = volumes.get(random.nextInt(volumes.size()));
        coherent = random.nextBoolean();
        Message.Builder request = prototype.newBuilderForType();
        fill(request, 0);
        List<FieldDescriptor> fields = request.getDescriptorForType().getFields();
        if (coherent && !fields.isEmpty() && random.nextInt(10) < 7) {
            FieldDescriptor field = fields.get(random.nextInt(fields.size()));
            request.clearField(field);
            coherent = false;
            if (random.nextInt(4) > 0) {
                set(request, field, 0);
            }
        }
        return request.build();
    }

    private void fill(Message.Builder builder, int depth) {
        Map<OneofDescriptor, FieldDescriptor> chosen = new HashMap<>();
        for (OneofDescriptor oneof : builder.getDescriptorForType().getRealOneofs()) {
            int pick = random.nextInt(oneof.getFieldCount() + 1);
            if (pick < oneof.getFieldCount()) {
                chosen.put(oneof, oneof.getField(pick));
            }
        }
        for (FieldDescriptor field : builder.getDescriptorForType().getFields()) {
            OneofDescriptor oneof = field.getRealContainingOneof();
            if ((oneof != null && chosen.get(oneof) != field) || (!coherent && random.nextInt(5) == 0)) {
                continue;
            }
            set(builder, field, depth);
        }
    }

    private void set(Message.Builder builder, FieldDescriptor field, int depth) {
        if (field.isMapField()) {
            int entries = coherent ? 0 : random.nextInt(4);
            Map<String, String> map = new HashMap<>();
            if (coherent) {
                coherentMap(field.getName(), map);
            }
            for (int i = 0; i < entries; i++) {
                String key = mapKey(field.getName());
                map.put(key, mapValue(key));
            }
            Descriptor entry = field.getMessageType();
            map.forEach((key, value) -> builder.addRepeatedField(field, builder.newBuilderForField(field)
                    .setField(entry.findFieldByName("key"), key)
                    .setField(entry.findFieldByName("value"), value).build()));
        } else if (field.isRepeated()) {
            int count = coherent ? (field.getName().equals("mount_flags") ? random.nextInt(2) : 1) : random.nextInt(4);
            for (int i = 0; i < count; i++) {
                builder.addRepeatedField(field, value(builder, field, depth));
            }
        } else {
            builder.setField(field, value(builder, field, depth));
        }
    }

    private Object value(Message.Builder builder, FieldDescriptor field, int depth) {
        return switch (field.getJavaType()) {
            case STRING -> string(field.getName());
            case LONG -> field.getName().endsWith("_bytes") ? bytes(field.getName()) : random.nextLong();
            case INT -> field.getName().equals("max_entries")
                    ? pick(new Integer[] {0, 1, 2, 3, -1, Integer.MIN_VALUE, Integer.MAX_VALUE}) : random.nextInt();
            case BOOLEAN -> random.nextBoolean();
            case FLOAT -> random.nextFloat();
            case DOUBLE -> random.nextDouble();
            case BYTE_STRING -> ByteString.copyFromUtf8(anyString());
            case ENUM -> enumValue(field.getEnumType());
            case MESSAGE -> message(builder, field, depth);
        };
    }

    private Object message(Message.Builder builder, FieldDescriptor field, int depth) {
        if (field.getMessageType().equals(VolumeCapability.getDescriptor())
                && (coherent || random.nextInt(5) < 3)) {
            return capability();
        }
        Message.Builder child = builder.newBuilderForField(field);
        if (depth < 3) {
            fill(child, depth + 1);
        }
        return child.build();
    }

    private Object enumValue(EnumDescriptor type) {
        if (!coherent && random.nextInt(4) == 0) {
            int number = random.nextBoolean() ? 100 + random.nextInt(1000) : -1 - random.nextInt(3);
            return type.findValueByNumberCreatingIfUnknown(number);
        }
        return type.getValues().get(random.nextInt(type.getValues().size()));
    }

    private VolumeCapability capability() {
        boolean block = coherent ? focus.block() : random.nextInt(3) == 0;
        VolumeCapability.Builder capability = VolumeCapability.newBuilder().setAccessMode(AccessMode.newBuilder()
                .setMode(pick(new AccessMode.Mode[] {AccessMode.Mode.SINGLE_NODE_WRITER,
                    AccessMode.Mode.SINGLE_NODE_READER_ONLY, AccessMode.Mode.SINGLE_NODE_SINGLE_WRITER,
                    AccessMode.Mode.SINGLE_NODE_MULTI_WRITER})));
        if (block) {
            return capability.setBlock(VolumeCapability.BlockVolume.getDefaultInstance()).build();
        }
        VolumeCapability.MountVolume.Builder mount = VolumeCapability.MountVolume.newBuilder()
                .setFsType(coherent ? focus.fsType() : fsType());
        if (random.nextInt(4) == 0) {
            mount.addMountFlags(coherent ? pick(new String[] {"noatime", "nodev"}) : mountFlag());
        }
        if (!coherent && random.nextInt(4) == 0) {
            mount.setVolumeMountGroup(pick(GROUPS));
        }
        return capability.setMount(mount).build();
    }

    private String string(String field) {
        if (!coherent && random.nextInt(4) == 0) {
            // A path field's odd value stays under the root too: "/`Za'Nx:E5>r:G-L." once made a
            // driver publish a volume at the machine's root, and the run's sweep never saw it.
            return PATH_FIELDS.contains(field) ? confined(anyString()) : anyString();
        }
        return switch (field) {
            case "name" -> coherent && random.nextBoolean() ? focus.name() : "fuzz-" + random.nextInt(6);
            case "volume_id", "source_volume_id" -> coherent ? focus.id() : volumeId();
            case "snapshot_id" -> snapshotId();
            case "starting_token" -> random.nextBoolean() ? "" : random.nextBoolean() ? focus.id() : snapshotId();
            case "staging_target_path" -> path(focus.staging());
            case "target_path" -> path(focus.target());
            case "volume_path" -> path(random.nextBoolean() ? focus.target() : focus.staging());
            case "fs_type" -> coherent ? focus.fsType() : fsType();
            case "mount_flags" -> coherent ? "noatime" : mountFlag();
            case "volume_mount_group" -> coherent ? "" : pick(GROUPS);
            case "node_id" -> TestDriver.NODE;
            default -> coherent ? "" : anyString();
        };
    }

    private String volumeId() {
        return switch (random.nextInt(10)) {
            case 0, 1, 2 -> focus.id();
            case 3 -> volumes.get(random.nextInt(volumes.size())).id();
            case 4 -> "default-" + key();
            case 5 -> pick(new String[] {"second-", "nope-", "a-", "-"}) + focus.id().substring(focus.id().length() - 26);
            case 6 -> snapshotId();
            case 7 -> "csi-" + Long.toHexString(random.nextLong()) + Long.toHexString(random.nextLong());
            case 8 -> pick(new String[] {"x", "", " ", "\0"}) + focus.id() + pick(new String[] {"", "\0", "/", "x"});
            default -> "v".repeat(70_000);
        };
    }

    private String snapshotId() {
        if (coherent && !snapshots.isEmpty()) {
            return snapshots.get(random.nextInt(snapshots.size()));
        }
        return switch (random.nextInt(5)) {
            case 0, 1 -> snapshots.isEmpty() ? "default_" + key() : snapshots.get(random.nextInt(snapshots.size()));
            case 2 -> "default_" + key();
            case 3 -> focus.id();
            default -> "s".repeat(70_000);
        };
    }

    private String key() {
        StringBuilder key = new StringBuilder();
        for (int i = 0; i < 26; i++) {
            key.append("abcdefghijklmnopqrstuvwxyz234567".charAt(random.nextInt(32)));
        }
        return key.toString();
    }

    private String fsType() {
        return pick(FS_TYPES);
    }

    private String mountFlag() {
        return random.nextInt(5) == 0 ? anyString() : pick(MOUNT_FLAGS);
    }

    private void coherentMap(String field, Map<String, String> map) {
        switch (field) {
            case "parameters" -> {
                if (random.nextBoolean()) {
                    map.put("hearth.dev/pool", focus.pool());
                }
            }
            case "volume_context" -> {
                if (random.nextInt(8) == 0) {
                    map.put("csi.storage.k8s.io/ephemeral", "true");
                    map.put("hearth.dev/size", pick(new String[] {"16Mi", "1Gi"}));
                }
            }
            case "segments" -> map.put("topology.hearth.dev/node", TestDriver.NODE);
            default -> {}
        }
    }

    private String mapKey(String field) {
        if (random.nextInt(4) == 0) {
            return anyString();
        }
        return switch (field) {
            case "segments" -> pick(new String[] {"topology.hearth.dev/node", "topology.kubernetes.io/zone"});
            case "volume_context" -> pick(new String[] {"csi.storage.k8s.io/ephemeral", "hearth.dev/size",
                "hearth.dev/pool", "hearth.dev/provisioning", "csi.storage.k8s.io/pod.name", "hearth.dev/fstype"});
            default -> pick(new String[] {"hearth.dev/pool", "hearth.dev/provisioning", "hearth.dev/size",
                "hearth.dev/unknown", "csi.storage.k8s.io/fstype", "csi.storage.k8s.io/pvc/name", "foo", "hearth.dev"});
        };
    }

    private String mapValue(String key) {
        if (random.nextInt(4) == 0) {
            return anyString();
        }
        return switch (key) {
            case "hearth.dev/pool" -> pick(new String[] {"default", "second", "nope", "", "Default"});
            case "hearth.dev/provisioning" -> pick(new String[] {"thin", "thick", " THIN ", "fat", ""});
            case "hearth.dev/size" -> pick(SIZES);
            case "csi.storage.k8s.io/ephemeral" -> pick(new String[] {"true", "false", "TRUE", ""});
            case "topology.hearth.dev/node" -> pick(new String[] {TestDriver.NODE, "node-b", ""});
            default -> pick(new String[] {"x", "ext4", "pvc-1", ""});
        };
    }

    private long bytes(String field) {
        if (coherent) {
            return field.equals("limit_bytes") ? pick(new Long[] {0L, 0L, 4 * TestDriver.GIB})
                    : pick(new Long[] {0L, SIZE, TestDriver.GIB});
        }
        return random.nextInt(8) == 0 ? random.nextLong() : BYTES[random.nextInt(BYTES.length)];
    }

    /** A path for a field whose sensible value is {@code usual}: it, another real one, or something odd. */
    private String path(Path usual) {
        if (coherent) {
            return usual.toString();
        }
        String r = root.toString();
        String path = switch (random.nextInt(20)) {
            case 0, 1, 2, 3 -> usual.toString();
            case 4 -> random.nextBoolean() ? focus.staging().toString() : focus.target().toString();
            case 5, 6 -> fixtures.isEmpty() ? r : fixtures.get(random.nextInt(fixtures.size())).toString();
            case 7 -> r + "/pods/p" + random.nextInt(4) + "/vol";
            case 8 -> usual.resolve(pick(new String[] {"sub", "a/b"})).toString();
            case 9 -> pick(new String[] {"relative/path", "kubelet", ".", "..", "", "../x", "./x"});
            case 10 -> r + pick(new String[] {"/pods/../pods/p0/vol", "//pods", "/pods/", "/./pods", "/pods/."});
            case 11 -> r + "/pods/a" + pick(new String[] {"\0b", "\nb", "\tb", " b", "\\b", "\u202eb", "\ud800b",
                "\u00e9b", "\ud83d\ude00", "\u0001", "%00b", "'b"});
            case 12 -> r + "/" + "n".repeat(300);
            case 13 -> r + "/" + "\u00e9/".repeat(1_500);
            case 14 -> r + "/" + "x".repeat(5_000);
            case 15 -> "/" + "p".repeat(100_000);
            case 16 -> r + "/staging/v" + random.nextInt(4);
            default -> anyString();
        };
        return confined(path);
    }

    /**
     * The path as the driver will receive it (a lone surrogate goes over the wire as '?'), moved
     * under the root if it is a usable absolute path outside it.
     */
    private String confined(String path) {
        String received = new String(path.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);
        if (!received.startsWith("/")) {
            return path;
        }
        try {
            if (Path.of(received).normalize().startsWith(root)) {
                return path;
            }
        } catch (InvalidPathException e) {
            return path; // NUL: no system call can be made with it
        }
        return root.resolve("outside-" + Integer.toHexString(received.hashCode())).toString();
    }

    /** Any string at all, biased towards the awkward. */
    String anyString() {
        return switch (random.nextInt(12)) {
            case 0, 1 -> "";
            case 2, 3 -> ascii(1 + random.nextInt(20));
            case 4 -> ascii(1 + random.nextInt(300));
            case 5, 6 -> soup(1 + random.nextInt(40));
            case 7, 8 -> pick(SPECIAL);
            case 9 -> focus.id() + pick(SPECIAL);
            case 10 -> random.nextInt(4) == 0 ? soup(100_000) : "a".repeat(70_000);
            default -> Long.toString(random.nextLong());
        };
    }

    private String ascii(int length) {
        StringBuilder text = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            text.append((char) (' ' + random.nextInt(95)));
        }
        return text.toString();
    }

    /** Characters from all of the BMP: NUL, controls, lone surrogates, private use, and letters. */
    private String soup(int length) {
        StringBuilder text = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            text.append(random.nextInt(3) == 0 ? (char) random.nextInt(0x20) : (char) random.nextInt(0x10000));
        }
        return text.toString();
    }

    private <T> T pick(T[] values) {
        return values[random.nextInt(values.length)];
    }
}
