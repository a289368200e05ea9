"""Summarizes a csi-sanity (ginkgo) JUnit report: counts, and each skipped spec with its reason."""
import sys
import xml.etree.ElementTree as ET

mode, path = sys.argv[1], sys.argv[2]
passed = failed = skipped = 0
skipped_specs = []
for case in ET.parse(path).getroot().iter("testcase"):
    name = case.get("name", "")
    if name.startswith("[BeforeSuite]") or name.startswith("[AfterSuite]") or "[SynchronizedBeforeSuite]" in name:
        continue
    if case.find("skipped") is not None:
        skipped += 1
        reason = case.find("skipped").get("message", "").replace("skipped - ", "").strip()
        skipped_specs.append((name, reason))
    elif case.find("failure") is not None or case.find("error") is not None:
        failed += 1
        print(f"FAILED: {name}")
    else:
        passed += 1
print(f"csi-sanity {mode}: {passed} passed, {failed} failed, {skipped} skipped")
reasons = {}
for name, reason in skipped_specs:
    reasons.setdefault(reason or "(no reason given)", []).append(name)
for reason, names in sorted(reasons.items()):
    print(f"  skipped ({len(names)}): {reason}")
    for name in names:
        print(f"    - {name.removeprefix('[It] ')}")
print(f"counts {passed} {failed} {skipped}")
