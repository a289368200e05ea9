package dev.hearth.driver.inspect;

/** What a mount of a volume is, told by where the kubelet (or hearth) puts it. */
public enum MountRole {
    /** NodeStageVolume's: {@code plugins/kubernetes.io/csi/<driver>/<sha256>/globalmount}, a block volume's
     *  {@code plugins/kubernetes.io/csi/volumeDevices/staging/<pv>}, or an ephemeral volume's under the state dir. */
    STAGING("staging"),
    /** NodePublishVolume's, in a pod: {@code pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount}, or a block
     *  volume's {@code plugins/kubernetes.io/csi/volumeDevices/publish/<pv>/<pod uid>}. */
    PUBLISH("publish"),
    /** The kubelet's own bind of a block volume's publish, per pod: {@code volumeDevices/<pv>/dev/<pod uid>}. */
    DEVICE_MAP("device-map"),
    /** Anywhere else: not a place the kubelet or hearth mounts volumes (a mount made by hand, a test's). */
    OTHER("other");

    private final String label;

    MountRole(String label) {
        this.label = label;
    }

    /** Its stable name in the JSON output and the table. */
    public String label() {
        return label;
    }
}
