"""Tags and keys: truncated HMAC-SHA256 and HKDF-SHA256 (RFC 5869), all in the standard library's C code.

No randomness here: nonces are made by the Link's injected ``random_bytes`` so tests can seed them.
"""

from __future__ import annotations

import functools
import hashlib
import hmac

from firmware_protocol.constants import DEVICE_KEY_LEN, KDF_INFO_PREFIX, NONCE_LEN, SESSION_KEY_LEN, TAG_LEN

_SHA256_BLOCK_LEN = 64

DEVICE_ID_INFO = b"flushtable/1 device id"
"""What device_id_for_key hashes before the key (docs/devices.md, "Keys and ids")."""


class _KeyedSha256:
    """HMAC-SHA256 (RFC 2104) with the key's inner and outer hash states computed once.

    hmac.digest() re-derives them for every call, which is half the work for a 40-byte frame; copying
    two hashlib states (all in C) does the same HMAC in about half the time. The tests check it
    against hmac.digest() byte for byte.
    """

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes) -> None:
        if len(key) > _SHA256_BLOCK_LEN:
            key = hashlib.sha256(key).digest()
        padded = key.ljust(_SHA256_BLOCK_LEN, b"\x00")
        self._inner = hashlib.sha256(bytes(byte ^ 0x36 for byte in padded))
        self._outer = hashlib.sha256(bytes(byte ^ 0x5C for byte in padded))

    def digest(self, data: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(data)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()


@functools.lru_cache(maxsize=256)
def _keyed(key: bytes) -> _KeyedSha256:
    return _KeyedSha256(key)


def hmac_sha256(key: bytes, data: bytes) -> bytes:
    """The full 32-byte HMAC-SHA256 of ``data`` under ``key``."""
    return _keyed(key).digest(data)


def compute_tag(key: bytes, signed: bytes) -> bytes:
    """HMAC-SHA256 of ``signed`` (the frame's header and payload), truncated to its first TAG_LEN bytes."""
    return _keyed(key).digest(signed)[:TAG_LEN]


def tag_matches(key: bytes, signed: bytes, tag: bytes) -> bool:
    """Constant-time comparison, so timing tells an attacker nothing about how much of a tag was right."""
    return hmac.compare_digest(_keyed(key).digest(signed)[:TAG_LEN], tag)


def derive_session_key(
    device_key: bytes, controller_nonce: bytes, device_nonce: bytes, device_id: int
) -> bytes:
    """HKDF-SHA256: salt = controller_nonce || device_nonce, IKM = the device key,
    info = KDF_INFO_PREFIX || device_id (4 bytes big-endian), L = 32 (one HMAC block of expand)."""
    if len(controller_nonce) != NONCE_LEN or len(device_nonce) != NONCE_LEN:
        raise ValueError(f"nonces must be {NONCE_LEN} bytes")
    pseudo_random_key = hmac.digest(controller_nonce + device_nonce, device_key, "sha256")
    info = KDF_INFO_PREFIX + device_id.to_bytes(4, "big")
    return hmac.digest(pseudo_random_key, info + b"\x01", "sha256")[:SESSION_KEY_LEN]


def check_device_key(key: bytes, *, what: str = "device key") -> bytes:
    """The key itself, when it is DEVICE_KEY_LEN bytes; ValueError naming ``what`` otherwise."""
    if not isinstance(key, bytes) or len(key) != DEVICE_KEY_LEN:
        raise ValueError(f"{what} must be {DEVICE_KEY_LEN} bytes ({DEVICE_KEY_LEN * 2} hex digits)")
    return key


def device_id_for_key(key: bytes) -> int:
    """The device_id of a device provisioned with ``key`` and no explicit id (docs/devices.md, "Keys and
    ids"): the first four bytes, big-endian, of SHA-256(DEVICE_ID_INFO || key), or 1 if those are zero.
    Both ends use this one function: the controller's drivers to address a device, the simulated
    firmware (and a device maker) to provision it."""
    value = int.from_bytes(hashlib.sha256(DEVICE_ID_INFO + key).digest()[:4], "big")
    return value or 1
