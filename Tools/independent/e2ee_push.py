"""Independent Python implementation of the E2EE push wire format, version 1.

Written from docs/PROTOCOL.md alone (plus RFC 9180, RFC 5869, RFC 8032, RFC 7748 and
draft-connolly-cfrg-xwing-kem-06), without reading the Swift sources, to show that the specification is
sufficient to interoperate. Only the standard library, the `cryptography` package and, for the X-Wing suite,
`kyber-py` (ML-KEM-768, in xwing.py) are used; HPKE (RFC 9180: LabeledExtract / LabeledExpand /
DHKEM(X25519, HKDF-SHA256) / the X-Wing KEM / key schedule in mode_base) is implemented here on top of the raw
primitives.

Public API:
    seed(label)                                  -> 32-byte secret of the vector seed rule (spec §13)
    key_id(public_key, alg)                      -> 8-byte key id (spec §3), alg = ALG_X25519 or ALG_ED25519
    encode_signed_part / decode_signed_part      -> inner message codec (spec §7)
    seal(message, recipient_public_key, signing_seed, ephemeral_secret, suite) -> SealResult (spec §8; the
                                                 ephemeral secret is 32 bytes for suite 1, a 64-byte seed for 2)
    open_body(body, device_keys, contacts, now_ms) -> Opened (spec §9), raises E2EEError with a §10 code
    parse_device_list / load_device_list         -> DeviceList (spec §11.1, §11.4), raises key-file and §11.4 codes
    list_tbs / certificate_message / list_digest -> the signed bytes of §11.2, §11.3 and the pin digest of §11.5
    check_pin(list, pin)                         -> "first-use" / "unchanged" / "newer" or raises §11.5 codes
    fingerprint(user_id, user_signing_key)       -> §11.6 text
    load_device_request(text)                    -> DeviceRequest (spec §11.8), proof verified
    contacts_from_lists(lists)                   -> the contacts of §9 step 4 from verified device lists
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import struct
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple, Union

try:
    from cryptography.exceptions import InvalidSignature, InvalidTag
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
except ImportError:  # pragma: no cover - exercised only without the dependency
    sys.stderr.write(
        "error: the Python package 'cryptography' is required (X25519, Ed25519, ChaCha20-Poly1305).\n"
        "       install it with:  pip install cryptography\n"
    )
    raise SystemExit(2)

# ---------------------------------------------------------------------------------------------------------
# Constants (spec §2-§7)

VERSION = 0x01
SUITE = 0x0001
ALG_X25519 = 0x20
ALG_XWING = 0x7A
ALG_ED25519 = 0xED
HEADER_LEN = 1 + 2 + 8 + 32  # 43, suite 0x0001
TAG_LEN = 16
SIG_LEN = 64
BUCKETS = (1536, 2932)  # suite 0x0001 over APNs
MAX_BODY = 4096


@dataclass(frozen=True)
class Suite:
    """A crypto suite (§2, §5, §6, §16): its HPKE ids, sizes, key id alg byte and APNs padding buckets."""
    id: int
    name: str
    kem_id: int
    kdf_id: int
    aead_id: int
    n_enc: int
    n_pk: int
    n_sk: int
    alg: int
    buckets: Tuple[int, ...]

    @property
    def header_len(self) -> int:
        return 1 + 2 + 8 + self.n_enc

    @property
    def hpke_suite_id(self) -> bytes:
        return b"HPKE" + struct.pack(">HHH", self.kem_id, self.kdf_id, self.aead_id)


CLASSICAL = Suite(0x0001, "classical", 0x0020, 0x0001, 0x0003, 32, 32, 32, ALG_X25519, BUCKETS)
XWING = Suite(0x0002, "xwing", 0x647A, 0x0001, 0x0002, 1120, 1216, 32, ALG_XWING, (1844,))
SUITES = {s.id: s for s in (CLASSICAL, XWING)}

KEY_ID_LABEL = b"e2ee-push/key-id/v1\x00"
INFO_LABEL = b"e2ee-push/v1\x00"
SIG_LABEL = b"e2ee-push/sig/v1\x00"

BODY_PREFIX = (
    b'{"aps":{"alert":{"title":"New message","body":"Open the app to view it."},"mutable-content":1},"e2ee":"'
)
BODY_SUFFIX = b'"}'
assert len(BODY_PREFIX) == 103 and len(BODY_SUFFIX) == 2

KIND_CALL_INVITE = 0x01
KIND_CALL_CANCEL = 0x02
KIND_TEXT = 0x03
KIND_RECEIPT = 0x04
KIND_NAMES = {
    KIND_CALL_INVITE: "call-invite",
    KIND_CALL_CANCEL: "call-cancel",
    KIND_TEXT: "text",
    KIND_RECEIPT: "receipt",
}
CANCEL_REASONS = {1: "remoteEnded", 2: "answeredElsewhere", 3: "declinedElsewhere"}

# Error codes, spec §10 (the strings are the stable API).
TOO_LARGE = "too-large"
MALFORMED_ENVELOPE = "malformed-envelope"
FOREIGN_PAYLOAD = "foreign-payload"
UNSUPPORTED_VERSION = "unsupported-version"
UNSUPPORTED_SUITE = "unsupported-suite"
UNKNOWN_RECIPIENT_KEY = "unknown-recipient-key"
OPEN_FAILED = "open-failed"
MALFORMED_MESSAGE = "malformed-message"
UNKNOWN_SENDER = "unknown-sender"
BAD_SIGNATURE = "bad-signature"
INVALID_ARGUMENT = "invalid-argument"
INVALID_KEY = "invalid-key"


class E2EEError(Exception):
    def __init__(self, code: str, detail: str = ""):
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


# ---------------------------------------------------------------------------------------------------------
# Seed rule (§13) and key ids (§3)


def seed(label: str) -> bytes:
    """seed(label)[i] = utf8("e2ee-vectors/" + label)[i mod n] XOR i, i in 0..31."""
    b = ("e2ee-vectors/" + label).encode("utf-8")
    return bytes(b[i % len(b)] ^ i for i in range(32))


def key_id(public_key: bytes, alg: int) -> bytes:
    lengths = {ALG_X25519: 32, ALG_ED25519: 32, ALG_XWING: 1216}
    if lengths.get(alg) != len(public_key):
        raise E2EEError(INVALID_KEY, "key id needs alg 0x20 or 0xED with a 32-byte key, or 0x7A with 1,216 bytes")
    return hashlib.sha256(KEY_ID_LABEL + bytes([alg]) + public_key).digest()[:8]


def x25519_public(secret: bytes) -> bytes:
    return X25519PrivateKey.from_private_bytes(secret).public_key().public_bytes_raw()


def ed25519_public(signing_seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(signing_seed).public_key().public_bytes_raw()


# ---------------------------------------------------------------------------------------------------------
# HKDF-SHA256 (RFC 5869) and HPKE (RFC 9180), suite DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20Poly1305


def hkdf_extract(salt: bytes, ikm: bytes) -> bytes:
    if not salt:
        salt = b"\x00" * 32
    return hmac.new(salt, ikm, hashlib.sha256).digest()


def hkdf_expand(prk: bytes, info: bytes, length: int) -> bytes:
    out, t, counter = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([counter]), hashlib.sha256).digest()
        out += t
        counter += 1
    return out[:length]


KEM_ID, KDF_ID, AEAD_ID = 0x0020, 0x0001, 0x0003
KEM_SUITE_ID = b"KEM" + struct.pack(">H", KEM_ID)
HPKE_SUITE_ID = b"HPKE" + struct.pack(">HHH", KEM_ID, KDF_ID, AEAD_ID)
MODE_BASE = 0x00
N_SECRET, N_ENC, N_K, N_N, N_H = 32, 32, 32, 12, 32


def labeled_extract(suite_id: bytes, salt: bytes, label: bytes, ikm: bytes) -> bytes:
    return hkdf_extract(salt, b"HPKE-v1" + suite_id + label + ikm)


def labeled_expand(suite_id: bytes, prk: bytes, label: bytes, info: bytes, length: int) -> bytes:
    return hkdf_expand(prk, struct.pack(">H", length) + b"HPKE-v1" + suite_id + label + info, length)


def _x25519(secret: bytes, public: bytes) -> bytes:
    """DH with the all-zero output check of RFC 9180 §7.1.4 (cryptography raises on an all-zero result)."""
    try:
        dh = X25519PrivateKey.from_private_bytes(secret).exchange(X25519PublicKey.from_public_bytes(public))
    except ValueError as exc:
        raise E2EEError(OPEN_FAILED, "X25519 produced the all-zero shared secret") from exc
    if dh == b"\x00" * 32:  # belt and braces
        raise E2EEError(OPEN_FAILED, "X25519 produced the all-zero shared secret")
    return dh


def _extract_and_expand(dh: bytes, kem_context: bytes) -> bytes:
    eae_prk = labeled_extract(KEM_SUITE_ID, b"", b"eae_prk", dh)
    return labeled_expand(KEM_SUITE_ID, eae_prk, b"shared_secret", kem_context, N_SECRET)


def dhkem_encap(pk_r: bytes, sk_e: bytes) -> Tuple[bytes, bytes]:
    """Encap with a given ephemeral secret (DeriveKeyPair is not used: the secret is the X25519 scalar)."""
    pk_e = x25519_public(sk_e)
    dh = _x25519(sk_e, pk_r)
    enc = pk_e
    return _extract_and_expand(dh, enc + pk_r), enc


def dhkem_decap(enc: bytes, sk_r: bytes) -> bytes:
    dh = _x25519(sk_r, enc)
    return _extract_and_expand(dh, enc + x25519_public(sk_r))


def key_schedule_base(shared_secret: bytes, info: bytes, suite: Suite = CLASSICAL) -> Dict[str, bytes]:
    """RFC 9180 §5.1 in mode_base. Both suites' AEADs take 32-byte keys and 12-byte nonces (ChaCha20-Poly1305,
    AES-256-GCM) and both KDFs are HKDF-SHA256: only the suite id differs."""
    suite_id = suite.hpke_suite_id
    psk, psk_id = b"", b""
    psk_id_hash = labeled_extract(suite_id, b"", b"psk_id_hash", psk_id)
    info_hash = labeled_extract(suite_id, b"", b"info_hash", info)
    ks_context = bytes([MODE_BASE]) + psk_id_hash + info_hash
    secret = labeled_extract(suite_id, shared_secret, b"secret", psk)
    return {
        "key": labeled_expand(suite_id, secret, b"key", ks_context, N_K),
        "base_nonce": labeled_expand(suite_id, secret, b"base_nonce", ks_context, N_N),
        "exporter_secret": labeled_expand(suite_id, secret, b"exp", ks_context, N_H),
    }


def _aead(suite: Suite, key: bytes):
    return ChaCha20Poly1305(key) if suite.aead_id == 0x0003 else AESGCM(key)


def device_public_key(secret: bytes, suite: Suite = CLASSICAL) -> bytes:
    """A device key's public key (§3, §16): the X25519 public key, or the X-Wing public key of a 32-byte seed."""
    if suite is XWING:
        import xwing
        return xwing.keygen(secret)
    return x25519_public(secret)


def hpke_info(recipient_key_id: bytes, suite: Suite = CLASSICAL) -> bytes:
    """§8 step 2: "e2ee-push/v1" || 0x00 || version || suite || key_id."""
    return INFO_LABEL + bytes([VERSION]) + struct.pack(">H", suite.id) + recipient_key_id


# ---------------------------------------------------------------------------------------------------------
# Padding (§6): ISO/IEC 7816-4 to the smallest bucket strictly larger than the message.


def bucket_for(length: int, suite: Suite = CLASSICAL) -> Optional[int]:
    for b in suite.buckets:
        if length < b:
            return b
    return None


def pad(data: bytes, suite: Suite = CLASSICAL) -> bytes:
    bucket = bucket_for(len(data), suite)
    if bucket is None:
        raise E2EEError(TOO_LARGE, f"signed inner message of {len(data)} bytes fits no bucket")
    return data + b"\x80" + b"\x00" * (bucket - len(data) - 1)


def unpad(padded: bytes) -> bytes:
    i = len(padded) - 1
    while i >= 0 and padded[i] == 0x00:
        i -= 1
    if i < 0 or padded[i] != 0x80:
        raise E2EEError(OPEN_FAILED, "bad padding")
    return padded[:i]


# ---------------------------------------------------------------------------------------------------------
# Inner message (§7)


@dataclass
class CallInvite:
    call_id: bytes
    caller_handle: str
    display_name: str
    has_video: bool
    ring_timeout_s: int
    participants: List[str] = field(default_factory=list)
    headers: List[Tuple[str, str]] = field(default_factory=list)
    kind: int = KIND_CALL_INVITE


@dataclass
class CallCancel:
    call_id: bytes
    reason: int
    kind: int = KIND_CALL_CANCEL


@dataclass
class Text:
    thread_id: str
    title: str
    body: str
    kind: int = KIND_TEXT


@dataclass
class Receipt:
    message_ids: List[bytes]
    kind: int = KIND_RECEIPT


@dataclass
class UnknownKind:
    """A kind this implementation does not know (0x05-0xFE): fields kept opaque, never an alert (§7.1)."""
    kind: int
    raw: bytes


Fields = Union[CallInvite, CallCancel, Text, Receipt, UnknownKind]


@dataclass
class InnerMessage:
    message_id: bytes
    sent_at_ms: int
    sender_user_id: str
    sender_signing_key_id: bytes
    fields: Fields

    @property
    def kind(self) -> int:
        return self.fields.kind


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise E2EEError(MALFORMED_MESSAGE, "truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return struct.unpack(">H", self.take(2))[0]

    def u64(self) -> int:
        return struct.unpack(">Q", self.take(8))[0]

    def _utf8(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            raise E2EEError(MALFORMED_MESSAGE, "invalid UTF-8") from exc

    def str8(self, lo: int = 0, hi: int = 255) -> str:
        n = self.u8()
        if not lo <= n <= hi:
            raise E2EEError(MALFORMED_MESSAGE, f"str8 length {n} not in {lo}..{hi}")
        return self._utf8(self.take(n))

    def str16(self) -> str:
        return self._utf8(self.take(self.u16()))

    def done(self) -> bool:
        return self.pos == len(self.data)


def _w_str8(s: str, lo: int = 0, hi: int = 255, what: str = "string") -> bytes:
    b = s.encode("utf-8")
    if not lo <= len(b) <= hi:
        raise E2EEError(INVALID_ARGUMENT, f"{what}: {len(b)} bytes not in {lo}..{hi}")
    return bytes([len(b)]) + b


def _w_str16(s: str, what: str = "string") -> bytes:
    b = s.encode("utf-8")
    if len(b) > 0xFFFF:
        raise E2EEError(INVALID_ARGUMENT, f"{what}: longer than 65535 bytes")
    return struct.pack(">H", len(b)) + b


def _check(cond: bool, code: str, detail: str) -> None:
    if not cond:
        raise E2EEError(code, detail)


def encode_fields(f: Fields) -> bytes:
    A = INVALID_ARGUMENT
    if isinstance(f, CallInvite):
        _check(len(f.call_id) == 16, A, "call_id must be 16 bytes")
        _check(1 <= f.ring_timeout_s <= 3600, A, "ring_timeout_s not in 1..3600")
        _check(len(f.participants) <= 255 and len(f.headers) <= 255, A, "too many participants/headers")
        names = [n.encode("utf-8") for n, _ in f.headers]
        _check(all(a < b for a, b in zip(names, names[1:])), A, "header names not strictly increasing")
        out = f.call_id + _w_str8(f.caller_handle, 1, 255, "caller_handle") + _w_str8(f.display_name, 0, 255, "display_name")
        out += bytes([1 if f.has_video else 0]) + struct.pack(">H", f.ring_timeout_s)
        out += bytes([len(f.participants)]) + b"".join(_w_str8(p, 1, 255, "participant") for p in f.participants)
        out += bytes([len(f.headers)])
        out += b"".join(_w_str8(n, 1, 255, "header name") + _w_str16(v, "header value") for n, v in f.headers)
        return out
    if isinstance(f, CallCancel):
        _check(len(f.call_id) == 16, A, "call_id must be 16 bytes")
        _check(f.reason in CANCEL_REASONS, A, "reason not in 1..3")
        return f.call_id + bytes([f.reason])
    if isinstance(f, Text):
        return _w_str8(f.thread_id, what="thread_id") + _w_str8(f.title, what="title") + _w_str16(f.body, "body")
    if isinstance(f, Receipt):
        _check(1 <= len(f.message_ids) <= 255, A, "receipt count not in 1..255")
        _check(all(len(m) == 16 for m in f.message_ids), A, "receipt message ids must be 16 bytes")
        return bytes([len(f.message_ids)]) + b"".join(f.message_ids)
    if isinstance(f, UnknownKind):
        _check(0x05 <= f.kind <= 0xFE, A, "kind 0x00 and 0xFF are invalid")
        return f.raw
    raise E2EEError(A, f"unknown fields type {type(f)!r}")


def decode_fields(kind: int, raw: bytes) -> Fields:
    r = _Reader(raw)
    if kind == KIND_CALL_INVITE:
        call_id = r.take(16)
        caller_handle = r.str8(1, 255)
        display_name = r.str8(0, 255)
        flags = r.u8()
        _check(flags & 0xFE == 0, MALFORMED_MESSAGE, "reserved flag bits set")
        ring = r.u16()
        _check(1 <= ring <= 3600, MALFORMED_MESSAGE, "ring_timeout_s not in 1..3600")
        participants = [r.str8(1, 255) for _ in range(r.u8())]
        headers, prev = [], None
        for _ in range(r.u8()):
            name = r.str8(1, 255)
            value = r.str16()
            nb = name.encode("utf-8")
            _check(prev is None or prev < nb, MALFORMED_MESSAGE, "header names not strictly increasing")
            prev = nb
            headers.append((name, value))
        f: Fields = CallInvite(call_id, caller_handle, display_name, bool(flags & 1), ring, participants, headers)
    elif kind == KIND_CALL_CANCEL:
        call_id = r.take(16)
        reason = r.u8()
        _check(reason in CANCEL_REASONS, MALFORMED_MESSAGE, "invalid cancel reason")
        f = CallCancel(call_id, reason)
    elif kind == KIND_TEXT:
        f = Text(r.str8(), r.str8(), r.str16())
    elif kind == KIND_RECEIPT:
        count = r.u8()
        _check(count >= 1, MALFORMED_MESSAGE, "receipt count 0")
        f = Receipt([r.take(16) for _ in range(count)])
    elif kind in (0x00, 0xFF):
        raise E2EEError(MALFORMED_MESSAGE, f"invalid kind 0x{kind:02x}")
    else:
        return UnknownKind(kind, raw)
    _check(r.done(), MALFORMED_MESSAGE, "trailing bytes inside fields")
    return f


def encode_signed_part(m: InnerMessage) -> bytes:
    _check(len(m.message_id) == 16, INVALID_ARGUMENT, "message_id must be 16 bytes")
    _check(0 <= m.sent_at_ms < 1 << 64, INVALID_ARGUMENT, "sent_at_ms out of u64 range")
    _check(len(m.sender_signing_key_id) == 8, INVALID_ARGUMENT, "sender_signing_key_id must be 8 bytes")
    fields = encode_fields(m.fields)
    _check(len(fields) <= 0xFFFF, INVALID_ARGUMENT, "fields longer than 65535 bytes")
    return (bytes([m.kind]) + m.message_id + struct.pack(">Q", m.sent_at_ms)
            + _w_str8(m.sender_user_id, 1, 64, "sender_user_id") + m.sender_signing_key_id
            + struct.pack(">H", len(fields)) + fields)


def decode_signed_part(data: bytes) -> InnerMessage:
    r = _Reader(data)
    kind = r.u8()
    _check(kind not in (0x00, 0xFF), MALFORMED_MESSAGE, f"invalid kind 0x{kind:02x}")
    message_id = r.take(16)
    sent_at_ms = r.u64()
    sender_user_id = r.str8(1, 64)
    sender_signing_key_id = r.take(8)
    fields_raw = r.take(r.u16())
    _check(r.done(), MALFORMED_MESSAGE, "trailing bytes after fields")
    return InnerMessage(message_id, sent_at_ms, sender_user_id, sender_signing_key_id, decode_fields(kind, fields_raw))


# ---------------------------------------------------------------------------------------------------------
# Strict Ed25519 verification (§9 step 5: reject non-canonical signatures and small-order keys, as libsodium)

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _ed_decompress(b: bytes) -> Optional[Tuple[int, int, int, int]]:
    """Decode an Edwards point (extended coordinates) or None; non-canonical y is refused."""
    y = int.from_bytes(b, "little") & ((1 << 255) - 1)
    sign = b[31] >> 7
    if y >= _P:
        return None
    u, v = (y * y - 1) % _P, (_D * y * y + 1) % _P
    x = (u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P)) % _P
    if (v * x * x - u) % _P != 0:
        x = (x * _SQRT_M1) % _P
        if (v * x * x - u) % _P != 0:
            return None
    if x == 0 and sign:
        return None
    if x & 1 != sign:
        x = _P - x
    return (x, y, 1, (x * y) % _P)


def _ed_double(pt: Tuple[int, int, int, int]) -> Tuple[int, int, int, int]:
    x1, y1, z1, _ = pt
    a, b, c = x1 * x1 % _P, y1 * y1 % _P, 2 * z1 * z1 % _P
    h = (a + b) % _P
    e = (h - (x1 + y1) * (x1 + y1)) % _P
    g = (a - b) % _P
    f = (c + g) % _P
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _ed_small_order(b: bytes) -> bool:
    pt = _ed_decompress(b)
    if pt is None:
        return True  # undecodable: treat as unusable
    for _ in range(3):
        pt = _ed_double(pt)
    x, y, z, _ = pt
    return x % _P == 0 and (y - z) % _P == 0


def ed25519_verify_strict(public_key: bytes, signature: bytes, message: bytes) -> bool:
    if len(public_key) != 32 or len(signature) != 64:
        return False
    if int.from_bytes(signature[32:], "little") >= _L:  # non-canonical S
        return False
    if _ed_decompress(public_key) is None or _ed_small_order(public_key):
        return False
    if _ed_decompress(signature[:32]) is None or _ed_small_order(signature[:32]):
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
        return True
    except (InvalidSignature, ValueError):
        return False


# ---------------------------------------------------------------------------------------------------------
# Body (§4)


def make_body(envelope: bytes) -> bytes:
    return BODY_PREFIX + base64.b64encode(envelope) + BODY_SUFFIX


_B64_RE = re.compile(rb"\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z")


def strict_b64decode(s: str) -> bytes:
    raw = s.encode("ascii", errors="strict") if s.isascii() else None
    if raw is None or not _B64_RE.match(raw):
        raise E2EEError(MALFORMED_ENVELOPE, "bad base64")
    try:
        out = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise E2EEError(MALFORMED_ENVELOPE, "bad base64") from exc
    if base64.b64encode(out) != raw:  # non-zero unused bits: non-canonical encoding
        raise E2EEError(MALFORMED_ENVELOPE, "non-canonical base64")
    return out


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def _object_pairs(pairs):
    keys = [k for k, _ in pairs]
    if keys.count("e2ee") > 1:
        raise ValueError('duplicate "e2ee" key')
    return dict(pairs)


def envelope_from_body(body: bytes) -> bytes:
    if len(body) > MAX_BODY:
        raise E2EEError(TOO_LARGE, f"body of {len(body)} bytes > {MAX_BODY}")
    try:
        obj = json.loads(body.decode("utf-8", errors="strict"),
                         parse_constant=_reject_constant, object_pairs_hook=_object_pairs)
    except (UnicodeDecodeError, ValueError) as exc:
        raise E2EEError(MALFORMED_ENVELOPE, "body is not JSON") from exc
    if not isinstance(obj, dict):
        raise E2EEError(MALFORMED_ENVELOPE, "body is not a JSON object")
    if "e2ee" not in obj:
        raise E2EEError(FOREIGN_PAYLOAD, 'no "e2ee" key')
    if not isinstance(obj["e2ee"], str):
        raise E2EEError(MALFORMED_ENVELOPE, '"e2ee" is not a string')
    return strict_b64decode(obj["e2ee"])


# ---------------------------------------------------------------------------------------------------------
# Seal (§8)


@dataclass
class SealResult:
    body: bytes
    envelope: bytes
    enc: bytes
    bucket: int
    intermediates: Dict[str, object]


def seal(message: InnerMessage, recipient_public_key: bytes, signing_seed: bytes,
         ephemeral_secret: bytes, suite: Suite = CLASSICAL,
         recipient_key_id: Optional[bytes] = None) -> SealResult:
    """Seal `message` to `recipient_public_key` of `suite` with the given encapsulation randomness
    (deterministic): the ephemeral X25519 secret (suite 1) or X-Wing's 64-byte encapsulation seed (suite 2)."""
    _check(len(recipient_public_key) == suite.n_pk and len(signing_seed) == 32,
           INVALID_KEY, f"a {suite.name} public key is {suite.n_pk} bytes, a signing seed 32")
    # A given recipient_key_id builds a mislabelled envelope (negative vectors only).
    kid = recipient_key_id or key_id(recipient_public_key, suite.alg)
    info = hpke_info(kid, suite)
    if suite is XWING:
        import xwing
        shared_secret, enc = xwing.encapsulate(recipient_public_key, ephemeral_secret)
    else:
        _check(len(ephemeral_secret) == 32, INVALID_KEY, "the ephemeral X25519 secret is 32 bytes")
        shared_secret, enc = dhkem_encap(recipient_public_key, ephemeral_secret)
    ks = key_schedule_base(shared_secret, info, suite)
    header = bytes([VERSION]) + struct.pack(">H", suite.id) + kid + enc
    assert len(header) == suite.header_len
    signed_part = encode_signed_part(message)
    sig_input = SIG_LABEL + header + signed_part
    signature = Ed25519PrivateKey.from_private_bytes(signing_seed).sign(sig_input)
    inner = signed_part + signature
    padded = pad(inner, suite)
    nonce = ks["base_nonce"]  # sequence number 0: base_nonce XOR 0
    ciphertext = _aead(suite, ks["key"]).encrypt(nonce, padded, header)
    envelope = header + ciphertext
    body = make_body(envelope)
    intermediates = {
        "ephemeral_secret": ephemeral_secret, "ephemeral_public": enc, "enc": enc,
        "recipient_key_id": kid, "info": info, "shared_secret": shared_secret,
        "key": ks["key"], "base_nonce": ks["base_nonce"], "header": header,
        "signed_part": signed_part, "signature_input": sig_input, "signature": signature,
        "inner": inner, "padded": padded, "ciphertext": ciphertext, "envelope": envelope,
    }
    return SealResult(body, envelope, enc, len(padded), intermediates)


# ---------------------------------------------------------------------------------------------------------
# Open (§9)


@dataclass
class Opened:
    message: InnerMessage
    header: bytes
    recipient_key_id: bytes
    enc: bytes
    bucket: int
    sender_public_key: bytes


def open_envelope(envelope: bytes, device_keys: Mapping[bytes, object],
                  contacts: Mapping[Tuple[str, bytes], bytes], now_ms: Optional[int] = None) -> Opened:
    """device_keys: key id -> X25519 secret, or (secret, expires_at_ms or None), or (secret, expires_at_ms or
    None, suite id) for a key of another suite (an X-Wing key's secret is its 32-byte seed); contacts:
    (user_id, signing key id) -> Ed25519 public key (see contacts_from_lists). With now_ms, a key whose
    expires_at_ms is at or before now_ms is unusable (§5 step 7)."""
    # §5, in order, stopping at the first failure.
    if len(envelope) == 0:
        raise E2EEError(MALFORMED_ENVELOPE, "empty envelope")
    if envelope[0] != VERSION:
        raise E2EEError(UNSUPPORTED_VERSION, f"version {envelope[0]}")
    if len(envelope) < 3:
        raise E2EEError(MALFORMED_ENVELOPE, "truncated header")
    suite_id = struct.unpack(">H", envelope[1:3])[0]
    suite = SUITES.get(suite_id)
    if suite is None:
        raise E2EEError(UNSUPPORTED_SUITE, f"suite 0x{suite_id:04x}")
    if len(envelope) < suite.header_len:
        raise E2EEError(MALFORMED_ENVELOPE, "truncated header")
    header, ciphertext = envelope[:suite.header_len], envelope[suite.header_len:]
    if len(ciphertext) - TAG_LEN not in suite.buckets:
        raise E2EEError(MALFORMED_ENVELOPE, f"ciphertext length {len(ciphertext)} is not a {suite.name} bucket + 16")
    kid, enc = header[3:11], header[11:]
    entry = device_keys.get(kid)
    if entry is None:
        raise E2EEError(UNKNOWN_RECIPIENT_KEY, kid.hex())
    if isinstance(entry, tuple):
        sk_r, expires, key_suite = (entry + (SUITE,))[:3] if len(entry) == 2 else entry
    else:
        sk_r, expires, key_suite = entry, None, SUITE
    if key_suite != suite.id:
        raise E2EEError(UNKNOWN_RECIPIENT_KEY, f"{kid.hex()} is a key of suite 0x{key_suite:04x}")
    if expires is not None and (now_ms is None or expires <= now_ms):
        raise E2EEError(UNKNOWN_RECIPIENT_KEY, f"{kid.hex()} expired at {expires}")
    # §9 step 2: every decryption failure is open-failed.
    if suite is XWING:
        import xwing
        shared_secret = xwing.decapsulate(sk_r, enc)  # implicit rejection: a wrong enc gives another secret
    else:
        shared_secret = dhkem_decap(enc, sk_r)  # raises open-failed on an all-zero DH
    ks = key_schedule_base(shared_secret, hpke_info(kid, suite), suite)
    try:
        padded = _aead(suite, ks["key"]).decrypt(ks["base_nonce"], ciphertext, header)
    except InvalidTag as exc:
        raise E2EEError(OPEN_FAILED, "AEAD open failed") from exc
    # §9 step 3.
    inner = unpad(padded)
    if len(inner) < SIG_LEN:
        raise E2EEError(MALFORMED_MESSAGE, "shorter than a signature")
    signed_part, signature = inner[:-SIG_LEN], inner[-SIG_LEN:]
    message = decode_signed_part(signed_part)
    # §9 steps 4-5.
    pk = contacts.get((message.sender_user_id, message.sender_signing_key_id))
    if pk is None:
        raise E2EEError(UNKNOWN_SENDER, f"{message.sender_user_id}/{message.sender_signing_key_id.hex()}")
    if not ed25519_verify_strict(pk, signature, SIG_LABEL + header + signed_part):
        raise E2EEError(BAD_SIGNATURE)
    return Opened(message, header, kid, enc, len(padded), pk)


def open_body(body: bytes, device_keys: Mapping[bytes, object],
              contacts: Mapping[Tuple[str, bytes], bytes], now_ms: Optional[int] = None) -> Opened:
    return open_envelope(envelope_from_body(body), device_keys, contacts, now_ms)


# ---------------------------------------------------------------------------------------------------------
# Device lists (§11): well-formedness, certificates, list signature, pins, fingerprint, device requests

KEY_FILE = "key-file"
DEVICE_NOT_SIGNED_IN = "device-not-signed-in"
BAD_LIST_SIGNATURE = "bad-list-signature"
SIGNING_KEY_CHANGED = "signing-key-changed"
LIST_ROLLBACK = "list-rollback"
LIST_VERSION_REUSED = "list-version-reused"

LIST_FORMAT = "e2ee-device-list"
REQUEST_FORMAT = "e2ee-device-request"
LIST_FORMAT_VERSION = 2
LIST_FORMAT_VERSION_SUITES = 3
CERT_LABEL = b"e2ee-push/device-cert/v1\x00"
LIST_LABEL = b"e2ee-push/device-list/v1\x00"
LIST_LABEL_SUITES = b"e2ee-push/device-list/v3\x00"
REQUEST_LABEL_SUITES = b"e2ee-push/device-request/v3\x00"
FINGERPRINT_LABEL = b"e2ee-push/fingerprint/v1\x00"
REQUEST_LABEL = b"e2ee-push/device-request/v1\x00"
MAX_JSON_INT = 2**53 - 1
MAX_DEVICES = 16
MAX_DEVICE_KEYS = 16
_DEVICE_ID_RE = re.compile(r"\A[a-z0-9._-]{1,32}\Z")
_HEX_RE = re.compile(r"\A[0-9a-fA-F]*\Z")


@dataclass
class ListedKey:
    public_key: bytes
    key_id: bytes
    created_at_ms: int
    retired_at_ms: Optional[int]
    expires_at_ms: Optional[int]
    suite: int = SUITE


@dataclass
class Device:
    device_id: str
    signing_key: bytes
    signing_key_id: bytes
    signed_in_at_ms: int
    certificate: bytes
    device_keys: List[ListedKey]
    push: Optional[Dict[str, str]]

    @property
    def current_key(self) -> ListedKey:
        return self.device_keys[-1]


@dataclass
class DeviceList:
    user_id: str
    display_name: str
    user_signing_key: bytes
    user_signing_key_id: bytes
    list_version: int
    issued_at_ms: int
    devices: List[Device]
    signature: bytes
    version: int = LIST_FORMAT_VERSION


@dataclass
class DeviceRequest:
    user_id: str
    device_id: str
    signing_key: bytes
    signing_key_id: bytes
    device_keys: List[ListedKey]
    push: Optional[Dict[str, str]]
    created_at_ms: int
    proof: bytes
    version: int = LIST_FORMAT_VERSION


def _kf(cond: bool, rule: str) -> None:
    """§11.1: a list that breaks a rule is `key-file`, saying which rule."""
    if not cond:
        raise E2EEError(KEY_FILE, rule)


def _no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate key in a JSON object")
    return dict(pairs)


def _load_json(text: Union[str, bytes], what: str) -> Dict[str, object]:
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="strict")
        obj = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys)
    except (UnicodeDecodeError, ValueError) as exc:
        raise E2EEError(KEY_FILE, f"{what} is not JSON: {exc}") from exc
    _kf(isinstance(obj, dict), f"{what} is not a JSON object")
    return obj  # type: ignore[return-value]


def _int(obj: Mapping[str, object], name: str, lo: int, where: str) -> int:
    """§11.1: an integer value; 1, 1.0 and 1e0 are the same number (list_tbs carries the value, not the text)."""
    v = obj.get(name)
    if isinstance(v, float) and v.is_integer() and abs(v) <= MAX_JSON_INT:
        v = int(v)
    _kf(isinstance(v, int) and not isinstance(v, bool), f"{where}{name} is missing or not an integer")
    _kf(lo <= v <= MAX_JSON_INT, f"{where}{name} = {v} not in {lo}..2^53-1")  # type: ignore[operator]
    return v  # type: ignore[return-value]


def _opt_int(obj: Mapping[str, object], name: str, where: str) -> Optional[int]:
    return _int(obj, name, 0, where) if name in obj else None


def _str(obj: Mapping[str, object], name: str, lo: int, hi: int, where: str) -> str:
    v = obj.get(name)
    _kf(isinstance(v, str), f"{where}{name} is missing or not a string")
    n = len(v.encode("utf-8", errors="surrogatepass"))  # type: ignore[union-attr]
    try:
        v.encode("utf-8")  # type: ignore[union-attr]
    except UnicodeEncodeError:
        _kf(False, f"{where}{name} is not valid UTF-8")
    _kf(lo <= n <= hi, f"{where}{name}: {n} bytes not in {lo}..{hi}")
    return v  # type: ignore[return-value]


def _hex(obj: Mapping[str, object], name: str, length: int, where: str) -> bytes:
    v = obj.get(name)
    _kf(isinstance(v, str) and _HEX_RE.match(v) is not None and len(v) == 2 * length,
        f"{where}{name} is not {2 * length} hex digits")
    return bytes.fromhex(v)  # type: ignore[arg-type]


_SERVICE_RE = re.compile(r"\A[a-z0-9-]{1,32}\Z")
_ADDRESS_RE = re.compile(r"\A[\x21-\x7e]{1,4096}\Z")


def _apns_address(address: str, where: str) -> None:
    """§11.1: an apns address is <topic>/<device token>."""
    topic, slash, token = address.partition("/")
    _kf(slash == "/", f"{where}push.address is not <topic>/<device token>")
    _kf(1 <= len(topic.encode()) <= 255, f"{where}push.address: the topic is not 1-255 bytes")
    _kf(_HEX_RE.match(token) is not None and 64 <= len(token) <= 200 and len(token) % 2 == 0,
        f"{where}push.address: the device token is not an even number of 64-200 hex digits")


def _push(obj: Mapping[str, object], where: str) -> Optional[Dict[str, str]]:
    """§11.1: {"service", "address"}; the legacy {"device_token", "topic"} is read as an apns address."""
    if "push" not in obj:
        return None
    p = obj["push"]
    _kf(isinstance(p, dict), f"{where}push is not an object")
    current = "service" in p or "address" in p  # type: ignore[operator]
    legacy = "device_token" in p or "topic" in p  # type: ignore[operator]
    _kf(not (current and legacy), f"{where}push has both service/address and the legacy device_token/topic")
    if legacy:
        token, topic = p.get("device_token"), p.get("topic")  # type: ignore[union-attr]
        _kf(isinstance(token, str) and isinstance(topic, str), f"{where}push.device_token/topic are not strings")
        service, address = "apns", f"{topic}/{token}"
    else:
        service, address = p.get("service"), p.get("address")  # type: ignore[union-attr]
        _kf(isinstance(service, str) and _SERVICE_RE.match(service) is not None,
            f"{where}push.service is not 1-32 bytes of a-z, 0-9 and '-'")
    _kf(isinstance(address, str) and _ADDRESS_RE.match(address) is not None,
        f"{where}push.address is not 1-4096 bytes of printable ASCII without spaces")
    if service == "apns":
        _apns_address(address, where)  # type: ignore[arg-type]
    return {"service": service, "address": address}  # type: ignore[dict-item]


def _device_id(obj: Mapping[str, object], where: str) -> str:
    v = obj.get("device_id")
    _kf(isinstance(v, str) and _DEVICE_ID_RE.match(v) is not None,
        f"{where}device_id is not 1-32 characters of a-z 0-9 - _ .")
    return v  # type: ignore[return-value]


def _device_keys(obj: Mapping[str, object], where: str) -> List[ListedKey]:
    arr = obj.get("device_keys")
    _kf(isinstance(arr, list) and 1 <= len(arr) <= MAX_DEVICE_KEYS,  # type: ignore[arg-type]
        f"{where}device_keys is not an array of 1-{MAX_DEVICE_KEYS} keys")
    keys: List[ListedKey] = []
    for i, k in enumerate(arr):  # type: ignore[arg-type]
        w = f"{where}device_keys[{i}]."
        _kf(isinstance(k, dict), f"{w[:-1]} is not an object")
        suite_id = _int(k, "suite", 1, w) if "suite" in k else SUITE
        _kf(suite_id in SUITES, f"{w}suite {suite_id} is not a suite this reader speaks")
        suite = SUITES[suite_id]
        pk = _hex(k, "public_key", suite.n_pk, w)
        kid = _hex(k, "key_id", 8, w)
        _kf(kid == key_id(pk, suite.alg), f"{w}key_id is not the key id of public_key")
        created = _int(k, "created_at_ms", 0, w)
        retired = _opt_int(k, "retired_at_ms", w)
        expires = _opt_int(k, "expires_at_ms", w)
        keys.append(ListedKey(pk, kid, created, retired, expires, suite_id))
    current = [i for i, k in enumerate(keys) if k.retired_at_ms is None]
    _kf(len(current) == 1, f"{where}device_keys: {len(current)} keys without retired_at_ms, exactly one is current")
    _kf(current[0] == len(keys) - 1, f"{where}device_keys: the current key is not the last entry")
    _kf(keys[-1].expires_at_ms is None, f"{where}device_keys: the current key has expires_at_ms")
    for i, k in enumerate(keys[:-1]):
        _kf(k.expires_at_ms is not None, f"{where}device_keys[{i}]: a retired key without expires_at_ms")
        _kf(k.expires_at_ms >= k.retired_at_ms,  # type: ignore[operator]
            f"{where}device_keys[{i}]: expires_at_ms before retired_at_ms")
    return keys


def parse_device_list(text: Union[str, bytes]) -> DeviceList:
    """§11.1 well-formedness only (no signature checked): raises key-file naming the rule."""
    o = _load_json(text, "device list")
    if o.get("version") == 1 and "format" not in o:
        raise E2EEError(KEY_FILE, "a version-1 single-device contact card, not a device list (version 2)")
    _kf(o.get("format") == LIST_FORMAT, f'format is not "{LIST_FORMAT}"')
    version = o.get("version")
    _kf(version in (LIST_FORMAT_VERSION, LIST_FORMAT_VERSION_SUITES) and not isinstance(version, bool),
        f"version is not {LIST_FORMAT_VERSION} or {LIST_FORMAT_VERSION_SUITES}")
    user_id = _str(o, "user_id", 1, 64, "")
    display_name = _str(o, "display_name", 0, 255, "")
    usk = _hex(o, "user_signing_key", 32, "")
    usk_id = _hex(o, "user_signing_key_id", 8, "")
    _kf(usk_id == key_id(usk, ALG_ED25519), "user_signing_key_id is not the key id of user_signing_key")
    list_version = _int(o, "list_version", 1, "")
    issued = _int(o, "issued_at_ms", 0, "")
    signature = _hex(o, "signature", 64, "")
    arr = o.get("devices")
    _kf(isinstance(arr, list) and 1 <= len(arr) <= MAX_DEVICES,  # type: ignore[arg-type]
        f"devices is not an array of 1-{MAX_DEVICES} devices")
    devices: List[Device] = []
    for i, d in enumerate(arr):  # type: ignore[arg-type]
        w = f"devices[{i}]."
        _kf(isinstance(d, dict), f"devices[{i}] is not an object")
        device_id = _device_id(d, w)
        sk = _hex(d, "signing_key", 32, w)
        sk_id = _hex(d, "signing_key_id", 8, w)
        _kf(sk_id == key_id(sk, ALG_ED25519), f"{w}signing_key_id is not the key id of signing_key")
        signed_in = _int(d, "signed_in_at_ms", 0, w)
        cert = _hex(d, "certificate", 64, w)
        devices.append(Device(device_id, sk, sk_id, signed_in, cert, _device_keys(d, w), _push(d, w)))
    ids = [d.device_id for d in devices]
    _kf(len(set(ids)) == len(ids), "a device_id appears twice")
    sk_ids = [d.signing_key_id for d in devices]
    _kf(len(set(sk_ids)) == len(sk_ids), "a device signing key id appears twice")
    _kf(usk_id not in sk_ids, "a device signing key id equals user_signing_key_id")
    x_ids = [k.key_id for d in devices for k in d.device_keys]
    _kf(len(set(x_ids)) == len(x_ids), "a device key id appears twice in the list")
    _kf(version == LIST_FORMAT_VERSION_SUITES or all(k.suite == SUITE for d in devices for k in d.device_keys),
        "a version-2 list holds suite-1 device keys only")
    return DeviceList(user_id, display_name, usk, usk_id, list_version, issued, devices, signature,
                      version)  # type: ignore[arg-type]


def _str8(s: str) -> bytes:
    b = s.encode("utf-8")
    assert len(b) <= 255
    return bytes([len(b)]) + b


def certificate_message(user_id: str, device_id: str, device_signing_key: bytes, signed_in_at_ms: int) -> bytes:
    """§11.2: the bytes the user signing key signs to sign a device in."""
    return (CERT_LABEL + _str8(user_id) + _str8(device_id) + device_signing_key
            + struct.pack(">Q", signed_in_at_ms))


def list_tbs(lst: DeviceList) -> bytes:
    """§11.3 list_tbs (without the label); version 3 starts with 0x00 0x03 and gives each key's suite."""
    suites = lst.version == LIST_FORMAT_VERSION_SUITES
    out = b"\x00\x03" if suites else b""
    out += (_str8(lst.user_id) + _str8(lst.display_name) + lst.user_signing_key
            + struct.pack(">QQB", lst.list_version, lst.issued_at_ms, len(lst.devices)))
    for d in lst.devices:
        out += _str8(d.device_id) + d.signing_key + struct.pack(">Q", d.signed_in_at_ms) + d.certificate
        out += bytes([len(d.device_keys)])
        for k in d.device_keys:
            out += struct.pack(">H", k.suite) if suites else b""
            out += k.public_key + struct.pack(">QQQ", k.created_at_ms, k.retired_at_ms or 0, k.expires_at_ms or 0)
    return out


def list_signature_message(lst: DeviceList) -> bytes:
    return (LIST_LABEL_SUITES if lst.version == LIST_FORMAT_VERSION_SUITES else LIST_LABEL) + list_tbs(lst)


def list_digest(lst: DeviceList) -> bytes:
    """§11.5: SHA-256 of list_tbs, what a pin remembers."""
    return hashlib.sha256(list_tbs(lst)).digest()


def verify_device_list(lst: DeviceList) -> None:
    """§11.4 steps 2-3 (step 1 is parse_device_list)."""
    for d in lst.devices:
        msg = certificate_message(lst.user_id, d.device_id, d.signing_key, d.signed_in_at_ms)
        if not ed25519_verify_strict(lst.user_signing_key, d.certificate, msg):
            raise E2EEError(DEVICE_NOT_SIGNED_IN, f"device {d.device_id!r} has no valid certificate")
    if not ed25519_verify_strict(lst.user_signing_key, lst.signature, list_signature_message(lst)):
        raise E2EEError(BAD_LIST_SIGNATURE, "the list signature does not verify under user_signing_key")


def load_device_list(text: Union[str, bytes]) -> DeviceList:
    """§11.4 in order: well-formedness, certificates, list signature."""
    lst = parse_device_list(text)
    verify_device_list(lst)
    return lst


@dataclass
class Pin:
    user_signing_key: bytes
    list_version: int
    list_digest: bytes


def check_pin(lst: DeviceList, pin: Optional[Pin]) -> str:
    """§11.5 on a verified list: "first-use", "unchanged" or "newer"; raises the §11.5 codes."""
    if pin is None:
        return "first-use"
    if lst.user_signing_key != pin.user_signing_key:
        raise E2EEError(SIGNING_KEY_CHANGED, "the list is signed by another user signing key than the pinned one")
    if lst.list_version < pin.list_version:
        raise E2EEError(LIST_ROLLBACK, f"list_version {lst.list_version} < pinned {pin.list_version}")
    if lst.list_version == pin.list_version:
        if list_digest(lst) != pin.list_digest:
            raise E2EEError(LIST_VERSION_REUSED, f"list_version {lst.list_version} pinned with other content")
        return "unchanged"
    return "newer"


def fingerprint(user_id: str, user_signing_key: bytes) -> str:
    """§11.6: 20 lowercase hex digits in five groups of four."""
    h = hashlib.sha256(FINGERPRINT_LABEL + _str8(user_id) + user_signing_key).digest()[:10].hex()
    return " ".join(h[i:i + 4] for i in range(0, 20, 4))


def contacts_from_lists(lists: List[DeviceList]) -> Dict[Tuple[str, bytes], bytes]:
    """§9 step 4: (user id, device signing key id) -> device signing key, over verified lists."""
    return {(lst.user_id, d.signing_key_id): d.signing_key for lst in lists for d in lst.devices}


def request_proof_message(user_id: str, device_id: str, device_signing_key: bytes,
                          keys: List[ListedKey], version: int = LIST_FORMAT_VERSION) -> bytes:
    """§11.8: the bytes the new device's signing key signs (version 3: its own label, each key's suite)."""
    suites = version == LIST_FORMAT_VERSION_SUITES
    out = ((REQUEST_LABEL_SUITES if suites else REQUEST_LABEL) + _str8(user_id) + _str8(device_id)
           + device_signing_key + bytes([len(keys)]))
    return out + b"".join((struct.pack(">H", k.suite) if suites else b"") + k.public_key
                          + struct.pack(">Q", k.created_at_ms) for k in keys)


def load_device_request(text: Union[str, bytes]) -> DeviceRequest:
    """§11.8: well-formedness (key-file) then the proof."""
    o = _load_json(text, "device request")
    _kf(o.get("format") == REQUEST_FORMAT, f'format is not "{REQUEST_FORMAT}"')
    version = o.get("version")
    _kf(version in (LIST_FORMAT_VERSION, LIST_FORMAT_VERSION_SUITES) and not isinstance(version, bool),
        f"version is not {LIST_FORMAT_VERSION} or {LIST_FORMAT_VERSION_SUITES}")
    user_id = _str(o, "user_id", 1, 64, "")
    device_id = _device_id(o, "")
    sk = _hex(o, "signing_key", 32, "")
    sk_id = _hex(o, "signing_key_id", 8, "")
    _kf(sk_id == key_id(sk, ALG_ED25519), "signing_key_id is not the key id of signing_key")
    keys = _device_keys(o, "")
    all_classical = all(k.suite == SUITE for k in keys)
    _kf(all_classical == (version == LIST_FORMAT_VERSION),
        "a version-2 request has suite-1 keys only, a version-3 request a key of another suite")
    created = _int(o, "created_at_ms", 0, "")
    proof_hex = o.get("proof")
    _kf(isinstance(proof_hex, str) and _HEX_RE.match(proof_hex) is not None and len(proof_hex) % 2 == 0,
        "proof is not hex")
    proof = bytes.fromhex(proof_hex)  # type: ignore[arg-type]
    req = DeviceRequest(user_id, device_id, sk, sk_id, keys, _push(o, ""), created, proof,
                        version)  # type: ignore[arg-type]
    # A proof of another length than 64 bytes is a proof that does not verify (§11.8).
    if not ed25519_verify_strict(sk, proof, request_proof_message(user_id, device_id, sk, keys,
                                                                  version)):  # type: ignore[arg-type]
        raise E2EEError(BAD_SIGNATURE, "the proof does not verify under the request's signing_key")
    return req


def parse_pins(text: Union[str, bytes]) -> Dict[str, Pin]:
    """§11.5 pins file: {"version":1,"pins":{"<user id>":{...}}}; anything else is key-file."""
    o = _load_json(text, "pins file")
    _kf(o.get("version") == 1 and not isinstance(o.get("version"), bool), "pins file version is not 1")
    pins = o.get("pins")
    _kf(isinstance(pins, dict), "pins is not an object")
    out: Dict[str, Pin] = {}
    for user_id, p in pins.items():  # type: ignore[union-attr]
        w = f"pins[{user_id!r}]."
        _kf(isinstance(p, dict), f"{w[:-1]} is not an object")
        out[user_id] = Pin(_hex(p, "user_signing_key", 32, w), _int(p, "list_version", 1, w),
                           _hex(p, "list_digest", 32, w))
        _int(p, "pinned_at_ms", 0, w)
    return out

# ---------------------------------------------------------------------------------------------------------
# Helpers for reports


def describe(m: InnerMessage) -> Dict[str, object]:
    f = m.fields
    d: Dict[str, object] = {
        "kind": KIND_NAMES.get(m.kind, f"0x{m.kind:02x}"),
        "message_id": m.message_id.hex(),
        "sent_at_ms": m.sent_at_ms,
        "sender_user_id": m.sender_user_id,
        "sender_signing_key_id": m.sender_signing_key_id.hex(),
    }
    if isinstance(f, CallInvite):
        d.update(call_id=f.call_id.hex(), caller_handle=f.caller_handle, display_name=f.display_name,
                 has_video=f.has_video, ring_timeout_s=f.ring_timeout_s, participants=f.participants,
                 headers=f.headers)
    elif isinstance(f, CallCancel):
        d.update(call_id=f.call_id.hex(), reason=CANCEL_REASONS[f.reason])
    elif isinstance(f, Text):
        d.update(thread_id=f.thread_id, title=f.title, body_bytes=len(f.body.encode("utf-8")))
    elif isinstance(f, Receipt):
        d.update(message_ids=[x.hex() for x in f.message_ids])
    else:
        d.update(raw=f.raw.hex())
    return d


# ---------------------------------------------------------------------------------------------------------
# Worked example of spec §14 (the `call-cancel` vector), printed as Markdown:
#     python3 Tools/independent/e2ee_push.py worked-example


def worked_example_inputs() -> Tuple[InnerMessage, bytes, bytes, bytes]:
    """The §14 inputs, taken from the spec text alone (no fixture needed)."""
    signing_seed = seed("alice/signing-key")
    message = InnerMessage(
        message_id=bytes.fromhex("303132333435363738393a3b3c3d3e3f"),
        sent_at_ms=1790000003000,
        sender_user_id="alice",
        sender_signing_key_id=key_id(ed25519_public(signing_seed), ALG_ED25519),
        fields=CallCancel(call_id=bytes.fromhex("6f1c8a523b1e4c7a9d2e5a4b3c2d1e0f"), reason=2),
    )
    return message, x25519_public(seed("bob/device-key")), signing_seed, seed("ephemeral/2")


def _hex_lines(label: str, value: bytes, width: int = 32, pad_to: int = 0) -> List[str]:
    h = value.hex()
    chunks = [h[i:i + 2 * width] for i in range(0, len(h), 2 * width)] or [""]
    head = label.ljust(pad_to)
    if len(chunks) == 1 and len(head) + len(chunks[0]) <= 110:
        return [f"{head} {chunks[0]}"]
    return [label] + ["    " + c for c in chunks]


def worked_example_markdown() -> str:
    message, pk_r, signing_seed, sk_e = worked_example_inputs()
    s = seal(message, pk_r, signing_seed, sk_e)
    I = s.intermediates
    sp: bytes = I["signed_part"]  # type: ignore[assignment]
    padded: bytes = I["padded"]  # type: ignore[assignment]
    ct: bytes = I["ciphertext"]  # type: ignore[assignment]
    inner_len = len(I["inner"])  # type: ignore[arg-type]
    w = 34
    out: List[str] = []

    def block(title: str, lines: List[str]) -> None:
        out.append(title)
        out.append("")
        out.append("```")
        out.extend(lines)
        out.append("```")
        out.append("")

    block("HPKE (RFC 9180 `SetupBaseS`, mode_base, sequence number 0):", [
        *_hex_lines("skE  ephemeral X25519 secret", sk_e, pad_to=w),
        *_hex_lines("pkE  ephemeral X25519 public", I["ephemeral_public"], pad_to=w),  # type: ignore[arg-type]
        *_hex_lines("enc  (= pkE)", s.enc, pad_to=w),
        *_hex_lines(f"info ({len(I['info'])} bytes)", I["info"], pad_to=w),  # type: ignore[arg-type]
        *_hex_lines("shared_secret", I["shared_secret"], pad_to=w),  # type: ignore[arg-type]
        *_hex_lines("key", I["key"], pad_to=w),  # type: ignore[arg-type]
        *_hex_lines("base_nonce (= nonce of seq 0)", I["base_nonce"], pad_to=w),  # type: ignore[arg-type]
    ])
    block(f"Header = AEAD aad ({len(I['header'])} bytes: version, suite, recipient key id, enc):", [
        *_hex_lines("header", I["header"], pad_to=w),  # type: ignore[arg-type]
    ])
    name = message.sender_user_id.encode()
    fields = sp[-(struct.unpack('>H', sp[-19:-17])[0]):]
    block(f"Signed part ({len(sp)} bytes) and signature:", [
        *_hex_lines("signed_part", sp, pad_to=w),
        "  kind                             " + sp[0:1].hex(),
        "  message_id                       " + sp[1:17].hex(),
        "  sent_at_ms (u64)                 " + sp[17:25].hex(),
        "  sender_user_id (str8)            " + sp[25:26 + len(name)].hex() + f'  ("{message.sender_user_id}")',
        "  sender_signing_key_id            " + sp[26 + len(name):34 + len(name)].hex(),
        "  fields_length (u16)              " + sp[34 + len(name):36 + len(name)].hex(),
        "  fields: call_id || reason        " + fields.hex(),
        f"signature input length             {len(I['signature_input'])} bytes"  # type: ignore[arg-type]
        f" (17 label + 43 header + {len(sp)} signed_part)",
        *_hex_lines("signature (Ed25519)", I["signature"], pad_to=w),  # type: ignore[arg-type]
    ])
    block("Padding (ISO/IEC 7816-4) to the 1,536 bucket:", [
        f"unpadded length                    {inner_len} (signed_part || signature)",
        f"padded length                      {len(padded)}",
        *_hex_lines("padded[0..16]", padded[:16], pad_to=w),
        *_hex_lines(f"padded[{len(padded) - 16}..{len(padded)}]", padded[-16:], pad_to=w),
    ])
    block("Ciphertext (ChaCha20-Poly1305, aad = header), envelope and body:", [
        *_hex_lines(f"ciphertext[0..32] (of {len(ct)})", ct[:32], pad_to=w),
        *_hex_lines("tag (last 16 bytes)", ct[-16:], pad_to=w),
        f"envelope length                    {len(s.envelope)} (43 header + {len(ct)} ciphertext)",
        f"body length                        {len(s.body)} (103 + {len(s.body) - 105} base64 + 2)",
    ])
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["worked-example"]:
        sys.stdout.write(worked_example_markdown())
    else:
        sys.stderr.write("usage: python3 e2ee_push.py worked-example\n")
        raise SystemExit(64)
