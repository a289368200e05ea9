package dev.hearth.csi;

import dev.hearth.csi.v1.Topology.Builder;
import java.util.List;

/** hearth's one topology segment: the node a volume lives on. It becomes the PV's node affinity. */
public final class Topology {

    public static final String NODE_KEY = "topology.hearth.dev/node";

    private Topology() {}

    public static dev.hearth.csi.v1.Topology of(String nodeId) {
        Builder builder = dev.hearth.csi.v1.Topology.newBuilder();
        return builder.putSegments(NODE_KEY, nodeId).build();
    }

    /** Whether a topology names this node (a topology without our key names no node of ours). */
    public static boolean names(dev.hearth.csi.v1.Topology topology, String nodeId) {
        return nodeId.equals(topology.getSegmentsMap().get(NODE_KEY));
    }

    /** Whether any of the topologies names this node. */
    public static boolean anyNames(List<dev.hearth.csi.v1.Topology> topologies, String nodeId) {
        return topologies.stream().anyMatch(t -> names(t, nodeId));
    }
}
