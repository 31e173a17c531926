"""Panel passwords as scrypt hashes: ``scrypt$N$r$p$SALT_HEX$KEY_HEX`` (hashlib.scrypt, stdlib).

The configuration stores only these hashes; the panel (issue 6) checks a login against them.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SALT_BYTES = 16
KEY_BYTES = 32
_MAX_N = 2**20  # refuse a stored hash that would take seconds and much memory to check


@dataclass(frozen=True, slots=True)
class PasswordHash:
    n: int
    r: int
    p: int
    salt: bytes
    key: bytes

    def text(self) -> str:
        return f"scrypt${self.n}${self.r}${self.p}${self.salt.hex()}${self.key.hex()}"


def parse_password_hash(text: str) -> PasswordHash:
    """The parts of a stored hash; ValueError saying what is wrong (never echoing the hash)."""
    parts = text.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        raise ValueError("not a scrypt hash of the form scrypt$N$r$p$SALT_HEX$KEY_HEX")
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt, key = bytes.fromhex(parts[4]), bytes.fromhex(parts[5])
    except ValueError:
        raise ValueError("scrypt hash: N, r and p must be integers and salt and key hex") from None
    if n < 2 or n > _MAX_N or n & (n - 1):
        raise ValueError(f"scrypt hash: N must be a power of two from 2 to {_MAX_N}")
    if not 1 <= r <= 32 or not 1 <= p <= 16:
        raise ValueError("scrypt hash: r must be 1..32 and p 1..16")
    if len(salt) < 8 or len(key) < 16:
        raise ValueError("scrypt hash: salt of at least 8 bytes and a key of at least 16 bytes")
    return PasswordHash(n, r, p, salt, key)


def hash_password(password: str, *, n: int = SCRYPT_N) -> str:
    # secrets.token_bytes is os.urandom; the secrets module also loads random (its Mersenne Twister,
    # math, bisect, base64): ~3 ms on every `flushtable config`, which reads hashes and makes none.
    salt = os.urandom(SALT_BYTES)
    key = _derive(password, salt, n, SCRYPT_R, SCRYPT_P, length=KEY_BYTES)
    return PasswordHash(n, SCRYPT_R, SCRYPT_P, salt, key).text()


def check_password(password: str, stored: str) -> bool:
    parsed = parse_password_hash(stored)
    key = _derive(password, parsed.salt, parsed.n, parsed.r, parsed.p, length=len(parsed.key))
    return hmac.compare_digest(key, parsed.key)


def _derive(password: str, salt: bytes, n: int, r: int, p: int, *, length: int) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=length, maxmem=256 * n * r + 2**20
    )
