package dev.hearth.csi.v1;

import com.google.protobuf.ByteString;
import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MethodDescriptorProto;
import com.google.protobuf.DescriptorProtos.ServiceDescriptorProto;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.UnknownFieldSet;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * Structural comparison of two {@link FileDescriptorProto}s, reporting every difference that
 * matters on the wire (binary and JSON) plus the custom CSI options.
 *
 * <p>Fields are matched by number (their binary identity), everything else by name. Map fields are
 * compared as {@code map<K, V>}; the synthetic {@code *Entry} messages are not matched by name, since
 * their names derive from the field name and never reach the wire. File-level options and source
 * info are ignored. Options elsewhere are compared after re-parsing without an extension registry,
 * so custom options compare by number; they are labelled with the extension names found in the
 * first ("official") descriptor.
 *
 * <p>Each difference is one line: {@code <element>: <aspect>: official=<a> ours=<b>}.
 */
final class DescriptorDiff {

  private final List<String> diffs = new ArrayList<>();
  /** extendee (e.g. ".google.protobuf.FieldOptions") -> option number -> "(csi.v1.name)". */
  private final Map<String, Map<Integer, String>> optionNames = new HashMap<>();

  private DescriptorDiff() {}

  /** Every difference between {@code official} and {@code ours}; empty when they match. */
  static List<String> compare(FileDescriptorProto official, FileDescriptorProto ours) {
    var d = new DescriptorDiff();
    for (var file : List.of(ours, official)) { // official last: its names win
      for (var ext : file.getExtensionList()) {
        d.optionNames
            .computeIfAbsent(ext.getExtendee(), k -> new HashMap<>())
            .put(ext.getNumber(), "(" + file.getPackage() + "." + ext.getName() + ")");
      }
    }
    d.file(official, ours);
    return List.copyOf(d.diffs);
  }

  private void file(FileDescriptorProto o, FileDescriptorProto u) {
    String where = "file " + o.getName();
    eq(where, "package", o.getPackage(), u.getPackage());
    eq(where, "syntax", o.getSyntax(), u.getSyntax());
    eq(where, "dependencies", new TreeSet<>(o.getDependencyList()), new TreeSet<>(u.getDependencyList()));
    String scope = o.getPackage().isEmpty() ? "" : o.getPackage();
    messages(scope, o.getMessageTypeList(), u.getMessageTypeList());
    enums(scope, o.getEnumTypeList(), u.getEnumTypeList());
    extensions(scope, o.getExtensionList(), u.getExtensionList());
    for (var pair : pair(o.getServiceList(), u.getServiceList(), ServiceDescriptorProto::getName, scope, "service")) {
      service(qualify(scope, pair.name()), pair.official(), pair.ours());
    }
  }

  private void messages(String scope, List<DescriptorProto> o, List<DescriptorProto> u) {
    var official = o.stream().filter(m -> !m.getOptions().getMapEntry()).toList();
    var ours = u.stream().filter(m -> !m.getOptions().getMapEntry()).toList();
    for (var pair : pair(official, ours, DescriptorProto::getName, scope, "message")) {
      message(qualify(scope, pair.name()), pair.official(), pair.ours());
    }
  }

  private void message(String fq, DescriptorProto o, DescriptorProto u) {
    options(fq, ".google.protobuf.MessageOptions", o.getOptions(), u.getOptions());
    eq(fq, "oneofs", oneofs(o), oneofs(u));
    eq(fq, "reserved ranges", o.getReservedRangeList().stream().map(r -> r.getStart() + ".." + r.getEnd()).toList(),
        u.getReservedRangeList().stream().map(r -> r.getStart() + ".." + r.getEnd()).toList());
    eq(fq, "reserved names", new TreeSet<>(o.getReservedNameList()), new TreeSet<>(u.getReservedNameList()));
    eq(fq, "extension ranges", o.getExtensionRangeList().stream().map(r -> r.getStart() + ".." + r.getEnd()).toList(),
        u.getExtensionRangeList().stream().map(r -> r.getStart() + ".." + r.getEnd()).toList());

    var oFields = byKey(o.getFieldList(), FieldDescriptorProto::getNumber);
    var uFields = byKey(u.getFieldList(), FieldDescriptorProto::getNumber);
    for (var number : union(oFields.keySet(), uFields.keySet())) {
      var of = oFields.get(number);
      var uf = uFields.get(number);
      String where = fq + " field " + number;
      if (of == null) {
        diffs.add(where + ": only in ours: " + uf.getName());
      } else if (uf == null) {
        diffs.add(where + ": missing in ours: " + of.getName());
      } else {
        field(where, fq, o, of, u, uf);
      }
    }
    messages(fq, o.getNestedTypeList(), u.getNestedTypeList());
    enums(fq, o.getEnumTypeList(), u.getEnumTypeList());
    extensions(fq, o.getExtensionList(), u.getExtensionList());
  }

  private void field(String where, String fq, DescriptorProto om, FieldDescriptorProto o,
      DescriptorProto um, FieldDescriptorProto u) {
    eq(where, "name", o.getName(), u.getName());
    eq(where, "label", o.getLabel(), u.getLabel());
    eq(where, "type", typeOf(fq, om, o), typeOf(fq, um, u));
    eq(where, "json_name", jsonName(o), jsonName(u));
    eq(where, "oneof", oneofOf(om, o), oneofOf(um, u));
    eq(where, "proto3_optional", o.getProto3Optional(), u.getProto3Optional());
    eq(where, "default_value", o.getDefaultValue(), u.getDefaultValue());
    options(where, ".google.protobuf.FieldOptions", o.getOptions(), u.getOptions());
  }

  private void enums(String scope, List<EnumDescriptorProto> o, List<EnumDescriptorProto> u) {
    for (var pair : pair(o, u, EnumDescriptorProto::getName, scope, "enum")) {
      String fq = qualify(scope, pair.name());
      options(fq, ".google.protobuf.EnumOptions", pair.official().getOptions(), pair.ours().getOptions());
      for (var v : pair(pair.official().getValueList(), pair.ours().getValueList(),
          EnumValueDescriptorProto::getName, fq, "enum value")) {
        String where = fq + "." + v.name();
        eq(where, "number", v.official().getNumber(), v.ours().getNumber());
        options(where, ".google.protobuf.EnumValueOptions", v.official().getOptions(), v.ours().getOptions());
      }
    }
  }

  private void extensions(String scope, List<FieldDescriptorProto> o, List<FieldDescriptorProto> u) {
    for (var pair : pair(o, u, FieldDescriptorProto::getName, scope, "extension")) {
      String where = "extension " + qualify(scope, pair.name());
      var of = pair.official();
      var uf = pair.ours();
      eq(where, "number", of.getNumber(), uf.getNumber());
      eq(where, "extendee", of.getExtendee(), uf.getExtendee());
      eq(where, "label", of.getLabel(), uf.getLabel());
      eq(where, "type", of.getType() + " " + of.getTypeName(), uf.getType() + " " + uf.getTypeName());
      options(where, ".google.protobuf.FieldOptions", of.getOptions(), uf.getOptions());
    }
  }

  private void service(String fq, ServiceDescriptorProto o, ServiceDescriptorProto u) {
    options(fq, ".google.protobuf.ServiceOptions", o.getOptions(), u.getOptions());
    for (var pair : pair(o.getMethodList(), u.getMethodList(), MethodDescriptorProto::getName, fq, "rpc")) {
      String where = "rpc " + fq + "." + pair.name();
      MethodDescriptorProto om = pair.official();
      MethodDescriptorProto um = pair.ours();
      eq(where, "input_type", om.getInputType(), um.getInputType());
      eq(where, "output_type", om.getOutputType(), um.getOutputType());
      eq(where, "client_streaming", om.getClientStreaming(), um.getClientStreaming());
      eq(where, "server_streaming", om.getServerStreaming(), um.getServerStreaming());
      options(where, ".google.protobuf.MethodOptions", om.getOptions(), um.getOptions());
    }
  }

  // ---- helpers -------------------------------------------------------------------------------

  /** A wire-level type: scalar kind, message/enum name, or map<K, V> for map fields. */
  private static String typeOf(String fq, DescriptorProto owner, FieldDescriptorProto f) {
    if (f.getType() == FieldDescriptorProto.Type.TYPE_MESSAGE) {
      for (var nested : owner.getNestedTypeList()) {
        if (nested.getOptions().getMapEntry() && f.getTypeName().equals("." + fq + "." + nested.getName())) {
          var kv = byKey(nested.getFieldList(), FieldDescriptorProto::getNumber);
          return "map<" + scalarOrNamed(kv.get(1)) + ", " + scalarOrNamed(kv.get(2)) + ">";
        }
      }
    }
    return scalarOrNamed(f);
  }

  private static String scalarOrNamed(FieldDescriptorProto f) {
    if (f == null) {
      return "<missing>";
    }
    String kind = f.getType().name().substring("TYPE_".length()).toLowerCase();
    return f.getTypeName().isEmpty() ? kind : kind + " " + f.getTypeName();
  }

  /** json_name as protoc would fill it in when absent. */
  private static String jsonName(FieldDescriptorProto f) {
    if (f.hasJsonName()) {
      return f.getJsonName();
    }
    var sb = new StringBuilder();
    boolean upper = false;
    for (char c : f.getName().toCharArray()) {
      if (c == '_') {
        upper = true;
      } else {
        sb.append(upper ? Character.toUpperCase(c) : c);
        upper = false;
      }
    }
    return sb.toString();
  }

  private static String oneofOf(DescriptorProto owner, FieldDescriptorProto f) {
    return f.hasOneofIndex() ? owner.getOneofDecl(f.getOneofIndex()).getName() : "";
  }

  private static TreeSet<String> oneofs(DescriptorProto m) {
    var names = new TreeSet<String>();
    m.getOneofDeclList().forEach(d -> names.add(d.getName()));
    return names;
  }

  /** Options as a sorted name -> value map; custom options are unknown fields here. */
  private void options(String where, String extendee, Message o, Message u) {
    var official = flatten(extendee, o);
    var ours = flatten(extendee, u);
    for (var key : union(official.keySet(), ours.keySet())) {
      eq(where, "option " + key, official.get(key), ours.get(key));
    }
  }

  private Map<String, String> flatten(String extendee, Message options) {
    Message plain;
    try {
      plain = options.getParserForType().parseFrom(options.toByteString());
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("cannot re-parse options " + options, e);
    }
    var out = new TreeMap<String, String>();
    for (Map.Entry<FieldDescriptor, Object> e : plain.getAllFields().entrySet()) {
      out.put(e.getKey().getName(), String.valueOf(e.getValue()));
    }
    var names = optionNames.getOrDefault(extendee, Map.of());
    for (Map.Entry<Integer, UnknownFieldSet.Field> e : plain.getUnknownFields().asMap().entrySet()) {
      String name = names.getOrDefault(e.getKey(), "(#" + e.getKey() + ")");
      out.put(name, render(e.getValue()));
    }
    return out;
  }

  private static String render(UnknownFieldSet.Field f) {
    var parts = new ArrayList<String>();
    f.getVarintList().forEach(v -> parts.add(Long.toString(v)));
    f.getFixed32List().forEach(v -> parts.add("fixed32:" + v));
    f.getFixed64List().forEach(v -> parts.add("fixed64:" + v));
    f.getLengthDelimitedList().stream().map(ByteString::toStringUtf8).forEach(s -> parts.add("bytes:" + s));
    f.getGroupList().forEach(g -> parts.add("group:" + g));
    return String.join(",", parts);
  }

  private void eq(String where, String aspect, Object official, Object ours) {
    if (!Objects.equals(official, ours)) {
      diffs.add(where + ": " + aspect + ": official=" + official + " ours=" + ours);
    }
  }

  private record Pair<T>(String name, T official, T ours) {}

  /** Matches elements by name; records the unmatched ones as differences. */
  private <T> List<Pair<T>> pair(List<T> official, List<T> ours, Function<T, String> name,
      String scope, String kind) {
    var o = byKey(official, name);
    var u = byKey(ours, name);
    var pairs = new ArrayList<Pair<T>>();
    for (var key : union(o.keySet(), u.keySet())) {
      String what = kind + " " + qualify(scope, key);
      if (!u.containsKey(key)) {
        diffs.add(what + ": missing in ours");
      } else if (!o.containsKey(key)) {
        diffs.add(what + ": only in ours");
      } else {
        pairs.add(new Pair<>(key, o.get(key), u.get(key)));
      }
    }
    return pairs;
  }

  private static <K, T> Map<K, T> byKey(List<T> items, Function<T, K> key) {
    var map = new LinkedHashMap<K, T>();
    for (T item : items) {
      if (map.put(key.apply(item), item) != null) {
        throw new IllegalArgumentException("duplicate key " + key.apply(item));
      }
    }
    return map;
  }

  private static <K extends Comparable<K>> TreeSet<K> union(Iterable<K> a, Iterable<K> b) {
    var all = new TreeSet<K>();
    a.forEach(all::add);
    b.forEach(all::add);
    return all;
  }

  private static String qualify(String scope, String name) {
    return scope.isEmpty() ? name : scope + "." + name;
  }
}
