#!/usr/bin/env python3
"""Check Fixtures/e2ee-vectors.json against the independent implementation in e2ee_push.py.

Run from anywhere:  python3 Tools/independent/check_vectors.py [path/to/e2ee-vectors.json]
Exit status 0 only if every check passes. Needs the standard library, `cryptography` and, for the X-Wing keys
of the device lists, `kyber-py`. The X-Wing envelope vectors are checked by xwing_vectors.py.

Checks:
- the spec's §3 example key id (X25519 public key 0x07 x 32 -> ab4d2bdb53c7488d);
- the spec's §14 worked example inputs seal to the `call-cancel` vector;
- the `keys` section: every seed label gives the listed public keys and key ids;
- every positive vector opens (recipient bob/device-key, contact alice), its clear fields match, and
  re-sealing the decoded message with the same ephemeral seed reproduces the envelope and body byte for byte;
- every negative vector fails with exactly its `expected_error`;
- the envelope vectors' contacts come from alice's signed device list (`keys.sender_device_list`), §9 step 4;
- `key_lifecycle`: the body sealed to bob's older key opens before that key's `expires_at_ms` (taken from bob's
  device list) and is `unknown-recipient-key` at and after it;
- `device_lists`: every positive list parses and verifies (§11.4), its list_tbs, signature (re-signed from the
  seed), digest, fingerprint and every certificate message and certificate match; every pin check gives its
  outcome (§11.5); every negative list fails with exactly its code; every device request gives its proof message
  and proof, or its code (§11.8).
"""

import json
import os
import re
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

    # Device lists first: the envelope vectors' contacts come from alice's list (§13).
    lists = check_device_lists(vectors)

    # The receiver of §13: bob's current device key, and alice's verified device list as the only contact.
    device_keys = {bob_kid: bob_secret}
    sender_list = lists.get(keys.get("sender_device_list", ""))
    if sender_list is None:
        report(False, "contacts-from-sender-list", "no verified sender device list; using alice's key from the seed")
        contacts = {(keys["sender_user_id"], alice_kid): alice_public}
    else:
        contacts = E.contacts_from_lists([sender_list])
        report(contacts == {(keys["sender_user_id"], alice_kid): alice_public}, "contacts-from-sender-list",
               f"{keys['sender_device_list']}: {len(contacts)} device(s), alice/signing-key is device "
               f"{sender_list.devices[0].device_id!r}")

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

    check_key_lifecycle(vectors, lists, contacts)

    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


def _pins_for(text, user_id):
    """The pin of `user_id` in a pins file text (None: no pins file, or no pin for that user)."""
    if text is None:
        return None
    return E.parse_pins(text).get(user_id)


def check_device_lists(vectors):
    """§11: returns the verified positive lists by name."""
    section = vectors.get("device_lists")
    if section is None:
        report(False, "device-lists", "no device_lists section")
        return {}
    lists = {}
    for v in section["positive"]:
        name = "device-list/" + v["name"]
        try:
            lst = E.load_device_list(v["json"])
        except E.E2EEError as exc:
            report(False, name, f"refused: {exc.code} {exc.detail}")
            continue
        problems = []
        user_seed = E.seed(v["user_signing_key_seed_label"])
        if lst.user_signing_key != E.ed25519_public(user_seed):
            problems.append("user_signing_key is not the seed's public key")
        if lst.user_id != v["user_id"] or lst.list_version != v["list_version"]:
            problems.append("user_id/list_version")
        tbs = E.list_tbs(lst)
        if tbs.hex() != v["list_tbs"]:
            problems.append("list_tbs")
        if lst.signature.hex() != v["signature"]:
            problems.append("signature differs from the JSON's")
        resigned = E.Ed25519PrivateKey.from_private_bytes(user_seed).sign(E.list_signature_message(lst))
        if resigned.hex() != v["signature"]:
            problems.append("re-signing list_tbs with the user seed gives another signature")
        if E.list_digest(lst).hex() != v["digest"]:
            problems.append("digest")
        fp = E.fingerprint(lst.user_id, lst.user_signing_key)
        if fp != v["fingerprint"] or not re.fullmatch(r"[0-9a-f]{4}( [0-9a-f]{4}){4}", fp):
            problems.append(f"fingerprint {fp!r}")
        if [d.device_id for d in lst.devices] != [d["device_id"] for d in v["devices"]]:
            problems.append("device ids")
        for d, dv in zip(lst.devices, v["devices"]):
            if d.signing_key != E.ed25519_public(E.seed(dv["signing_key_seed_label"])):
                problems.append(f"{d.device_id}: signing key is not the seed's")
            if len(d.device_keys) != len(dv["device_key_seed_labels"]) or any(
                    k.public_key != E.device_public_key(E.seed(x), E.SUITES[k.suite])
                    for k, x in zip(d.device_keys, dv["device_key_seed_labels"])):
                problems.append(f"{d.device_id}: device keys are not the seeds'")
            msg = E.certificate_message(lst.user_id, d.device_id, d.signing_key, d.signed_in_at_ms)
            if msg.hex() != dv["certificate_message"]:
                problems.append(f"{d.device_id}: certificate message")
            cert = E.Ed25519PrivateKey.from_private_bytes(user_seed).sign(msg)
            if cert.hex() != dv["certificate"] or d.certificate != cert:
                problems.append(f"{d.device_id}: certificate")
            if d.push != dv["push"]:
                problems.append(f"{d.device_id}: push read as {d.push}, expected {dv['push']}")
        if not problems:
            lists[v["name"]] = lst
        report(not problems, name, "; ".join(problems) if problems else
               f"v{lst.list_version}, {len(lst.devices)} device(s) {[d.device_id for d in lst.devices]}, {fp}")

    for v in section["pin_checks"]:
        name = "pin-check/" + v["name"]
        lst = lists.get(v["list"])
        if lst is None:
            report(False, name, f"no verified list {v['list']}")
            continue
        try:
            outcome = E.check_pin(lst, _pins_for(v["pins"], lst.user_id))
        except E.E2EEError as exc:
            report(False, name, f"refused: {exc.code} {exc.detail}")
            continue
        report(outcome == v["expected_outcome"], name, f"got {outcome}, expected {v['expected_outcome']}")

    for v in section["negative"]:
        name = "device-list-negative/" + v["name"]
        try:
            lst = E.load_device_list(v["json"])
            outcome = E.check_pin(lst, _pins_for(v["pins"], lst.user_id))
            report(False, name, f"accepted ({outcome}), expected {v['expected_error']}")
        except E.E2EEError as exc:
            ok = exc.code == v["expected_error"]
            report(ok, name, f"{exc.code}: {exc.detail}" if ok else
                   f"got {exc.code} ({exc.detail}), expected {v['expected_error']}")

    for v in section["device_requests"]:
        name = "device-request/" + v["name"]
        try:
            req = E.load_device_request(v["json"])
        except E.E2EEError as exc:
            ok = exc.code == v["expected_error"]
            report(ok, name, exc.code if ok else f"got {exc.code} ({exc.detail}), expected {v['expected_error']}")
            continue
        if v["expected_error"] is not None:
            report(False, name, f"accepted, expected {v['expected_error']}")
            continue
        problems = []
        device_seed = E.seed(v["signing_key_seed_label"])
        if req.signing_key != E.ed25519_public(device_seed):
            problems.append("signing key is not the seed's")
        if len(req.device_keys) != len(v["device_key_seed_labels"]) or any(
                k.public_key != E.device_public_key(E.seed(x), E.SUITES[k.suite])
                for k, x in zip(req.device_keys, v["device_key_seed_labels"])):
            problems.append("device keys are not the seeds'")
        msg = E.request_proof_message(req.user_id, req.device_id, req.signing_key, req.device_keys, req.version)
        if msg.hex() != v["proof_message"]:
            problems.append("proof message")
        if E.Ed25519PrivateKey.from_private_bytes(device_seed).sign(msg).hex() != v["proof"] or req.proof.hex() != v["proof"]:
            problems.append("proof")
        report(not problems, name, "; ".join(problems) if problems else f"{req.user_id}/{req.device_id}")
    return lists


def check_key_lifecycle(vectors, lists, contacts):
    """§5 step 6 / §11.1: the older key's expiry comes from the recipient's list; its secret from the seed."""
    section = vectors.get("key_lifecycle")
    recipient = lists.get(vectors["keys"].get("recipient_device_list", ""))
    if section is None or recipient is None:
        report(False, "key-lifecycle", "no key_lifecycle section or no verified recipient list")
        return
    kid = bytes.fromhex(section["recipient_key_id"])
    listed = [k for d in recipient.devices for k in d.device_keys if k.key_id == kid]
    secret = E.seed(section["recipient_key_seed_label"])
    ok = (len(listed) == 1 and listed[0].public_key == E.x25519_public(secret)
          and listed[0].retired_at_ms is not None and listed[0].expires_at_ms == section["expires_at_ms"])
    report(ok, "key-lifecycle/listed-key", f"{kid.hex()} retired, expires_at_ms {section['expires_at_ms']}")
    if not ok:
        return
    device_keys = {kid: (secret, listed[0].expires_at_ms)}
    body = section["body"].encode("utf-8")
    for v in section["checks"]:
        name = "key-lifecycle/" + v["name"]
        try:
            opened = E.open_body(body, device_keys, contacts, now_ms=v["now_ms"])
        except E.E2EEError as exc:
            ok = exc.code == v["expected_error"]
            report(ok, name, f"now_ms {v['now_ms']}: {exc.code}" if ok else
                   f"got {exc.code} ({exc.detail}), expected {v['expected_error']}")
            continue
        if v["expected_error"] is not None:
            report(False, name, f"opened at {v['now_ms']}, expected {v['expected_error']}")
            continue
        fields = dict(E.describe(opened.message))
        fields.pop("body_bytes", None)
        fields["body"] = opened.message.fields.body
        sealed = E.seal(opened.message, listed[0].public_key, E.seed(vectors["keys"]["sender_signing_key_seed_label"]),
                        E.seed(section["ephemeral_secret_seed_label"]))
        ok = fields == v["message"] and sealed.envelope.hex() == section["envelope"] and sealed.body == body
        report(ok, name, f"now_ms {v['now_ms']}: opens, re-seals byte for byte" if ok else "message or re-seal differs")


if __name__ == "__main__":
    sys.exit(main())
