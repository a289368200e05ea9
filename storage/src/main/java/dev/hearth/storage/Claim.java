package dev.hearth.storage;

import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The Kubernetes claim a volume was made for, as the external-provisioner passes it in
 * CreateVolume's parameters when it runs with {@code --extra-create-metadata}. A pool records it
 * with the volume so that an operator on the node ({@code hearth volumes}) can tell whose volume
 * an image, an LV or a disk is. It is a label, not part of the request: a create of the same name
 * again is the same request whatever claim it names ({@link VolumeRequest#sameRequestAgain}).
 *
 * <p>Only names Kubernetes itself allows are accepted (a namespace is a DNS-1123 label, a PVC or
 * PV name a DNS-1123 subdomain), so a claim is safe in a file, an LV tag or a terminal as it is.
 *
 * @param namespace the PVC's namespace
 * @param name the PVC's name
 * @param pvName the PersistentVolume's name, or empty when the request did not give one
 */
public record Claim(String namespace, String name, String pvName) {

    public static final String PVC_NAME = "csi.storage.k8s.io/pvc/name";
    public static final String PVC_NAMESPACE = "csi.storage.k8s.io/pvc/namespace";
    public static final String PV_NAME = "csi.storage.k8s.io/pv/name";

    private static final String LABEL = "[a-z0-9](?:[-a-z0-9]*[a-z0-9])?";
    private static final Pattern DNS_LABEL = Pattern.compile(LABEL);
    private static final Pattern DNS_SUBDOMAIN = Pattern.compile(LABEL + "(?:\\." + LABEL + ")*");

    public Claim {
        if (!isLabel(namespace)) {
            throw new IllegalArgumentException("PVC namespace " + Quoted.of(namespace)
                    + " is not a Kubernetes namespace (a DNS-1123 label of at most 63 characters)");
        }
        if (!isSubdomain(name)) {
            throw new IllegalArgumentException("PVC name " + Quoted.of(name)
                    + " is not a Kubernetes object name (a DNS-1123 subdomain of at most 253 characters)");
        }
        if (pvName == null || (!pvName.isEmpty() && !isSubdomain(pvName))) {
            throw new IllegalArgumentException("PV name " + Quoted.of(pvName)
                    + " is not a Kubernetes object name (a DNS-1123 subdomain of at most 253 characters)");
        }
    }

    /**
     * The claim a CreateVolume's parameters name: empty unless they give a PVC's namespace and name
     * that Kubernetes could have made. A PV name that is missing or malformed is left out. Never
     * refuses: these keys are Kubernetes' business, and a volume is made with or without them.
     */
    public static Optional<Claim> fromParameters(Map<String, String> parameters) {
        String namespace = parameters.get(PVC_NAMESPACE);
        String name = parameters.get(PVC_NAME);
        if (!isLabel(namespace) || !isSubdomain(name)) {
            return Optional.empty();
        }
        String pv = parameters.getOrDefault(PV_NAME, "");
        return Optional.of(new Claim(namespace, name, isSubdomain(pv) ? pv : ""));
    }

    /** {@code namespace/name}, as kubectl names a claim. */
    @Override
    public String toString() {
        return namespace + "/" + name;
    }

    private static boolean isLabel(String text) {
        return text != null && text.length() <= 63 && DNS_LABEL.matcher(text).matches();
    }

    private static boolean isSubdomain(String text) {
        return text != null && text.length() <= 253 && DNS_SUBDOMAIN.matcher(text).matches();
    }
}
