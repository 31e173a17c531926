"""The check at every start (``verify_release``), in its order: the signature, the manifest's kind, every
dependency's version, RECORD digest and files, every product file's digest, no product file beyond the
manifest's, no compiled cache in place of a source, no unowned module on the import path; and
``verify_before_import``, which runs it before the product's other modules are imported.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata
import importlib.util
import marshal
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from controller.errors import UserError
from controller.software.manifest import (
    IMPORTABLE_SUFFIXES,
    PRODUCT_PACKAGES,
    SKIPPED_DIRS,
    SoftwareRefused,
    dependency_entry,
    distribution_index,
    normal_name,
    product_files,
    product_root,
    release_digest,
    sha256_file,
)
from controller.software.signing import (
    check_signature,
    key_id,
    make_dev_release,
    parse_public_key,
    read_signed,
)


@dataclass(frozen=True, slots=True)
class VerifiedRelease:
    release: str
    release_digest: str  # the manifest's (manifest.py release_digest)
    development: bool
    key_id: str
    files: int
    dependencies: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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
        named.add((normal_name(name), str(entry.get("version")), str(entry.get("record_sha256"))))
    for distribution in importlib.metadata.distributions(path=list(path_list)):
        record = distribution.read_text("RECORD") or ""
        name = normal_name(distribution.metadata["Name"] or "")
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
        if name in owned or name in SKIPPED_DIRS:
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
        elif not name.endswith(IMPORTABLE_SUFFIXES):
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
    index = distribution_index(path_list)
    for name, wanted in sorted(manifest["dependencies"].items()):
        found = dependency_entry(index.get(normal_name(name)))
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
        distribution = index[normal_name(name)]
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
        release_digest=release_digest(manifest),
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
    code runs. Only controller/__init__.py, cli.py, errors.py, files.py and this package run before; they are
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
