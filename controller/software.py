"""Software verification (docs/operations.md "Software verification"): the release manifest, its Ed25519
signature, the check at every start, and the seeded verification a lab or the floor asks for.

**The release manifest** names every file of the product as installed (every file under the packages
controller, drivers, firmware_protocol, sim_devices and table_names, byte for byte, compiled caches
aside) with its SHA-256, and every dependency the product installs (the transitive closure of its
requirements, extras aside) with its exact version and the SHA-256 of its ``RECORD``: pip writes in
RECORD the digest of each of the distribution's files, so the RECORD's digest pins the digest of every
one of them, and the start checks each file against its RECORD (the RECORD's digest alone would let a
file be changed in place under an unchanged RECORD). The manifest is signed with the maker's
Ed25519 key; the table's configuration holds the public key (``[software] public_key``).

**At every start** (before the journal is opened) ``verify_release`` checks, in this order: the
signature against the configured key; the manifest's kind (a development manifest is refused unless the
configuration allows it); every dependency's version, RECORD digest and files; every product file's
digest; no product file beyond the manifest's; no compiled cache Python would run in place of a product
source that holds other code; and no module on the import path beside the packages that neither the
release nor an installed distribution owns. The first failure refuses the start in one line naming the
file (``SoftwareRefused``). The release's digest (the SHA-256 of the signed manifest's canonical bytes)
is then journaled in ``software_verified``.

**Seeded verification** (``seeded_digests``): HMAC-SHA256(seed, bytes) of each product file as it is on
disk, and one aggregate HMAC over the sorted (path, file HMAC) lines. The seed is the verifier's, so a
stored answer cannot be replayed; the floor computes the same from the approved release it holds.

Pure functions over a ``root`` (the directory holding the packages) and a ``search_path`` (where
distributions are looked up), so tests verify a copy of the product, never the checkout.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import importlib.metadata
import importlib.util
import json
import marshal
import re
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.errors import UserError

PRODUCT_PACKAGES = ("controller", "drivers", "firmware_protocol", "sim_devices", "table_names")
PRODUCT_DISTRIBUTION = "flushtable"
MANIFEST_FORMAT = "flushtable-release/1"
SIGNED_FORMAT = "flushtable-signed-release/1"
# Compiled caches Python writes beside the sources as it runs: not part of the release's files (they are
# rebuilt); a cache Python would load is checked against its verified source (cache_not_of_its_source).
_SKIPPED_DIRS = frozenset({"__pycache__"})
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
_IMPORTABLE_SUFFIXES = (".py", ".pth", ".so", ".pyd", ".pyc")
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
            if any(part in _SKIPPED_DIRS for part in relative.parts) or path.is_dir():
                continue
            if path.name.endswith(_SKIPPED_SUFFIXES):
                continue
            found[relative.as_posix()] = path
    return found


# --- dependencies -----------------------------------------------------------------------------------------


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _index(search_path: Sequence[str] | None) -> dict[str, importlib.metadata.Distribution]:
    """Each installed distribution by its normalised name: the first on the path, as import sees it."""
    path = list(sys.path if search_path is None else search_path)
    found: dict[str, importlib.metadata.Distribution] = {}
    for distribution in importlib.metadata.distributions(path=path):
        found.setdefault(_normal(distribution.metadata["Name"] or ""), distribution)
    return found


def _wanted(requirement: str, extras: frozenset[str]) -> tuple[str, frozenset[str]] | None:
    """A requirement's distribution name and the extras it asks of it, when it applies: one under an
    extra applies only when the requiring distribution was itself asked for that extra."""
    text, _, marker = requirement.partition(";")
    named = re.findall(r"""extra\s*==\s*["']([^"']+)["']""", marker)
    if named and not any(_normal(extra) in extras for extra in named):
        return None
    match = _REQUIREMENT_NAME.match(text)
    if match is None:
        return None
    asked = re.search(r"\[([^\]]*)\]", text)
    wanted = frozenset(_normal(e) for e in asked.group(1).split(",") if e.strip()) if asked else frozenset()
    return _normal(match.group(1)), wanted


def dependency_names(search_path: Sequence[str] | None = None) -> list[str]:
    """The product's dependencies, transitively, as installed: a requirement under one of the product's
    extras (the test tools) is not one, a requirement under an extra a dependency was asked for is
    (psycopg[binary] brings psycopg-binary); one whose marker excludes this machine is simply not
    installed, so not listed."""
    index = _index(search_path)
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
    index = _index(search_path)
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
                _normal(distribution.metadata["Name"] or ""),
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
    """``[software] public_key``: the raw Ed25519 public key, 64 hex digits."""
    try:
        raw = bytes.fromhex(text.strip())
    except ValueError:
        raise UserError("not hex") from None
    if len(raw) != 32:
        raise UserError(f"an Ed25519 public key is 32 bytes (64 hex digits), not {len(raw)}")
    return raw


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


@dataclass(frozen=True, slots=True)
class VerifiedRelease:
    release: str
    digest: str  # release_digest of the manifest
    development: bool
    key_id: str
    files: int
    dependencies: int

    def to_json(self) -> dict[str, Any]:
        return {
            "release": self.release,
            "release_digest": self.digest,
            "development": self.development,
            "key_id": self.key_id,
            "files": self.files,
            "dependencies": self.dependencies,
        }


def changed_dependency_file(
    distribution: importlib.metadata.Distribution, *, only_suffix: str = ""
) -> Path | None:
    """The first of the distribution's files whose bytes are not those its RECORD names (the RECORD's own
    digest is the release's): a file changed in place under an unchanged RECORD. Entries without a digest
    (the RECORD itself, the caches pip compiled at install) are not checked here."""
    for entry in distribution.files or []:
        if entry.hash is None or not str(entry).endswith(only_suffix):
            continue
        path = Path(str(distribution.locate_file(entry)))
        try:
            digest = hashlib.new(entry.hash.mode)
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except (OSError, ValueError):  # missing, unreadable, or a digest this table cannot check
            return path
        if base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode("ascii") != entry.hash.value:
            return path
    return None


def distribution_not_in_release(manifest: Mapping[str, Any], path_list: Sequence[str]) -> str | None:
    """The first distribution on the path the release does not name (name, version and RECORD digest):
    its RECORD would otherwise make any module it lists look owned (a made-up distribution claiming a
    package that shadows a dependency). Its ``.pth`` files, run at every interpreter's start, are
    checked against its RECORD too."""
    named: set[tuple[str, str, str]] = set()
    for entry in manifest.get("installed") or []:
        if isinstance(entry, dict):
            named.add((str(entry.get("name")), str(entry.get("version")), str(entry.get("record_sha256"))))
    for name, entry in manifest["dependencies"].items():
        named.add((_normal(name), str(entry.get("version")), str(entry.get("record_sha256"))))
    for distribution in importlib.metadata.distributions(path=list(path_list)):
        record = distribution.read_text("RECORD") or ""
        name = _normal(distribution.metadata["Name"] or "")
        found = (name, distribution.version, hashlib.sha256(record.encode("utf-8")).hexdigest())
        where = str(getattr(distribution, "_path", f"{name} {distribution.version}"))
        if found not in named:
            return f"{where} ({name} {distribution.version})"
        changed = changed_dependency_file(distribution, only_suffix=".pth")
        if changed is not None:
            return f"{changed} (a .pth file of {name} {distribution.version} differs from its RECORD)"
    return None


def cache_not_of_its_source(source: Path) -> Path | None:
    """The compiled cache Python would run instead of ``source`` when that cache holds other code.

    Python takes a cache as up to date from its header alone (the source's time and size, or the
    source's hash), never from the code it holds, so code stamped with an unchanged source's header runs
    in place of that source. A cache Python would not use (another interpreter's, or stale) is left
    alone: Python compiles the source instead."""
    if source.suffix != ".py":
        return None
    cache = Path(importlib.util.cache_from_source(str(source)))
    try:
        data = cache.read_bytes()
    except OSError:
        return None  # no cache: Python compiles the verified source
    if data[:4] != importlib.util.MAGIC_NUMBER:
        return None  # another interpreter's: never loaded by this one
    flags = int.from_bytes(data[4:8], "little")
    if flags == 0:  # the source's time and size: a stale cache is recompiled, never run
        stat = source.stat()
        stamped = (int.from_bytes(data[8:12], "little"), int.from_bytes(data[12:16], "little"))
        if stamped != (int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF):
            return None
    try:
        cached = marshal.loads(data[16:])
    except (EOFError, ValueError, TypeError):
        return cache  # a usable header over bytes that are not code: not the release's
    if cached != compile(source.read_bytes(), str(source), "exec", dont_inherit=True):
        return cache
    return None


def unowned_modules(directory: Path, owned: set[str]) -> list[str]:
    """Top-level importable names in ``directory`` (modules, packages, .pth files) that neither the
    release nor an installed distribution's RECORD owns."""
    extra: list[str] = []
    try:
        children = sorted(directory.iterdir())
    except OSError:
        return extra
    for child in children:
        name = child.name
        if name in owned or name in _SKIPPED_DIRS:
            continue
        if child.is_dir():
            if name.endswith((".dist-info", ".egg-info", ".data")):
                continue
            try:
                package = (child / "__init__.py").exists() or any(g.suffix == ".py" for g in child.iterdir())
            except OSError:
                package = True  # unreadable to this user: not known to be harmless
            if not package:
                continue
        elif not name.endswith(_IMPORTABLE_SUFFIXES):
            continue
        extra.append(name)
    return extra


def import_directories(path_list: Sequence[str], root: Path) -> list[Path]:
    """The directories on the import path where a module could be slipped in beside the product: every
    one (site-packages, the product's root, the console script's directory, PYTHONPATH's), the standard
    library's aside (no distribution owns it; the operating system's packages protect it)."""
    stdlib = {
        Path(sysconfig.get_paths()[key]).resolve()
        for key in ("stdlib", "platstdlib")
        if key in sysconfig.get_paths()
    }
    found: list[Path] = []
    for entry in path_list:
        if not entry:
            continue  # the working directory of an interactive python, never a daemon's
        directory = Path(entry).resolve()
        if not directory.is_dir() or directory in found:
            continue
        if directory in stdlib or any(parent in stdlib for parent in directory.parents):
            continue
        found.append(directory)  # site-packages, the product's root, a script's directory, PYTHONPATH
    return found


def archive_on_path(path_list: Sequence[str]) -> Path | None:
    """The first entry of the import path that is a file, not a directory (zipimport loads modules from
    a zip archive there); the interpreter's own standard-library archive aside."""
    stdlib_zip = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}{sys.version_info[1]}.zip"
    for entry in path_list:
        if not entry:
            continue
        path = Path(entry)
        if path.exists() and not path.is_dir() and path.resolve() != stdlib_zip.resolve():
            return path
    return None


def owned_top_level(directory: Path) -> set[str]:
    """The first path component of every file the distributions installed in ``directory`` list."""
    owned: set[str] = set()
    for distribution in importlib.metadata.distributions(path=[str(directory)]):
        for entry in distribution.files or []:
            parts = Path(str(entry)).parts
            if parts and parts[0] != "..":
                owned.add(parts[0])
    return owned


def _check_dependencies(manifest: Mapping[str, Any], path_list: Sequence[str]) -> None:
    """Every dependency the release names installed at its version, RECORD and files, and no
    distribution on the import path it does not name."""
    index = _index(path_list)
    for name, wanted in sorted(manifest["dependencies"].items()):
        found = dependency_entry(index.get(_normal(name)))
        if found is None:
            raise SoftwareRefused(f"dependency {name}: not installed (the release names {wanted['version']})")
        if found["version"] != wanted.get("version"):
            raise SoftwareRefused(
                f"dependency {name}: {found['version']} installed, the release names {wanted.get('version')}"
            )
        if found["record_sha256"] != wanted.get("record_sha256"):
            raise SoftwareRefused(
                f"dependency {name} {found['version']}: its RECORD differs from the release's"
            )
        distribution = index[_normal(name)]
        changed = changed_dependency_file(distribution)
        if changed is not None:
            raise SoftwareRefused(
                f"{changed}: changed (dependency {name} {found['version']}: "
                "its SHA-256 differs from its RECORD's)"
            )
    unnamed = distribution_not_in_release(manifest, path_list)
    if unnamed is not None:
        raise SoftwareRefused(
            f"{unnamed}: a distribution on the import path not in the release (only one the release "
            "names may own a module)"
        )


def _check_product_files(root: Path, wanted_files: Mapping[str, str]) -> None:
    """Every product file the release's, byte for byte; none beyond it; no compiled cache in a source's
    place."""
    present = product_files(root)
    for name, digest in sorted(wanted_files.items()):
        path = present.get(name)
        if path is None:
            raise SoftwareRefused(f"{root / name}: missing (the release has it)")
        if sha256_file(path) != digest:
            raise SoftwareRefused(f"{path}: changed (its SHA-256 differs from the release's)")
    for name in sorted(set(present) - set(wanted_files)):
        raise SoftwareRefused(f"{present[name]}: not in the release (an extra file in the product)")
    for _name, path in sorted(present.items()):
        cache = cache_not_of_its_source(path)
        if cache is not None:
            raise SoftwareRefused(
                f"{cache}: a compiled cache that is not its source's code "
                f"(Python would run it instead of {path})"
            )


def _check_import_path(path_list: Sequence[str], root: Path) -> None:
    """No archive on the import path, and no module beside the product that nothing owns."""
    archive = archive_on_path(path_list)
    if archive is not None:
        raise SoftwareRefused(
            f"{archive}: an archive on the import path (zipimport would load modules from it unchecked)"
        )
    for directory in import_directories(path_list, root):
        owned = owned_top_level(directory)
        if directory == root:
            owned |= set(PRODUCT_PACKAGES)
        for name in unowned_modules(directory, owned):
            raise SoftwareRefused(
                f"{directory / name}: a module on the import path beside the product, not in the release"
            )


def verify_release(
    manifest_path: Path,
    public_key: bytes,
    *,
    allow_development: bool,
    root: Path | None = None,
    search_path: Sequence[str] | None = None,
) -> VerifiedRelease:
    """Everything that runs checked against the signed manifest; the first difference refused in one
    line naming it (``SoftwareRefused``)."""
    root = product_root() if root is None else root
    path_list = list(sys.path if search_path is None else search_path)
    signed = read_signed(manifest_path)
    manifest = check_signature(signed, public_key, manifest_path)
    development = bool(manifest.get("development"))
    if development and not allow_development:
        raise SoftwareRefused(
            f"{manifest_path}: a development release; this table runs signed production releases only"
        )
    _check_dependencies(manifest, path_list)
    wanted_files: Mapping[str, str] = manifest["files"]
    _check_product_files(root, wanted_files)
    _check_import_path(path_list, root)
    return VerifiedRelease(
        release=str(manifest.get("release", "")),
        digest=release_digest(manifest),
        development=development,
        key_id=key_id(public_key),
        files=len(wanted_files),
        dependencies=len(manifest["dependencies"]),
    )


# --- at start, before the product is imported --------------------------------------------------------------


def read_software_section(config_path: Path) -> dict[str, Any] | None:
    """The configuration's ``[software]`` as written, read with controller/files.py alone (the product's
    configuration code is not imported before it is verified). None when the file cannot be read as
    TOML: the full check (controller/config/), which runs before the journal is touched, refuses it."""
    from controller.files import (  # noqa: PLC0415 - the small file reader only
        MAX_TOML_BYTES,
        FileRefused,
        TomlRefused,
        load_toml,
        read_bounded_text,
    )

    try:  # bounded, a regular file only, its nesting limited (never a FIFO, /dev/zero, a TOML bomb)
        parsed = load_toml(read_bounded_text(config_path, limit_bytes=MAX_TOML_BYTES))
    except (FileRefused, TomlRefused, OSError, ValueError):
        return None
    section = parsed.get("software")
    return section if isinstance(section, dict) else None


def verify_before_import(argv: Sequence[str]) -> VerifiedRelease | None:
    """`flushtable run`'s verification, made by controller/cli.py before the run command (and with it the
    configuration, the rules, the engine) is imported: a changed module is refused before any of its
    code runs. Only controller/__init__.py, cli.py, errors.py and this module run before; they are
    verified with the rest. None: nothing to verify (no [software], no --dev-release: the embedded
    default); controller/commands/run.py refuses then what this could not read."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--dev-release", type=Path, default=None)
    known, _ = parser.parse_known_args(list(argv))
    section = None if known.config is None else read_software_section(known.config)
    if section is not None:
        if known.dev_release is not None:
            raise UserError(
                f"--dev-release: {known.config} has [software]: "
                "this table verifies its configured release only"
            )
        manifest, key_text = section.get("manifest"), section.get("public_key")
        if not isinstance(manifest, str) or not isinstance(key_text, str):
            return None  # the configuration's own check names the key
        try:
            public_key = parse_public_key(key_text)
        except UserError:
            return None
        allow = section.get("allow_development", False) is True
        return verify_release(known.config.parent / manifest, public_key, allow_development=allow)
    if known.dev_release is None:
        return None
    manifest_path, public = make_dev_release(known.dev_release)
    return verify_release(manifest_path, parse_public_key(public), allow_development=True)


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
                if any(part in _SKIPPED_DIRS for part in parts) or name.endswith(_SKIPPED_SUFFIXES):
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
