# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 7. Everything under deploy/ applies with server-side dry-run.
E2E_TITLES[7]="deploy/ applies with server-side dry-run"
scenario_7() {
  local overlays=() o rendered
  [ -d "$repo_root/deploy" ] || skip "no deploy/ directory yet"
  for o in "$repo_root"/deploy/overlays/*/; do
    [ -f "$o/kustomization.yaml" ] && overlays+=("$o")
  done
  [ ${#overlays[@]} -gt 0 ] || skip "deploy/overlays/ has no kustomization"
  # The monitoring overlay's PodMonitor and PrometheusRule need the prometheus-operator's CRDs.
  kc apply --server-side -f "$repo_root/test/e2e/crds/monitoring-standins.yaml" >/dev/null
  kc wait --for=condition=Established --timeout=30s \
    crd/podmonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com >/dev/null
  for o in "${overlays[@]}"; do
    rendered=$E2E_WORK/deploy-$(basename "$o").yaml
    kc kustomize "$o" >"$rendered"
    # A dry-run does not create a Namespace, so the namespaced objects in it would be refused:
    # the Namespaces are created for real first (they are empty).
    kc create --dry-run=client -o json -f "$rendered" | python3 -c '
import json, sys
text, decoder, pos, ns = sys.stdin.read(), json.JSONDecoder(), 0, []
while pos < len(text.rstrip()):
    obj, end = decoder.raw_decode(text, pos)
    pos = end + (len(text[end:]) - len(text[end:].lstrip()))
    ns += [o for o in (obj["items"] if obj.get("kind") == "List" else [obj]) if o["kind"] == "Namespace"]
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": ns}))' | kc apply --server-side -f - >/dev/null
    echo "== $o: $(grep -c '^kind:' "$rendered") objects"
    kc apply --server-side --dry-run=server -f "$rendered"
  done
}
