"""X-Wing (draft-connolly-cfrg-xwing-kem-06): ML-KEM-768 + X25519, as an HPKE KEM (kem_id 0x647a).

Written from the draft alone: key generation from a 32-byte seed, encapsulation from a 64-byte seed (so that
vectors are reproducible byte for byte), decapsulation. ML-KEM-768 (FIPS 203) comes from the pure-Python package
`kyber-py` (its deterministic internal functions), X25519 from `cryptography`.

    keygen(seed)            -> 1,216-byte public key (pk_M 1,184 || pk_X 32)
    encapsulate(pk, eseed)  -> (shared secret 32, ciphertext 1,120 = ct_M 1,088 || ct_X 32)
    decapsulate(seed, ct)   -> shared secret 32
"""

from __future__ import annotations

import hashlib
import sys
from typing import Tuple

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

try:
    from kyber_py.ml_kem import ML_KEM_768
except ImportError:  # pragma: no cover - exercised only without the dependency
    sys.stderr.write(
        "error: the Python package 'kyber-py' is required (ML-KEM-768 for the X-Wing suite).\n"
        "       install it with:  pip install kyber-py\n"
    )
    raise SystemExit(2)

# The draft's label: the ASCII art "\./" "/^\".
XWING_LABEL = bytes.fromhex("5c2e2f2f5e5c")
SEED_LEN, ESEED_LEN = 32, 64
PK_M_LEN, CT_M_LEN = 1184, 1088
PK_LEN, CT_LEN, SS_LEN = PK_M_LEN + 32, CT_M_LEN + 32, 32


def _x25519_base(scalar: bytes) -> bytes:
    return X25519PrivateKey.from_private_bytes(scalar).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _x25519(scalar: bytes, point: bytes) -> bytes:
    # X-Wing does not reject the all-zero output (the ML-KEM secret carries the security); cryptography
    # refuses it, so that case is computed as zero, as the draft's X25519 does.
    try:
        return X25519PrivateKey.from_private_bytes(scalar).exchange(X25519PublicKey.from_public_bytes(point))
    except ValueError:
        return b"\x00" * 32


def _expand(seed: bytes):
    """expandDecapsulationKey: SHAKE-256(seed, 96) = d || z || sk_X; (pk_M, sk_M) = ML-KEM.KeyGen_internal(d, z)."""
    if len(seed) != SEED_LEN:
        raise ValueError("an X-Wing seed is 32 bytes")
    expanded = hashlib.shake_256(seed).digest(96)
    pk_m, sk_m = ML_KEM_768._keygen_internal(expanded[0:32], expanded[32:64])
    sk_x = expanded[64:96]
    return sk_m, sk_x, pk_m, _x25519_base(sk_x)


def _combiner(ss_m: bytes, ss_x: bytes, ct_x: bytes, pk_x: bytes) -> bytes:
    return hashlib.sha3_256(ss_m + ss_x + ct_x + pk_x + XWING_LABEL).digest()


def keygen(seed: bytes) -> bytes:
    _, _, pk_m, pk_x = _expand(seed)
    return pk_m + pk_x


def encapsulate(pk: bytes, eseed: bytes) -> Tuple[bytes, bytes]:
    """EncapsulateDerand(pk, eseed): ML-KEM.Encaps_internal(pk_M, eseed[0:32]), ephemeral X25519 eseed[32:64]."""
    if len(pk) != PK_LEN or len(eseed) != ESEED_LEN:
        raise ValueError("X-Wing encapsulation takes a 1,216-byte key and a 64-byte seed")
    pk_m, pk_x = pk[:PK_M_LEN], pk[PK_M_LEN:]
    ss_m, ct_m = ML_KEM_768._encaps_internal(pk_m, eseed[0:32])
    ek_x = eseed[32:64]
    ct_x = _x25519_base(ek_x)
    ss_x = _x25519(ek_x, pk_x)
    return _combiner(ss_m, ss_x, ct_x, pk_x), ct_m + ct_x


def decapsulate(seed: bytes, ct: bytes) -> bytes:
    if len(ct) != CT_LEN:
        raise ValueError("an X-Wing ciphertext is 1,120 bytes")
    sk_m, sk_x, _, pk_x = _expand(seed)
    ss_m = ML_KEM_768.decaps(sk_m, ct[:CT_M_LEN])  # implicit rejection: never fails on a well-sized ct
    ct_x = ct[CT_M_LEN:]
    return _combiner(ss_m, _x25519(sk_x, ct_x), ct_x, pk_x)
