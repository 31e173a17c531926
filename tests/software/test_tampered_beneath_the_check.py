"""Tamperings the checks of the product's sources and the dependencies' RECORD digests alone did not see
(review of issue 26 item 1), each refused in one line naming the file: a dependency's file changed in
place (its RECORD untouched); a product module's compiled cache replaced by other code stamped with the
unchanged source's time and size (Python runs such a cache instead of the source); a made-up
distribution claiming a package that shadows a dependency; a symbolic link to a directory inside the
product (never listed, so never hashed); a zip archive on the import path.

Each was checked to fail before its fix (on main 5f1b08c, or with the earlier fixes only): the verify
returned a verified release (DID NOT RAISE), and the cache's child started, printed TAMPERED, exit 0."""

from __future__ import annotations

import importlib.util
import py_compile
import shutil
import sys
import zipfile
from importlib._bootstrap_external import _code_to_timestamp_pyc  # type: ignore[attr-defined]
from pathlib import Path

import pytest

from controller import software
from tests.software.conftest import CHECKOUT, Release
from tests.software.test_start_verification import assert_refused


def site_packages_of(module_file: str) -> Path:
    return Path(module_file).resolve().parent


def installed_path(release: Release) -> list[str]:
    """The copy first, then the interpreter's own path without the checkout pytest runs from (its bench/
    and tests/ are not an installation's)."""
    return [
        str(release.site),
        *(entry for entry in sys.path if entry and Path(entry).resolve() != CHECKOUT),
    ]


def test_a_dependency_file_changed_in_place_is_refused(release: Release) -> None:
    # A copy of the real `six` distribution first on the path (its file and its RECORD), signed into the
    # release; then one byte of six.py changed and its RECORD left as pip wrote it.
    # A small pure-Python dependency of the product (through transitions), found without importing it.
    spec = importlib.util.find_spec("six")
    assert spec is not None
    assert spec.origin is not None
    source = site_packages_of(spec.origin)
    info = next(source.glob("six-*.dist-info"))
    shutil.copy2(source / "six.py", release.site / "six.py")
    shutil.copytree(info, release.site / info.name)
    release.sign()
    signed = software.read_signed(release.manifest)
    assert "six" in signed["manifest"]["dependencies"]
    target = release.site / "six.py"
    target.write_bytes(target.read_bytes().replace(b"__version__ = ", b"__version__ =  ", 1))
    with pytest.raises(software.SoftwareRefused, match="six") as refused:
        software.verify_release(
            release.manifest,
            bytes.fromhex(release.public_key),
            allow_development=False,
            root=release.site,
            search_path=installed_path(release),
        )
    assert str(target) in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_compiled_cache_that_is_not_its_source_is_refused(release: Release) -> None:
    # The run command's module, its source unchanged; its cache holds other code, stamped with the
    # source's time and size so that Python takes it as up to date and runs it instead of the source.
    target = release.site / "controller" / "commands" / "run.py"
    source = target.read_bytes()
    tampered = source + b"\nimport sys as _sys\n\n_sys.stderr.write('TAMPERED\\n')\n"
    code = compile(tampered, str(target), "exec", dont_inherit=True)
    stat = target.stat()
    cache = Path(importlib.util.cache_from_source(str(target)))
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(bytes(_code_to_timestamp_pyc(code, int(stat.st_mtime), stat.st_size)))
    result = release.start()
    assert "TAMPERED" not in result.stderr
    assert_refused(result, release.journal, str(cache), "compiled")


def test_a_cache_compiled_from_the_source_itself_starts(release: Release) -> None:
    # The cache pip writes at install (compiled from the very source) is not a tampering.
    target = release.site / "controller" / "commands" / "run.py"
    py_compile.compile(str(target), doraise=True)
    assert Path(importlib.util.cache_from_source(str(target))).exists()
    verified = software.verify_release(
        release.manifest,
        bytes.fromhex(release.public_key),
        allow_development=False,
        root=release.site,
        search_path=installed_path(release),
    )
    assert verified.files > 0


def test_a_module_shadowing_a_dependency_under_a_made_up_distribution_is_refused(release: Release) -> None:
    # A `serial` package first on the path shadows pyserial's; a made-up distribution's RECORD claims it,
    # so it looked owned. Only a distribution the signed release names may own a module.
    shadow = release.site / "serial"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("VERSION = '3.5'\n", encoding="utf-8")
    info = release.site / "serial_helpers-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: serial-helpers\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "RECORD").write_text(
        "serial/__init__.py,,\nserial_helpers-1.0.dist-info/METADATA,,\nserial_helpers-1.0.dist-info/RECORD,,\n",
        encoding="utf-8",
    )
    with pytest.raises(software.SoftwareRefused, match="serial-helpers") as refused:
        software.verify_release(
            release.manifest,
            bytes.fromhex(release.public_key),
            allow_development=False,
            root=release.site,
            search_path=installed_path(release),
        )
    assert str(info) in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_release_built_where_it_runs_verifies_with_every_distribution_installed(
    release: Release,
) -> None:
    # The test tools, pip and the checkout's own egg-info are installed beside the product here: the
    # manifest names each, so the unmodified release verifies.
    verified = software.verify_release(
        release.manifest,
        bytes.fromhex(release.public_key),
        allow_development=False,
        root=release.site,
        search_path=installed_path(release),
    )
    assert verified.files > 0


def test_a_linked_directory_inside_the_product_is_refused(release: Release, tmp_path: Path) -> None:
    # A package directory wins over the module of the same name (controller/rules/paytables/ over
    # paytables.py); as a symbolic link to a directory elsewhere its files were never listed nor hashed.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "__init__.py").write_text("TAMPERED = True\n", encoding="utf-8")
    link = release.site / "controller" / "rules" / "paytables"
    link.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(software.SoftwareRefused, match="link") as refused:
        software.verify_release(
            release.manifest,
            bytes.fromhex(release.public_key),
            allow_development=False,
            root=release.site,
            search_path=installed_path(release),
        )
    assert str(link) in str(refused.value)
    assert "\n" not in str(refused.value)


def test_an_archive_on_the_import_path_is_refused(release: Release, tmp_path: Path) -> None:
    # zipimport reads modules from an archive on the path (PYTHONPATH=/tmp/x.zip): one shadowing
    # pyserial's `serial` was never looked at, the check looking into directories only.
    archive = tmp_path / "shadow.zip"
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr("serial/__init__.py", "VERSION = '3.5'\n")
    with pytest.raises(software.SoftwareRefused, match="archive") as refused:
        software.verify_release(
            release.manifest,
            bytes.fromhex(release.public_key),
            allow_development=False,
            root=release.site,
            search_path=[str(archive), *installed_path(release)],
        )
    assert str(archive) in str(refused.value)
    assert "\n" not in str(refused.value)
