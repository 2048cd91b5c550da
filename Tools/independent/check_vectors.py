#!/usr/bin/env python3
"""Check Fixtures/e2ee-vectors.json against the independent implementation in e2ee_push.py.

Run from anywhere:  python3 Tools/independent/check_vectors.py [path/to/e2ee-vectors.json]
Exit status 0 only if every check passes. Needs only the standard library and `cryptography`.

Checks:
- the spec's §3 example key id (X25519 public key 0x07 x 32 -> ab4d2bdb53c7488d);
- the spec's §14 worked example inputs seal to the `call-cancel` vector;
- the `keys` section: every seed label gives the listed public keys and key ids;
- every positive vector opens (recipient bob/device-key, contact alice), its clear fields match, and
  re-sealing the decoded message with the same ephemeral seed reproduces the envelope and body byte for byte;
- every negative vector fails with exactly its `expected_error`.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # do not leave __pycache__ in the repository
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import cryptography  # noqa: F401
except ImportError:
    sys.stderr.write("error: the Python package 'cryptography' is missing; install it with:  pip install cryptography\n")
    sys.exit(2)

import e2ee_push as E  # noqa: E402

DEFAULT_FIXTURE = os.path.normpath(os.path.join(HERE, "..", "..", "Fixtures", "e2ee-vectors.json"))

passed = 0
failed = 0


def report(ok, name, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print(f"{'PASS' if ok else 'FAIL'}  {name}" + (f"  ({detail})" if detail else ""))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_FIXTURE
    try:
        with open(path, "rb") as fh:
            vectors = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read vectors {path}: {exc}", file=sys.stderr)
        return 2

    # §3 example.
    kid = E.key_id(b"\x07" * 32, E.ALG_X25519).hex()
    report(kid == "ab4d2bdb53c7488d", "spec-example-key-id", f"got {kid}")

    # Keys.
    keys = vectors["keys"]
    bob_secret = E.seed(keys["recipient_device_key_seed_label"])
    bob_public = E.x25519_public(bob_secret)
    bob_kid = E.key_id(bob_public, E.ALG_X25519)
    old_kid = E.key_id(E.x25519_public(E.seed(keys["recipient_old_device_key_seed_label"])), E.ALG_X25519)
    alice_seed = E.seed(keys["sender_signing_key_seed_label"])
    alice_public = E.ed25519_public(alice_seed)
    alice_kid = E.key_id(alice_public, E.ALG_ED25519)
    ok = (bob_public.hex() == keys["recipient_device_public_key"]
          and bob_kid.hex() == keys["recipient_device_key_id"]
          and old_kid.hex() == keys["recipient_old_device_key_id"]
          and alice_public.hex() == keys["sender_signing_public_key"]
          and alice_kid.hex() == keys["sender_signing_key_id"])
    report(ok, "keys", "seed rule, public keys and key ids")
    ok = vectors.get("protocol_version") == E.VERSION and vectors.get("suite") == E.SUITE
    report(ok, "version-and-suite")

    # The receiver of §13: bob's current device key, and alice as the only contact.
    device_keys = {bob_kid: bob_secret}
    contacts = {(keys["sender_user_id"], alice_kid): alice_public}

    for v in vectors["positive"]:
        name = "positive/" + v["name"]
        body = v["body"].encode("utf-8")
        try:
            opened = E.open_body(body, device_keys, contacts)
        except E.E2EEError as exc:
            report(False, name, f"open failed: {exc.code} {exc.detail}")
            continue
        m = opened.message
        problems = []
        if E.KIND_NAMES.get(m.kind) != v["kind"]:
            problems.append(f"kind {m.kind}")
        if m.message_id.hex() != v["message_id"]:
            problems.append("message_id")
        if m.sent_at_ms != v["sent_at_ms"]:
            problems.append("sent_at_ms")
        if opened.enc.hex() != v["enc"] or opened.recipient_key_id.hex() != v["recipient_key_id"]:
            problems.append("enc/key id")
        if opened.bucket != v["bucket"] or len(body) != v["body_length"]:
            problems.append("bucket/body length")
        if m.sender_user_id != keys["sender_user_id"]:
            problems.append("sender")
        # Every clear field, compared with the vector's "message" (so a symmetric decoder bug cannot hide).
        fields = dict(E.describe(m))
        if isinstance(m.fields, E.Text):
            fields.pop("body_bytes", None)
            fields["body"] = m.fields.body
        if isinstance(fields.get("headers"), (list, tuple)):
            fields["headers"] = {k: val for k, val in fields["headers"]}
        if fields != v.get("message"):
            wrong = sorted(k for k in set(fields) | set(v.get("message") or {}) if fields.get(k) != (v.get("message") or {}).get(k))
            problems.append("clear fields differ: " + ", ".join(wrong))
        eph = E.seed(v["ephemeral_secret_seed_label"])
        try:
            sealed = E.seal(m, bob_public, alice_seed, eph)
        except E.E2EEError as exc:
            report(False, name, f"re-seal failed: {exc.code} {exc.detail}")
            continue
        if sealed.enc.hex() != v["enc"]:
            problems.append("re-sealed enc")
        if sealed.envelope.hex() != v["envelope"]:
            problems.append("re-sealed envelope bytes")
        if sealed.body != body:
            problems.append("re-sealed body bytes")
        d = E.describe(m)
        summary = ", ".join(f"{k}={d[k]}" for k in d if k not in ("message_id", "sender_signing_key_id"))
        report(not problems, name, "; ".join(problems) if problems else f"{len(body)} bytes, {summary}")

    # §14: the worked example's inputs, from the spec text alone, seal to the call-cancel vector.
    cancel = [v for v in vectors["positive"] if v["name"] == "call-cancel"]
    if cancel:
        message, pk_r, signing_seed, sk_e = E.worked_example_inputs()
        sealed = E.seal(message, pk_r, signing_seed, sk_e)
        report(sealed.body == cancel[0]["body"].encode("utf-8"), "spec-worked-example",
               "spec §14 inputs seal to the call-cancel vector")
    else:
        report(False, "spec-worked-example", "no call-cancel vector")

    for v in vectors["negative"]:
        name = "negative/" + v["name"]
        try:
            E.open_body(v["body"].encode("utf-8"), device_keys, contacts)
            report(False, name, f"opened, expected {v['expected_error']}")
        except E.E2EEError as exc:
            ok = exc.code == v["expected_error"]
            report(ok, name, exc.code if ok else f"got {exc.code} ({exc.detail}), expected {v['expected_error']}")

    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
