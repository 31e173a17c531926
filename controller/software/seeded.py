"""Seeded verification (docs/operations.md "Software verification"): HMAC-SHA256(seed, bytes) of each
product file as it is on disk, and one aggregate HMAC over the sorted (path, file HMAC) lines; the
floor computes the same from the approved release it holds.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.errors import UserError
from controller.software.manifest import (
    PRODUCT_PACKAGES,
    SKIPPED_DIRS,
    SKIPPED_SUFFIXES,
    product_files,
    product_root,
)


def parse_seed(text: str) -> bytes:
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        raise UserError(f"--seed: not hex: {text[:40]!r}") from None
    if not 8 <= len(seed) <= 64:
        raise UserError(f"--seed: 8 to 64 bytes (16 to 128 hex digits), not {len(seed)}")
    return seed


@dataclass(frozen=True, slots=True)
class SeededDigest:
    aggregate: str
    files: dict[str, str]  # path -> HMAC-SHA256(seed, bytes), hex


def seeded_digests(seed: bytes, files: Iterable[tuple[str, bytes]]) -> SeededDigest:
    per_file = {name: hmac.new(seed, data, hashlib.sha256).hexdigest() for name, data in files}
    lines = "".join(f"{name}\n{per_file[name]}\n" for name in sorted(per_file))
    aggregate = hmac.new(seed, lines.encode("utf-8"), hashlib.sha256).hexdigest()
    return SeededDigest(aggregate, dict(sorted(per_file.items())))


def seeded_digests_of_root(seed: bytes, root: Path | None = None) -> SeededDigest:
    """The seeded digests of the product files as they are on disk under ``root`` (what runs)."""
    root = product_root() if root is None else root
    return seeded_digests(seed, ((name, path.read_bytes()) for name, path in product_files(root).items()))


def release_files_from(source: Path) -> dict[str, bytes]:
    """The product files of an approved release the floor holds: a wheel (.whl) or a directory holding
    the packages (an unpacked wheel, a copy of an installation)."""
    if source.is_file() and source.suffix == ".whl":
        import zipfile  # noqa: PLC0415

        files: dict[str, bytes] = {}
        with zipfile.ZipFile(source) as wheel:
            for name in wheel.namelist():
                parts = name.split("/")
                if parts[0] not in PRODUCT_PACKAGES or name.endswith("/"):
                    continue
                if any(part in SKIPPED_DIRS for part in parts) or name.endswith(SKIPPED_SUFFIXES):
                    continue
                files[name] = wheel.read(name)
        return files
    return {name: path.read_bytes() for name, path in product_files(source).items()}


def check_release_files(files: Mapping[str, bytes], manifest: Mapping[str, Any], source: Path) -> None:
    """The floor's copy of the release is the manifest's, file for file, before it is used."""
    wanted: Mapping[str, str] = manifest["files"]
    for name, digest in sorted(wanted.items()):
        data = files.get(name)
        if data is None:
            raise UserError(f"{source}: {name} is missing from the approved release")
        if hashlib.sha256(data).hexdigest() != digest:
            raise UserError(f"{source}: {name} differs from the approved release's manifest")
    for name in sorted(set(files) - set(wanted)):
        raise UserError(f"{source}: {name} is not in the approved release's manifest")
