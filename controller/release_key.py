"""The maker's release key as a configuration or a command gives it: an Ed25519 public key in 64 hex
digits. One check, read by the configuration's ``[software] public_key`` (controller/config/sections.py)
and by controller/software/ (`floor verify-software --public-key`, the check at every start). A module of
its own, beside neither: the configuration's check loads nothing of controller/software/ (its
verification, zip and e-mail modules would cost every command that reads a configuration ~47 ms)."""

from __future__ import annotations

ED25519_PUBLIC_KEY_BYTES = 32


def parse_public_key(text: str) -> bytes:
    """The raw Ed25519 public key ``text`` holds in hex (white space around it ignored); a ValueError in
    the words a refusal shows otherwise."""
    try:
        raw = bytes.fromhex(text.strip())
    except ValueError:
        raise ValueError("not hex: the release key's public half is 64 hex digits") from None
    if len(raw) != ED25519_PUBLIC_KEY_BYTES:
        raise ValueError(f"an Ed25519 public key is 32 bytes (64 hex digits), not {len(raw)}")
    return raw
