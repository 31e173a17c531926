"""The seals' listing (controller/journal/seals.py ``seal_numbers``) is read once per process while
the segments directory is unchanged, and read afresh when any process adds a seal (docs/journal.md
"Segments and seals"). A real directory; the listing's clock is injected (the "settled" rule), and
os.listdir is wrapped only to count the listings."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.journal import seals, segments
from controller.journal.seals import seal_file, seal_numbers, segments_dir

LOOKUPS = 40  # the panel's meters chart: 40 rounds, a lookup each


def _listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    counted: list[str] = []
    real: Callable[[str | Path], list[str]] = os.listdir

    def listdir(path: str | Path) -> list[str]:
        counted.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)  # the one os module: seals.py calls os.listdir
    return counted


def _sealed_directory(tmp_path: Path, count: int) -> Path:
    """A journal path whose segments directory holds ``count`` seals' names (the listing reads names
    only), its times set an hour back: a directory last changed long ago."""
    journal = tmp_path / "journal.sqlite"
    directory = segments_dir(journal)
    directory.mkdir()
    for number in range(1, count + 1):
        seal_file(journal, number).write_text("{}")
        (directory / f"segment-{number:06d}.sqlite").write_bytes(b"")
    hour_ago_ns = os.stat(directory).st_mtime_ns - 3_600_000_000_000
    os.utime(directory, ns=(hour_ago_ns, hour_ago_ns))
    return journal


def _settled_clock(monkeypatch: pytest.MonkeyPatch, journal: Path) -> None:
    """The listing's clock well after every change of the directory so far (its change time included,
    which utime cannot set back)."""
    status = os.stat(segments_dir(journal))
    later_ns = max(status.st_mtime_ns, status.st_ctime_ns) + 10 * getattr(seals, "_SETTLED_NS", 2_000_000_000)
    monkeypatch.setattr(seals, "_clock_ns", lambda: later_ns, raising=False)


def test_the_listing_is_read_once_while_the_directory_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = _sealed_directory(tmp_path, 100)
    _settled_clock(monkeypatch, journal)
    counted = _listings(monkeypatch)
    for _ in range(LOOKUPS):
        assert seal_numbers(journal) == list(range(1, 101))
    assert len(counted) == 1, f"{len(counted)} listings of the segments directory for {LOOKUPS} lookups"


def test_another_process_seal_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = _sealed_directory(tmp_path, 3)
    _settled_clock(monkeypatch, journal)
    assert seal_numbers(journal) == [1, 2, 3]
    new_seal = seal_file(journal, 4)
    subprocess.run(
        [sys.executable, "-c", f"open({str(new_seal)!r}, 'w').write('{{}}')"], check=True, timeout=60
    )
    assert seal_numbers(journal) == [1, 2, 3, 4]  # the directory's time moved: listed afresh


def test_a_seal_of_this_process_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = _sealed_directory(tmp_path, 3)
    _settled_clock(monkeypatch, journal)
    assert seal_numbers(journal) == [1, 2, 3]
    segments._write_atomically(seal_file(journal, 4), b"{}")  # how seal_open_segment writes a seal
    assert seal_numbers(journal) == [1, 2, 3, 4]


def test_a_listing_of_a_directory_just_changed_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within the file system's timestamp granularity a second change may keep the directory's time: a
    listing taken less than _SETTLED_NS after the last change is used once, not kept."""
    journal = _sealed_directory(tmp_path, 3)
    status = os.stat(segments_dir(journal))
    just_after_ns = max(status.st_mtime_ns, status.st_ctime_ns) + 1_000_000
    monkeypatch.setattr(seals, "_clock_ns", lambda: just_after_ns)
    counted = _listings(monkeypatch)
    assert seal_numbers(journal) == [1, 2, 3]
    assert seal_numbers(journal) == [1, 2, 3]
    assert len(counted) == 2
