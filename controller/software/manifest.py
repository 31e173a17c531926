"""The release manifest (docs/operations.md "Software verification"): every file of the product as
installed with its SHA-256, every dependency the product installs with its exact version and the
SHA-256 of its ``RECORD``, and the release's digest (the SHA-256 of the manifest's canonical bytes).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from controller.errors import UserError

PRODUCT_PACKAGES = ("controller", "drivers", "firmware_protocol", "sim_devices", "table_names")
PRODUCT_DISTRIBUTION = "flushtable"
MANIFEST_FORMAT = "flushtable-release/1"
SIGNED_FORMAT = "flushtable-signed-release/1"
# Compiled caches Python writes beside the sources as it runs: not part of the release's files (they are
# rebuilt); a cache Python would load is checked against its verified source (cache_not_of_its_source).
SKIPPED_DIRS = frozenset({"__pycache__"})
SKIPPED_SUFFIXES = (".pyc", ".pyo")
IMPORTABLE_SUFFIXES = (".py", ".pth", ".so", ".pyd", ".pyc")
_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
MAX_MANIFEST_BYTES = 4 * 1024 * 1024


class SoftwareRefused(UserError):
    """The software is not the signed release: one line naming the file (or dependency) and why."""


def canonical(value: Any) -> bytes:
    """The bytes that are signed and hashed: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def product_root() -> Path:
    """The directory holding the packages that run now (the checkout for `make run`'s editable install,
    site-packages for a wheel)."""
    import controller  # noqa: PLC0415 - the running package itself

    return Path(controller.__file__).resolve().parent.parent


def product_files(root: Path) -> dict[str, Path]:
    """Every file of the product under ``root``, by its path relative to root (POSIX separators)."""
    found: dict[str, Path] = {}
    for package in PRODUCT_PACKAGES:
        base = root / package
        if not base.is_dir():
            raise SoftwareRefused(f"{base}: the package {package} is missing")
        for path in sorted(base.rglob("*")):
            relative = path.relative_to(root)
            if path.is_symlink() and path.is_dir():
                # rglob never enters it, so its files would be neither listed nor hashed, yet import
                # follows it (and a package directory wins over the module of the same name).
                raise SoftwareRefused(
                    f"{path}: a link to a directory inside the product (its files cannot be checked)"
                )
            if any(part in SKIPPED_DIRS for part in relative.parts) or path.is_dir():
                continue
            if path.name.endswith(SKIPPED_SUFFIXES):
                continue
            found[relative.as_posix()] = path
    return found


# --- dependencies -----------------------------------------------------------------------------------------


def normal_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distribution_index(search_path: Sequence[str] | None) -> dict[str, importlib.metadata.Distribution]:
    """Each installed distribution by its normalised name: the first on the path, as import sees it."""
    path = list(sys.path if search_path is None else search_path)
    found: dict[str, importlib.metadata.Distribution] = {}
    for distribution in importlib.metadata.distributions(path=path):
        found.setdefault(normal_name(distribution.metadata["Name"] or ""), distribution)
    return found


def _wanted(requirement: str, extras: frozenset[str]) -> tuple[str, frozenset[str]] | None:
    """A requirement's distribution name and the extras it asks of it, when it applies: one under an
    extra applies only when the requiring distribution was itself asked for that extra."""
    text, _, marker = requirement.partition(";")
    named = re.findall(r"""extra\s*==\s*["']([^"']+)["']""", marker)
    if named and not any(normal_name(extra) in extras for extra in named):
        return None
    match = _REQUIREMENT_NAME.match(text)
    if match is None:
        return None
    asked = re.search(r"\[([^\]]*)\]", text)
    wanted = (
        frozenset(normal_name(e) for e in asked.group(1).split(",") if e.strip()) if asked else frozenset()
    )
    return normal_name(match.group(1)), wanted


def dependency_names(search_path: Sequence[str] | None = None) -> list[str]:
    """The product's dependencies, transitively, as installed: a requirement under one of the product's
    extras (the test tools) is not one, a requirement under an extra a dependency was asked for is
    (psycopg[binary] brings psycopg-binary); one whose marker excludes this machine is simply not
    installed, so not listed."""
    index = distribution_index(search_path)
    product = index.get(PRODUCT_DISTRIBUTION)
    if product is None:
        raise SoftwareRefused(f"{PRODUCT_DISTRIBUTION}: not installed (pip install the release first)")
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    pending: list[tuple[str, frozenset[str]]] = [(r, frozenset()) for r in product.requires or []]
    while pending:  # bounded: each (name, extras) is visited once
        requirement, extras = pending.pop()
        wanted = _wanted(requirement, extras)
        if wanted is None or wanted in seen:
            continue
        seen.add(wanted)
        key, asked = wanted
        distribution = index.get(key)
        if distribution is None:
            continue
        names.add(key)
        pending.extend((r, asked) for r in distribution.requires or [])
    return sorted(names)


def dependency_entry(distribution: importlib.metadata.Distribution | None) -> dict[str, str] | None:
    if distribution is None:
        return None
    record = distribution.read_text("RECORD") or ""
    return {
        "version": distribution.version,
        "record_sha256": hashlib.sha256(record.encode("utf-8")).hexdigest(),
    }


# --- the manifest -----------------------------------------------------------------------------------------


def build_manifest(
    root: Path, *, release: str, development: bool, search_path: Sequence[str] | None = None
) -> dict[str, Any]:
    files = {name: sha256_file(path) for name, path in product_files(root).items()}
    index = distribution_index(search_path)
    dependencies: dict[str, Any] = {}
    for name in dependency_names(search_path):
        entry = dependency_entry(index.get(name))
        if entry is not None:
            dependencies[name] = entry
    # Every distribution installed on the path (the product's own, pip, the tools beside it): only a
    # distribution the release names may own a module on the import path (verify_release).
    installed = sorted(
        {
            (
                normal_name(distribution.metadata["Name"] or ""),
                distribution.version,
                hashlib.sha256((distribution.read_text("RECORD") or "").encode("utf-8")).hexdigest(),
            )
            for distribution in importlib.metadata.distributions(
                path=list(sys.path if search_path is None else search_path)
            )
        }
    )
    return {
        "format": MANIFEST_FORMAT,
        "release": release,
        "development": development,
        "packages": list(PRODUCT_PACKAGES),
        "files": files,
        "dependencies": dependencies,
        "installed": [{"name": n, "version": v, "record_sha256": r} for n, v, r in installed],
    }


def release_digest(manifest: Mapping[str, Any]) -> str:
    """The release's one digest: the SHA-256 of the manifest's canonical bytes (what the key signed)."""
    return hashlib.sha256(canonical(manifest)).hexdigest()
