"""Issue 26 item 1: the daemon verifies the signed release before it opens the table. Each tampering is
refused at start in one line naming the file, and nothing is appended (the journal is never created);
the unmodified release starts and journals software_verified before table_opened.

Checked to fail without the check: with controller/software/verify.py verify_before_import returning None
(nothing verified), every test that starts a child failed."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from controller import software
from controller.journal.store import Journal
from tests.software.conftest import Release


def kinds(journal: Path) -> list[str]:
    with Journal.open_existing(journal) as opened:
        return [entry.kind for entry in opened.entries()]


def assert_refused(result: subprocess.CompletedProcess[str], journal: Path, *words: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr  # one line, no traceback
    line = lines[0]
    assert line.startswith("flushtable run: "), line
    for word in words:
        assert word in line, line
    # Nothing appended: the journal file was never made (a start that fails journals nothing).
    assert (
        not journal.exists()
        or not sqlite3.connect(journal)
        .execute("SELECT name FROM sqlite_master WHERE name = 'entries'")
        .fetchall()
    )
    return line


def test_the_unmodified_release_starts_and_journals_what_it_verified(release: Release) -> None:
    result = release.start()
    assert result.returncode == 0, result.stderr
    assert kinds(release.journal)[:2] == ["software_verified", "table_opened"]
    with Journal.open_existing(release.journal) as opened:
        first = next(iter(opened.entries()))
    signed = software.read_signed(release.manifest)
    payload = first.payload
    assert payload["release_digest"] == software.release_digest(signed["manifest"])
    assert payload["development"] is False
    assert payload["files"] == len(signed["manifest"]["files"])
    assert payload["key_id"] == software.key_id(bytes.fromhex(release.public_key))


def test_a_changed_byte_is_refused_naming_the_file(release: Release) -> None:
    target = release.site / "controller" / "rules" / "paytables.py"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    assert_refused(release.start(), release.journal, str(target), "changed")


def test_a_module_beside_the_package_is_refused(release: Release) -> None:
    beside = release.site / "sitecustomize.py"
    beside.write_text("print('hello')\n", encoding="utf-8")
    assert_refused(release.start(), release.journal, str(beside), "import path")


def test_an_extra_module_inside_a_package_is_refused(release: Release) -> None:
    extra = release.site / "controller" / "engine" / "backdoor.py"
    extra.write_text("X = 1\n", encoding="utf-8")
    assert_refused(release.start(), release.journal, str(extra), "not in the release")


def test_a_dependency_of_another_version_is_refused(release: Release) -> None:
    # A fake distribution first on the path: what import would see is pyserial 9.9, not the release's.
    info = release.site / "pyserial-9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pyserial\nVersion: 9.9\n", encoding="utf-8")
    (info / "RECORD").write_text("pyserial-9.9.dist-info/METADATA,,\n", encoding="utf-8")
    line = assert_refused(release.start(), release.journal, "dependency pyserial", "9.9")
    assert "3.5" in line or "names" in line


def test_a_manifest_naming_another_dependency_version_is_refused(release: Release) -> None:
    signed = software.read_signed(release.manifest)
    dependencies = dict(signed["manifest"]["dependencies"])
    dependencies["numpy"] = {**dependencies["numpy"], "version": "1.0.0"}
    release.sign(edit={"dependencies": dependencies})
    assert_refused(release.start(), release.journal, "dependency numpy", "1.0.0")


def test_a_manifest_signed_with_another_key_is_refused(release: Release, tmp_path: Path) -> None:
    other = tmp_path / "other.key"
    software.generate_key(other)
    release.sign(key=other)
    assert_refused(release.start(), release.journal, str(release.manifest), "another key")


def test_a_development_release_is_refused_on_a_table_that_does_not_allow_one(release: Release) -> None:
    release.sign(development=True)
    assert_refused(release.start(), release.journal, str(release.manifest), "development release")


def test_dev_release_is_refused_where_software_is_configured(release: Release, tmp_path: Path) -> None:
    assert_refused(release.start("--dev-release", str(tmp_path / "dev")), release.journal, "--dev-release")


@pytest.mark.parametrize(
    "name",
    [
        "controller/__init__.py",
        "controller/panel/templates/base.html",
        "controller/py.typed",
        "drivers/__init__.py",
        "firmware_protocol/__init__.py",
        "sim_devices/__init__.py",
        "table_names/__init__.py",
    ],
)
def test_any_product_file_changed_is_refused_in_process(release: Release, name: str) -> None:
    # The same check, in this process (no child): one file of each package and kind of file.
    target = release.site / name
    target.write_bytes(target.read_bytes() + b" ")
    with pytest.raises(software.SoftwareRefused, match="changed") as refused:
        software.verify_release(
            release.manifest,
            bytes.fromhex(release.public_key),
            allow_development=False,
            root=release.site,
            search_path=release.search_path,
        )
    assert str(target) in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("not json", "not JSON"),
        ('{"format": "flushtable-signed-release/1"}', "not a signed release manifest"),
        (
            '{"format": "flushtable-signed-release/1", "signature": "00", "manifest": {"format": '
            '"flushtable-release/1", "files": {}, "dependencies": {"numpy": "2.0"}}}',
            "malformed",
        ),
    ],
)
def test_a_malformed_manifest_is_refused_in_one_line(release: Release, text: str, words: str) -> None:
    release.manifest.write_text(text, encoding="utf-8")
    with pytest.raises(software.SoftwareRefused, match=words) as refused:
        software.verify_release(
            release.manifest, bytes.fromhex(release.public_key), allow_development=False, root=release.site
        )
    assert str(release.manifest) in str(refused.value)
