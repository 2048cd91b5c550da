#!/usr/bin/env python3
"""The project's X-Wing vectors (Fixtures/e2ee-vectors-xwing.json), made and checked by the independent
implementation.

    python3 Tools/independent/xwing_vectors.py generate > Fixtures/e2ee-vectors-xwing.json
    python3 Tools/independent/xwing_vectors.py check [Fixtures/e2ee-vectors-xwing.json]
    python3 Tools/independent/xwing_vectors.py open-fresh FILE     # bodies sealed by the Swift side

swift-crypto (and CryptoKit) encapsulate X-Wing only with fresh randomness, so these vectors cannot come from the
Swift generator: this file seals them from 64-byte encapsulation seeds (docs/PROTOCOL.md §13, §16). The messages,
device lists and the sender's contacts are those of Fixtures/e2ee-vectors.json (made by `swift run e2ee-vectors`):
each positive vector is the classical vector of the same name, opened and sealed again to bob's X-Wing key.
"""

import json
import os
import struct
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import e2ee_push as E  # noqa: E402
import xwing  # noqa: E402

FIXTURES = os.path.normpath(os.path.join(HERE, "..", "..", "Fixtures"))
CLASSICAL_FIXTURE = os.path.join(FIXTURES, "e2ee-vectors.json")
XWING_FIXTURE = os.path.join(FIXTURES, "e2ee-vectors-xwing.json")
DRAFT_VECTORS = os.path.join(FIXTURES, "xwing", "xwing-draft06-vectors.json")

RECIPIENT_LIST = "bob-v4"
RECIPIENT_DEVICE = "tablet"
XWING_KEY_LABEL = "bob/tablet/xwing-device-key"
OLD_KEY_LABEL = "bob/tablet/device-key"
POSITIVES = ["call-invite", "call-invite-group", "call-cancel", "text", "text-1k", "receipt"]


def eseed(label):
    """The 64-byte X-Wing encapsulation seed of a label: ML-KEM's 32 bytes, then the ephemeral X25519 secret."""
    return E.seed(label + "/ml-kem") + E.seed(label + "/x25519")


def _lists(classical):
    return {v["name"]: E.load_device_list(v["json"]) for v in classical["device_lists"]["positive"]}


def _context(classical):
    lists = _lists(classical)
    keys = classical["keys"]
    contacts = E.contacts_from_lists([lists[keys["sender_device_list"]]])
    tablet = next(d for d in lists[RECIPIENT_LIST].devices if d.device_id == RECIPIENT_DEVICE)
    xw_secret = E.seed(XWING_KEY_LABEL)
    xw_public = xwing.keygen(xw_secret)
    old_secret = E.seed(OLD_KEY_LABEL)
    old_public = E.x25519_public(old_secret)
    old, current = tablet.device_keys[0], tablet.device_keys[-1]
    assert current.suite == E.XWING.id and current.public_key == xw_public, "bob-v4's tablet key is not the seed's"
    assert old.suite == E.SUITE and old.public_key == old_public and old.expires_at_ms is not None
    device_keys = {
        current.key_id: (xw_secret, None, E.XWING.id),
        old.key_id: (old_secret, old.expires_at_ms, E.SUITE),
    }
    # The classical positives open with bob's phone key (classical fixture's `keys`).
    phone_keys = {E.key_id(E.x25519_public(E.seed(keys["recipient_device_key_seed_label"])), E.ALG_X25519):
                  E.seed(keys["recipient_device_key_seed_label"])}
    messages = {}
    for v in classical["positive"]:
        messages[v["name"]] = (E.open_body(v["body"].encode(), phone_keys, contacts).message, v["message"])
    return {
        "contacts": contacts, "device_keys": device_keys, "xw_public": xw_public, "xw_kid": current.key_id,
        "old": old, "old_public": old_public, "messages": messages,
        "signing_seed": E.seed(keys["sender_signing_key_seed_label"]),
    }


def _seal(c, message, label, signing_seed=None):
    return E.seal(message, c["xw_public"], signing_seed or c["signing_seed"], eseed(label), E.XWING)


def generate(classical):
    c = _context(classical)
    positives = []
    for i, name in enumerate(POSITIVES):
        message, described = c["messages"][name]
        s = _seal(c, message, f"xwing-ephemeral/{i}")
        positives.append({
            "name": name, "kind": described["kind"], "ephemeral_seed_label": f"xwing-ephemeral/{i}",
            "enc": s.enc.hex(), "recipient_key_id": c["xw_kid"].hex(), "bucket": s.bucket,
            "envelope": s.envelope.hex(), "body": s.body.decode(), "body_length": len(s.body), "message": described,
        })
    invite = c["messages"]["call-invite"][0]
    envelope = bytes.fromhex(positives[0]["envelope"])
    header_len = E.XWING.header_len

    def flipped(offset):
        e = bytearray(envelope)
        e[offset] ^= 0x01
        return bytes(e)

    def with_suite(suite_id):
        return envelope[:1] + struct.pack(">H", suite_id) + envelope[3:]

    classical_envelope = bytes.fromhex(classical["positive"][0]["envelope"])
    # A classical envelope sealed to the tablet's old X25519 key but naming its X-Wing key id: the classical
    # suite's header and KEM, the X-Wing key's id (a downgrade to the suite the device left).
    old = c["old"]
    kid = c["xw_kid"]
    relabelled = E.seal(invite, c["old_public"], c["signing_seed"], E.seed("xwing-negative/relabelled"),
                        E.CLASSICAL, recipient_key_id=kid)
    mallory = E.seal(
        E.InnerMessage(invite.message_id, invite.sent_at_ms, invite.sender_user_id, invite.sender_signing_key_id,
                       invite.fields),
        c["xw_public"], E.seed("mallory/signing-key"), eseed("xwing-negative/forged"), E.XWING)
    stranger_public = xwing.keygen(E.seed("mallory/xwing-device-key"))
    other = E.seal(invite, stranger_public, c["signing_seed"], eseed("xwing-negative/other"), E.XWING)
    negatives = [
        ("classical-suite-label", "the X-Wing invite with its suite set to 0x0001 (it parses as a classical "
         "large-bucket envelope naming the X-Wing key)", E.make_body(with_suite(0x0001)), E.UNKNOWN_RECIPIENT_KEY),
        ("unknown-suite-3", "the X-Wing invite with suite 0x0003", E.make_body(with_suite(0x0003)),
         E.UNSUPPORTED_SUITE),
        ("truncated-enc", "the X-Wing invite cut to 1,100 bytes (inside enc)", E.make_body(envelope[:1100]),
         E.MALFORMED_ENVELOPE),
        ("truncated-ciphertext", "the X-Wing invite without its last byte", E.make_body(envelope[:-1]),
         E.MALFORMED_ENVELOPE),
        ("classical-ciphertext", "the X-Wing invite's header with the classical invite's 1,552-byte ciphertext",
         E.make_body(envelope[:header_len] + classical_envelope[E.HEADER_LEN:]), E.MALFORMED_ENVELOPE),
        ("classical-envelope-to-xwing-key", "a classical envelope to the tablet's old X25519 key naming the "
         "X-Wing key id", relabelled.body, E.UNKNOWN_RECIPIENT_KEY),
        ("flip-ml-kem-ciphertext", "one bit of enc's ML-KEM part flipped", E.make_body(flipped(11)),
         E.OPEN_FAILED),
        ("flip-x25519-ciphertext", "one bit of enc's X25519 part flipped", E.make_body(flipped(11 + 1088)),
         E.OPEN_FAILED),
        ("flip-ciphertext", "one bit of the AES-GCM ciphertext flipped", E.make_body(flipped(header_len)),
         E.OPEN_FAILED),
        ("flip-tag", "one bit of the AES-GCM tag flipped", E.make_body(flipped(len(envelope) - 1)), E.OPEN_FAILED),
        ("wrong-recipient", "sealed to mallory's X-Wing key", other.body, E.UNKNOWN_RECIPIENT_KEY),
        ("bad-signature", "alice's invite signed by mallory/signing-key", mallory.body, E.BAD_SIGNATURE),
    ]
    # The tablet's old classical key still opens until its expiry (grace), then never.
    lifecycle_message = c["messages"]["text"][0]
    lifecycle = E.seal(lifecycle_message, c["old_public"], c["signing_seed"], E.seed("xwing-ephemeral/old-key"))
    expires = old.expires_at_ms
    checks = [
        {"name": "old-classical-key-before-expiry", "now_ms": expires - 1, "expected_error": None,
         "message": c["messages"]["text"][1]},
        {"name": "old-classical-key-at-expiry", "now_ms": expires, "expected_error": E.UNKNOWN_RECIPIENT_KEY,
         "message": None},
        {"name": "old-classical-key-after-expiry", "now_ms": expires + 1, "expected_error": E.UNKNOWN_RECIPIENT_KEY,
         "message": None},
    ]
    return {
        "description": "E2EE push X-Wing suite (0x0002) vectors, sealed by Tools/independent/xwing_vectors.py "
                       "(regenerate: python3 Tools/independent/xwing_vectors.py generate > "
                       "Fixtures/e2ee-vectors-xwing.json). Spec: docs/PROTOCOL.md §13, §16.",
        "suite": E.XWING.id,
        "keys": {
            "eseed_rule": 'eseed(label) = seed(label + "/ml-kem") || seed(label + "/x25519") (64 bytes)',
            "source_vectors": "e2ee-vectors.json",
            "recipient_device_list": RECIPIENT_LIST,
            "recipient_device_id": RECIPIENT_DEVICE,
            "recipient_xwing_key_seed_label": XWING_KEY_LABEL,
            "recipient_xwing_public_key": c["xw_public"].hex(),
            "recipient_xwing_key_id": kid.hex(),
            "recipient_old_key_seed_label": OLD_KEY_LABEL,
            "recipient_old_key_id": old.key_id.hex(),
            "sender_device_list": classical["keys"]["sender_device_list"],
            "sender_signing_key_seed_label": classical["keys"]["sender_signing_key_seed_label"],
            "stranger_xwing_key_seed_label": "mallory/xwing-device-key",
        },
        "positive": positives,
        "too_large": [{"name": "text-large-bucket", "expected_error": E.TOO_LARGE,
                       "what": "the classical large-bucket text: 2,000 bytes of body do not fit X-Wing's one bucket"}],
        "negative": [{"name": n, "what": w, "body": b.decode(), "expected_error": e} for n, w, b, e in negatives],
        "key_lifecycle": {
            "recipient_key_id": old.key_id.hex(), "recipient_key_seed_label": OLD_KEY_LABEL,
            "ephemeral_secret_seed_label": "xwing-ephemeral/old-key", "expires_at_ms": expires,
            "envelope": lifecycle.envelope.hex(), "body": lifecycle.body.decode(), "checks": checks,
        },
    }


def _dump(obj):
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


passed = 0
failed = 0


def report(ok, name, detail=""):
    global passed, failed
    passed, failed = (passed + 1, failed) if ok else (passed, failed + 1)
    print(f"{'PASS' if ok else 'FAIL'}  {name}" + (f"  ({detail})" if detail else ""))


def check_draft_vectors(path=DRAFT_VECTORS):
    """The X-Wing draft's vectors: key generation, encapsulation from eseed, decapsulation."""
    with open(path, "rb") as fh:
        vectors = json.load(fh)
    for i, v in enumerate(vectors):
        seed = bytes.fromhex(v["seed"])
        pk = xwing.keygen(seed)
        ss, ct = xwing.encapsulate(pk, bytes.fromhex(v["eseed"]))
        ok = (pk.hex() == v["pk"] and ct.hex() == v["ct"] and ss.hex() == v["ss"]
              and xwing.decapsulate(seed, ct).hex() == v["ss"] and v["sk"] == v["seed"])
        report(ok, f"xwing-draft/{i}", "keygen, encapsulate, decapsulate" if ok else "differs")


def check(path):
    with open(CLASSICAL_FIXTURE, "rb") as fh:
        classical = json.load(fh)
    with open(path, "rb") as fh:
        committed = fh.read()
    check_draft_vectors()
    fixture = json.loads(committed)
    regenerated = _dump(generate(classical)).encode()
    report(regenerated == committed, "xwing-fixture/reproduced", "byte for byte" if regenerated == committed else
           "regenerate with: python3 Tools/independent/xwing_vectors.py generate > Fixtures/e2ee-vectors-xwing.json")
    c = _context(classical)
    lengths = set()
    for v in fixture["positive"]:
        try:
            opened = E.open_body(v["body"].encode(), c["device_keys"], c["contacts"])
            ok = (c["messages"][v["name"]][1] == v["message"] and opened.message == c["messages"][v["name"]][0]
                  and opened.bucket == v["bucket"] == 1844)
            lengths.add(len(v["body"]))
            report(ok, f"xwing-positive/{v['name']}", "opens to its message" if ok else "message differs")
        except E.E2EEError as exc:
            report(False, f"xwing-positive/{v['name']}", f"{exc.code}: {exc.detail}")
    report(lengths == {4093}, "xwing-positive/one-body-length", f"body lengths {sorted(lengths)}")
    for v in fixture["too_large"]:
        try:
            _seal(c, c["messages"][v["name"]][0], "xwing-too-large")
            report(False, f"xwing-too-large/{v['name']}", "sealed")
        except E.E2EEError as exc:
            report(exc.code == v["expected_error"], f"xwing-too-large/{v['name']}", exc.code)
    for v in fixture["negative"]:
        try:
            E.open_body(v["body"].encode(), c["device_keys"], c["contacts"])
            report(False, f"xwing-negative/{v['name']}", f"opened, expected {v['expected_error']}")
        except E.E2EEError as exc:
            report(exc.code == v["expected_error"], f"xwing-negative/{v['name']}",
                   exc.code if exc.code == v["expected_error"] else f"got {exc.code}, expected {v['expected_error']}")
    section = fixture["key_lifecycle"]
    for v in section["checks"]:
        try:
            opened = E.open_body(section["body"].encode(), c["device_keys"], c["contacts"], now_ms=v["now_ms"])
            report(v["expected_error"] is None and opened.message == c["messages"]["text"][0],
                   f"xwing-key-lifecycle/{v['name']}", "opens")
        except E.E2EEError as exc:
            report(exc.code == v["expected_error"], f"xwing-key-lifecycle/{v['name']}", exc.code)


def open_fresh(path):
    """Bodies the Swift side sealed with fresh randomness (`swift run e2ee-vectors fresh-xwing`): each must open to
    its message (the Swift side wrote the fields it sealed next to the body)."""
    with open(CLASSICAL_FIXTURE, "rb") as fh:
        classical = json.load(fh)
    c = _context(classical)
    with open(path, "rb") as fh:
        fresh = json.load(fh)
    for v in fresh["pushes"]:
        try:
            opened = E.open_body(v["body"].encode(), c["device_keys"], c["contacts"])
            ok = opened.message == c["messages"][v["name"]][0] and len(v["body"]) == 4093
            report(ok, f"swift-sealed-xwing/{v['name']}", "opens to its message" if ok else "differs")
        except E.E2EEError as exc:
            report(False, f"swift-sealed-xwing/{v['name']}", f"{exc.code}: {exc.detail}")


def main(argv):
    if argv[:1] == ["generate"]:
        with open(CLASSICAL_FIXTURE, "rb") as fh:
            sys.stdout.write(_dump(generate(json.load(fh))))
        return 0
    if argv[:1] == ["check"]:
        check(argv[1] if len(argv) > 1 else XWING_FIXTURE)
    elif argv[:1] == ["open-fresh"] and len(argv) == 2:
        open_fresh(argv[1])
    else:
        sys.stderr.write("usage: xwing_vectors.py generate | check [FIXTURE] | open-fresh FILE\n")
        return 64
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
