#!/usr/bin/env python3
"""Seeds the fuzzers from Fixtures/: every vector body, envelope and a request line around each body."""
import json, os, sys

out = sys.argv[1] if len(sys.argv) > 1 else "Fuzz/corpus"
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
vectors = json.load(open(os.path.join(root, "Fixtures", "e2ee-vectors.json")))
os.makedirs(out, exist_ok=True)
n = 0
for group in ("positive", "negative"):
    for v in vectors[group]:
        body = v["body"].encode()
        open(os.path.join(out, f"{group}-{v['name']}.body"), "wb").write(body)
        line = json.dumps({"device_token": "ab" * 32, "headers": {"apns-id": "00000000-0000-0000-0000-000000000001"}, "body": v["body"]})
        open(os.path.join(out, f"{group}-{v['name']}.line"), "wb").write(line.encode())
        n += 2
        if "envelope" in v:
            open(os.path.join(out, f"{group}-{v['name']}.envelope"), "wb").write(bytes.fromhex(v["envelope"]))
            n += 1
# The X-Wing suite's bodies (Fixtures/e2ee-vectors-xwing.json, sealed to bob's X-Wing tablet in FuzzFilter).
xwing = json.load(open(os.path.join(root, "Fixtures", "e2ee-vectors-xwing.json")))
for group in ("positive", "negative"):
    for v in xwing[group]:
        open(os.path.join(out, f"xwing-{group}-{v['name']}.body"), "wb").write(v["body"].encode())
        n += 1
        if "envelope" in v:
            open(os.path.join(out, f"xwing-{group}-{v['name']}.envelope"), "wb").write(bytes.fromhex(v["envelope"]))
            n += 1
# Device lists, requests and pins files (FuzzDeviceList).
lists = vectors.get("device_lists", {})
for group in ("positive", "negative", "device_requests"):
    for v in lists.get(group, []):
        open(os.path.join(out, f"list-{group}-{v['name']}.json"), "wb").write(v["json"].encode())
        n += 1
for v in lists.get("pin_checks", []) + lists.get("negative", []):
    if v.get("pins"):
        open(os.path.join(out, f"pins-{v['name']}.json"), "wb").write(v["pins"].encode())
        n += 1
print(f"fuzz corpus: {n} seeds in {out}")
