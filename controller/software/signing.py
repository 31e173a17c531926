"""The maker's Ed25519 key and the manifest's signature: a key made and read, a manifest signed, a signed
manifest read back and its signature checked against the configured public key; and the development
release `make run` signs anew at each start. cryptography loads only where a key is used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller import release_key
from controller.errors import UserError
from controller.software.manifest import (
    MANIFEST_FORMAT,
    MAX_MANIFEST_BYTES,
    SIGNED_FORMAT,
    SoftwareRefused,
    build_manifest,
    canonical,
    product_root,
)


def key_id(public_key: bytes) -> str:
    return hashlib.sha256(public_key).hexdigest()[:16]


def load_private_key(path: Path) -> Any:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - only the maker signs
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: PLC0415

    from controller.files import FileRefused, read_bounded  # noqa: PLC0415

    try:  # bounded, a regular file only (never a FIFO or a device)
        data = read_bounded(path, limit_bytes=64 * 1024)
    except FileRefused as refused:
        raise UserError(f"{refused} (the signing key)") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise UserError(f"{path}: not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UserError(f"{path}: not an Ed25519 key")
    return key


def public_key_hex(private_key: Any) -> str:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    raw: bytes = private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return raw.hex()


def generate_key(path: Path) -> str:
    """A new Ed25519 key in ``path`` (PEM, PKCS#8, mode 0600; refused if the file exists); its public key
    in hex, as ``[software] public_key`` takes it."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: PLC0415

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    from controller.files import check_writable_file  # noqa: PLC0415

    if path.exists() or path.is_symlink():
        raise UserError(f"{path}: exists; a signing key is never overwritten")
    check_writable_file(path, "the signing key")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("xb") as handle:
            path.chmod(0o600)
            handle.write(pem)
    except FileExistsError:
        raise UserError(f"{path}: exists; a signing key is never overwritten") from None
    return public_key_hex(key)


def sign_manifest(manifest: Mapping[str, Any], private_key: Any) -> dict[str, Any]:
    signature: bytes = private_key.sign(canonical(manifest))
    return {
        "format": SIGNED_FORMAT,
        "manifest": dict(manifest),
        "key_id": key_id(bytes.fromhex(public_key_hex(private_key))),
        "signature": signature.hex(),
    }


def parse_public_key(text: str) -> bytes:
    """``[software] public_key``: the raw Ed25519 public key, 64 hex digits (controller/release_key.py,
    the configuration's check too); UserError otherwise."""
    try:
        return release_key.parse_public_key(text)
    except ValueError as error:
        raise UserError(str(error)) from None


def read_signed(path: Path) -> dict[str, Any]:
    from controller.files import FileRefused, read_bounded_text  # noqa: PLC0415

    try:
        text = read_bounded_text(path, limit_bytes=MAX_MANIFEST_BYTES)
    except FileRefused as refused:
        raise SoftwareRefused(f"{refused} (the signed release manifest)") from None
    try:
        signed = json.loads(text)
    except ValueError:
        raise SoftwareRefused(f"{path}: not a signed release manifest (not JSON)") from None
    if (
        not isinstance(signed, dict)
        or signed.get("format") != SIGNED_FORMAT
        or not isinstance(signed.get("manifest"), dict)
        or not isinstance(signed.get("signature"), str)
        or signed["manifest"].get("format") != MANIFEST_FORMAT
        or not isinstance(signed["manifest"].get("files"), dict)
        or not isinstance(signed["manifest"].get("dependencies"), dict)
    ):
        raise SoftwareRefused(f"{path}: not a signed release manifest ({SIGNED_FORMAT})")
    manifest = signed["manifest"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in manifest["files"].items()) or not all(
        isinstance(v, dict) and isinstance(v.get("version"), str) and isinstance(v.get("record_sha256"), str)
        for v in manifest["dependencies"].values()
    ):
        raise SoftwareRefused(
            f"{path}: not a signed release manifest (a file or dependency entry is malformed)"
        )
    return signed


def check_signature(signed: Mapping[str, Any], public_key: bytes, path: Path) -> dict[str, Any]:
    """The manifest, once its signature verifies under ``public_key``."""
    from cryptography.exceptions import InvalidSignature  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey  # noqa: PLC0415

    manifest: dict[str, Any] = signed["manifest"]
    try:
        signature = bytes.fromhex(signed["signature"])
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, canonical(manifest))
    except (ValueError, InvalidSignature):
        other = signed.get("key_id")
        why = (
            f"signed by another key ({other}, not the configured {key_id(public_key)})"
            if isinstance(other, str) and other != key_id(public_key)
            else "its signature does not verify"
        )
        raise SoftwareRefused(f"{path}: the release manifest is refused: {why}") from None
    return manifest


DEV_KEY = "dev-release.key"
DEV_MANIFEST = "dev-release.json"


def make_dev_release(directory: Path) -> tuple[Path, str]:
    """The development release of the checkout that runs (`make run`): the key made once and kept in
    ``directory``, the manifest made and signed anew at each start (the checkout changes between runs).
    Returns the signed manifest's path and the public key (hex)."""
    from controller import __version__  # noqa: PLC0415
    from controller.files import check_writable_file  # noqa: PLC0415

    key_path = directory / DEV_KEY
    out = directory / DEV_MANIFEST
    check_writable_file(out, "--dev-release")  # a directory that takes files, before a key is made there
    if not key_path.exists():
        generate_key(key_path)
    key = load_private_key(key_path)
    manifest = build_manifest(product_root(), release=__version__, development=True)
    temporary = out.with_name(out.name + ".tmp")
    temporary.write_text(json.dumps(sign_manifest(manifest, key), indent=1, sort_keys=True) + "\n", "utf-8")
    temporary.replace(out)
    return out, public_key_hex(key)


# --- seeded verification -----------------------------------------------------------------------------------
