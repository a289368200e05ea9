"""Prints test/bench/csi's tables from its results file: one line per measurement, LABEL KEY VALUE,
LABEL being the driver's run (hearth, floor, hostpath, hearth-image, hearth-1cpu, floor@200, ...).
Medians throughout; ratios are of the medians of this one run."""
import os
import statistics
import sys
from collections import defaultdict

(results, rounds, burst, many, loops, fio_seconds, hostpath_name, hostpath_why,
 load_start, load_end, facts_file) = sys.argv[1:12]
values = defaultdict(list)
for line in open(results):
    parts = line.split()
    if len(parts) == 3:
        try:
            values[(parts[0], parts[1])].append(float(parts[2]))
        except ValueError:
            pass
have_hostpath = bool(hostpath_name)
settle = os.environ.get("SETTLE", "12")


def med(label, key):
    v = values.get((label, key))
    return statistics.median(v) if v else None


def ms(x, unit=" ms"):
    if x is None:
        return ""
    if x >= 1000 and unit == " ms":
        return f"{x / 1000:.2f} s"
    return f"{x:.1f}{unit}" if x < 100 else f"{x:.0f}{unit}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else ""


def row(*cells):
    print("| " + " | ".join(cells) + " |")


hp_head = "host-path" if have_hostpath else "host-path (not built)"
print()
print(f"Medians of {rounds} rounds after a first round; 1 GiB volumes; hearth on its default file pool; "
      f"host-path: {hostpath_name or 'not built: ' + hostpath_why}")
print(f"load at start: {load_start}; at end: {load_end}")
if med("bare", "ready") is not None:
    print("The floor column of the start and RSS rows: a bare grpc-java server (BareServer in driver's test tree: hearth's "
          "own gRPC server, grpc-okhttp on a unix socket, answering every CSI call with an empty response and doing nothing "
          "else) on the image's JVM flags with a class-data archive of its own: what the JVM and this stack cost "
          "before any driver code.")
if med("node", "loops") is not None:
    print(f"loop devices attached on the node when the lifecycle rows began: {med('node', 'loops'):.0f}")
print()
row("", "hearth", "floor script", hp_head, "hearth / floor", "hearth / host-path")
row(*["---"] * 6)
for title, key in [("filesystem lifecycle (create → stage → publish → unpublish → unstage → delete)", "fs.total"),
                   ("of which NodeStageVolume", "fs.NodeStageVolume"),
                   ("raw block lifecycle", "block.total")]:
    h, f, p = med("hearth", key), med("floor", key), med("hostpath", key)
    row(title, ms(h), ms(f), ms(p), ratio(h, f), ratio(h, p))
for kind in ("fs", "block"):
    for step in ("CreateVolume", "NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume",
                 "NodeUnstageVolume", "DeleteVolume"):
        h, f, p = med("hearth", f"{kind}.{step}"), med("floor", f"{kind}.{step}"), med("hostpath", f"{kind}.{step}")
        if h is not None or p is not None:
            row(f"  {'filesystem' if kind == 'fs' else 'block'}: {step}", ms(h), ms(f), ms(p), ratio(h, f), ratio(h, p))
rpcs = sorted({k[1] for k in values if k[1].startswith("rpc.")})
for key in rpcs:
    h, p = med("hearth", key), med("hostpath", key)
    row(f"{key[4:]}", ms(h), "", ms(p), "", ratio(h, p))
h, f, p = med("hearth", "first"), med("floor", "first"), med("hostpath", "first")
row("first filesystem lifecycle after start (launcher as the README runs it, first run after a build)", ms(h), ms(f), ms(p), ratio(h, f), ratio(h, p))
steps = ("CreateVolume", "NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume", "DeleteVolume")
first_steps = [med("hearth", f"first.{s}") for s in steps]
later_steps = [med("hearth", f"fs.{s}") for s in steps]
if all(x is not None for x in first_steps + later_steps):
    row("  its six RPCs, first / later (median): " + ", ".join(f"{s} {ms(a, '')} / {ms(b)}"
                                                            for s, a, b in zip(steps, first_steps, later_steps)),
        "", "", "", "", "")
later = med("hearth", "fs.total")
if h is not None and later is not None:
    row(f"  first / later filesystem lifecycle (goal: under 2x): {ms(h, '')} / {ms(later)} = {h / later:.2f}x",
        "", "", "", "", "")
h = med("hearth-again", "first")
row("  same, a later start", ms(h), "", "", ratio(h, f), ratio(h, p))
h = med("hearth-at-ready", "first")
row("  same, a later start, begun the moment Probe says ready (the rows above begin 2 s after; the warm-up runs then)",
    ms(h), "", "", ratio(h, f), ratio(h, p))
h, p = med("hearth-image", "first"), None
row("  same, image's JVM flags and class-data archive", ms(h), "", "", ratio(h, f), "")


def cpu(label, what=""):
    parts = [med(label, f"first.cpu.{what}{g}") for g in ("handlers", "transport", "jit", "other")]
    return " / ".join(ms(x, "") for x in parts) + " ms" if all(x is not None for x in parts) else ""


h, p = cpu("hearth"), cpu("hostpath")
if h or p:
    row("  driver CPU in that first lifecycle: request handlers / gRPC transport / JIT compiler / "
        "other (host-path's Go threads all count as other)", h, "", p, "", "")
h, p = cpu("hearth", "wait."), cpu("hostpath", "wait.")
if h or p:
    row("  the same threads' time runnable but waiting for a CPU (schedstat)", h, "", p, "", "")
for cpus in ("2cpu", "1cpu"):
    h99, h50, hs = med(f"hearth-{cpus}", "burst.p99"), med(f"hearth-{cpus}", "burst.p50"), med(f"hearth-{cpus}", "burst.single_p50")
    p99, p50, ps = med(f"hostpath-{cpus}", "burst.p99"), med(f"hostpath-{cpus}", "burst.p50"), med(f"hostpath-{cpus}", "burst.single_p50")
    f99, f50, fs = med(f"floor-{cpus}", "burst.p99"), med(f"floor-{cpus}", "burst.p50"), med(f"floor-{cpus}", "burst.single_p50")
    n = cpus[0]
    row(f"{burst} concurrent CreateVolume, driver on {n} CPU: p99 / p50 / single-call p50 "
        "(floor: test/bench/floor-burst, the same syscalls from as many threads)",
        f"{ms(h99, '')} / {ms(h50, '')} / {ms(hs)}" if h99 else "",
        f"{ms(f99, '')} / {ms(f50, '')} / {ms(fs)} (p99 = {f99 / fs:.1f}x single)" if f99 and fs else "",
        f"{ms(p99, '')} / {ms(p50, '')} / {ms(ps)}" if p99 else "",
        f"p99 = {h99 / hs:.1f}x single" if h99 and hs else "",
        f"p99 = {p99 / ps:.1f}x single" if p99 and ps else "")
h = " / ".join(ms(med("hearth-2cpu", f"burst.cpu.{g}"), "") for g in ("handlers", "transport", "jit", "other"))
w = med("hearth-2cpu", "burst.cpu.wait.handlers")
if med("hearth-2cpu", "burst.cpu.handlers") is not None:
    row(f"  driver CPU in the burst (2 CPUs): request handlers / gRPC transport / JIT compiler / other; "
        "the handlers' summed wait for a CPU", f"{h} ms; {ms(w)}", "", "", "", "")
h2, h1 = med("hearth-2cpu", "burst.wall"), med("hearth-1cpu", "burst.wall")
f2, f1 = med("floor-2cpu", "burst.wall"), med("floor-1cpu", "burst.wall")
p2, p1 = med("hostpath-2cpu", "burst.wall"), med("hostpath-1cpu", "burst.wall")
row(f"{burst} concurrent CreateVolume: burst wall time, 2 CPUs / 1 CPU",
    f"{ms(h2, '')} / {ms(h1)}" if h2 else "", f"{ms(f2, '')} / {ms(f1)} (2 CPUs = {f2 / f1:.2f}x 1 CPU)" if f2 and f1 else "", f"{ms(p2, '')} / {ms(p1)}" if p2 else "",
    f"2 CPUs = {h2 / h1:.2f}x 1 CPU" if h2 and h1 else "", f"2 CPUs = {p2 / p1:.2f}x 1 CPU" if p2 and p1 else "")
h, p = med("hearth", "ready"), med("hostpath", "ready")
row("start to Probe ready (launcher as the README runs it, first run after a build)", ms(h), "", ms(p), "", ratio(h, p))
h = med("hearth-again", "ready")
row("  same, a later start", ms(h), "", "", "", ratio(h, p))
hi, b = med("hearth-image", "ready"), med("bare", "ready")
row("  same, image's JVM flags and class-data archive (floor: a bare grpc-java server on them, below)", ms(hi), ms(b), "",
    ratio(hi, b), ratio(hi, p))
h, hi, b, p = (med("hearth", "ready.handshake"), med("hearth-image", "ready.handshake"), med("bare", "ready.handshake"),
               med("hostpath", "ready.handshake"))
row("first connection's HTTP/2 handshake, the moment the socket appears (sidecars allow about 1 s; launcher / image flags; "
    "floor: the bare grpc-java server)", f"{ms(h, '')} / {ms(hi)}" if h and hi else ms(h), ms(b), ms(p), ratio(hi, b),
    ratio(h, p))
h, hi, b, p = (med("hearth-again", "rss") or med("hearth", "rss"), med("hearth-image", "rss"), med("bare", "rss"),
               med("hostpath", "rss"))
row("RSS idle, 2 s after ready (README launcher / image flags; floor: the bare grpc-java server)",
    f"{ms(h, ' MiB')} / {ms(hi, ' MiB')}" if h else "", f"{ms(b, ' MiB')} ({ratio(b, p)} host-path)" if b and p else ms(b, " MiB"),
    ms(p, " MiB"), ratio(hi, b), f"{ratio(h, p)} / {ratio(hi, p)}" if h and p else "")
h, p = med("hearth-image", "rss.settled"), med("hostpath", "rss")
row(f"RSS settled: {settle} s after the first lifecycle (image flags; host-path: idle, as above)", ms(h, " MiB"), "",
    ms(p, " MiB"), "", ratio(h, p))
h, p = med("hearth-2cpu", "burst.rss"), med("hostpath-2cpu", "burst.rss")
row(f"RSS after the burst and its deletes (2 CPUs)", ms(h, " MiB"), "", ms(p, " MiB"), "", ratio(h, p))
h = med("hearth-2cpu", "rss.settled")
row(f"  same, {settle} s later", ms(h, " MiB"), "", "", "", ratio(h, p))
for title, key in [("GetCapacity", "many.GetCapacity"), ("ListVolumes in pages of 100 (all pages)", "many.ListVolumes"),
                   ("CreateVolume (1 MiB, filesystem; the lifecycle rows' create is on an empty node)",
                    "many.CreateVolume"),
                   ("restart to Probe ready", "restart")]:
    h, p = med("hearth-many", key), med("hostpath-many", key)
    row(f"{many} volumes: {title}", ms(h), "", ms(p), "", ratio(h, p))

loop_counts = loops.split()
if any(("hearth@" + n, "fs.total") in values for n in loop_counts):
    print()
    print("Lifecycle medians as the node's loop devices grow (idle loop devices over sparse files added):")
    print()
    row("loop devices on the node", "hearth fs", "floor fs", "host-path fs", "hearth block", "floor block",
        "host-path block", "hearth / floor fs", "hearth / floor block")
    row(*["---"] * 9)
    for n in loop_counts:
        c = [med(f"{d}@{n}", f"{k}.total") for k in ("fs", "block") for d in ("hearth", "floor", "hostpath")]
        had = med(f"node@{n}", "loops")
        row(n if had is None or had == int(n) else f"{n} (had {had:.0f})", *[ms(x) for x in c],
            ratio(c[0], c[1]), ratio(c[3], c[4]))

mount_counts = os.environ.get("MOUNTS", "").split()
if any(("hearth-m" + n, "fs.total") in values for n in mount_counts):
    print()
    print("Lifecycle and NodeGetVolumeStats medians as the node's mounts grow (idle tmpfs mounts added; a node "
          "with 1,000 published volumes has 2,000 of its own):")
    print()
    row("mounts on the node", "hearth fs", "floor fs", "host-path fs", "hearth block", "floor block",
        "host-path block", "hearth / floor fs", "hearth / floor block", "hearth NodeGetVolumeStats",
        "host-path NodeGetVolumeStats")
    row(*["---"] * 11)
    for n in mount_counts:
        c = [med(f"{d}-m{n}", f"{k}.total") for k in ("fs", "block") for d in ("hearth", "floor", "hostpath")]
        had = med(f"node-m{n}", "mounts")
        row(n if had is None or had == int(n) else f"{n} (had {had:.0f})", *[ms(x) for x in c],
            ratio(c[0], c[1]), ratio(c[3], c[4]), ms(med(f"hearth-m{n}", "rpc.NodeGetVolumeStats")),
            ms(med(f"hostpath-m{n}", "rpc.NodeGetVolumeStats")))

if any(k[1].startswith("fio.") for k in values):
    print()
    print(f"Data path: fio, QD32, libaio, O_DIRECT, {fio_seconds} per job (medians), hearth's run and its floor's back to back, in turn first; 4k in IOPS, 1 MiB in MiB/s. "
          "Floor: what test/bench/floor makes, in the pool's filesystem: a loop device with direct I/O over a fallocated file (block), "
          "ext4 made with hearth's flags on one and mounted (ext4); the same with the loop device's direct I/O off; "
          "and a plain file on the host's filesystem, no volume at all (ext4 rows).")
    print()
    row("", "hearth", "floor", "hearth / floor (pairs: median, range)", "floor, direct I/O off", "floor: direct I/O off / on",
        "plain file on the host", "hearth / plain file")
    row(*["---"] * 8)

    def paired(key):
        """hearth / floor of each repetition's back-to-back pair: their median, and their range."""
        pairs = [a / b for a, b in zip(values.get(("hearth", key), []), values.get(("floor", key), [])) if b]
        if not pairs:
            return ""
        text = f"{statistics.median(pairs):.2f}x"
        return text + f" ({min(pairs):.2f}-{max(pairs):.2f}x)" if len(pairs) > 1 else text

    def amount(x, unit):
        return f"{x:.0f}{unit}" if x else ""
    for kind, title in (("block", "block volume"), ("ext4", "ext4 volume")):
        for job, name, unit in (("randread", "4k random read", " IOPS"), ("randwrite", "4k random write", " IOPS"),
                                ("seqread", "1 MiB sequential read", " MiB/s"),
                                ("seqwrite", "1 MiB sequential write", " MiB/s")):
            h, f, b, p = (med(label, f"fio.{kind}.{job}") for label in ("hearth", "floor", "floor-buffered", "plain"))
            row(f"{title}: {name}", amount(h, unit), amount(f, unit), paired(f"fio.{kind}.{job}"), amount(b, unit),
                ratio(b, f), amount(p, unit), ratio(h, p))
    try:
        print()
        for line in open(facts_file):
            print("- " + line.rstrip())
    except OSError:
        pass
