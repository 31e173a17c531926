"""Paths and errors an operator understands (issue 14 item 6), through the real `flushtable` command:

- a relative ``--journal`` is taken from the working directory, from any directory; a relative device
  path in a configuration file from the file's own directory;
- a journal that cannot be written (a full disk, a read-only disk) is said in one line naming the file
  and why, with no traceback at any log level, and the chain already written stays whole;
- a start refused by its checks journals nothing.

The full disk is real: the file-size limit of the daemon's process (RLIMIT_FSIZE, which SQLite reports
as SQLITE_FULL like ENOSPC) in every run, and a 400 KiB tmpfs when the tests run as root."""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from controller.config import load_config

ROOT = Path(__file__).resolve().parents[2]
RUN = ["run", "--no-panel", "--time-scale", "50", "--seed", "1"]


def flushtable(
    *args: str, cwd: Path, limit: Callable[[], None] | None = None, timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NOTIFY_SOCKET": ""},
        preexec_fn=limit,  # only setrlimit, before exec
    )


def entry_count(journal_path: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{journal_path}?mode=ro", uri=True)) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM journal").fetchone()[0])


def test_a_relative_journal_from_another_directory(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = flushtable(*RUN, "--journal", "j.sqlite", "--rounds", "1", cwd=elsewhere)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert (elsewhere / "j.sqlite").exists()
    assert "SETTLED" in done.stdout or "DEAD" in done.stdout
    verified = flushtable("journal", "verify", "--journal", "j.sqlite", cwd=elsewhere)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_relative_paths_in_a_configuration_are_the_files_own(tmp_path: Path) -> None:
    table_dir = tmp_path / "table"
    table_dir.mkdir()
    from controller.config import DEFAULT_CONFIG_TOML

    key = "ab" * 32
    config_text = DEFAULT_CONFIG_TOML.replace(
        'url = "sim+pty://shuffler"', f'url = "devices/shuffler"\nkey = "{key[:-2]}cd"'
    ).replace('path = "var/journal.sqlite"', 'path = "journal/j.sqlite"')
    (table_dir / "table.toml").write_text(config_text)
    started_in = tmp_path / "started-here"
    started_in.mkdir()
    previous = Path.cwd()
    os.chdir(started_in)
    try:
        config = load_config(Path("../table/table.toml"))
    finally:
        os.chdir(previous)
    assert config.devices["shuffler"].url == str(table_dir / "devices" / "shuffler")
    assert config.journal_path == table_dir / "journal" / "j.sqlite"


def _file_size_limit(limit_bytes: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return limit


def check_full_disk_run(done: subprocess.CompletedProcess[str], journal_path: Path, why: str) -> None:
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"flushtable run: the table stopped: journal {journal_path}: cannot append ")
    assert why in last
    assert last.endswith("; nothing was written")
    assert "internal error" not in done.stderr


def test_a_full_disk_is_one_line_naming_the_file_and_why(tmp_path: Path) -> None:
    journal_path = tmp_path / "j.sqlite"
    # debug: the most an operator's log level shows; the WAL reaches 300 KiB within a few rounds.
    done = flushtable(
        *RUN,
        "--journal",
        str(journal_path),
        "--log-level",
        "debug",
        cwd=tmp_path,
        limit=_file_size_limit(300_000),
    )
    check_full_disk_run(
        done, journal_path, "the file-size limit of this process (ulimit -f) is reached: 300,000 bytes"
    )
    # What was committed stays, chained and whole.
    verified = flushtable("journal", "verify", "--journal", str(journal_path), cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert entry_count(journal_path) > 2


@contextlib.contextmanager
def tiny_tmpfs(where: Path, size: str = "400k") -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_really_full_disk_and_a_read_only_one(tmp_path: Path) -> None:
    with tiny_tmpfs(tmp_path / "disk") as disk:
        journal_path = disk / "j.sqlite"
        done = flushtable(*RUN, "--journal", str(journal_path), "--log-level", "debug", cwd=tmp_path)
        check_full_disk_run(done, journal_path, f"no space left on the disk holding {disk} (")
        entries = entry_count(journal_path)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        again = flushtable(*RUN, "--journal", str(journal_path), "--log-level", "debug", cwd=tmp_path)
        assert again.returncode == 2
        assert "Traceback" not in again.stderr
        # Recovery's first append (voiding the round the full disk cut short) is refused, in one line.
        last = again.stderr.strip().splitlines()[-1]
        assert last.startswith(f"flushtable run: journal {journal_path}: cannot ")
        assert f"Read-only file system ({journal_path}) (SQLITE_" in last
        assert entry_count(journal_path) == entries


def test_a_start_refused_by_its_checks_journals_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = flushtable(
            "run", "--journal", "j.sqlite", "--rounds", "1", "--panel", f"127.0.0.1:{port}", cwd=tmp_path
        )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"flushtable run: --panel 127.0.0.1:{port}: cannot listen there: Address already in use"
    ]
    assert not (tmp_path / "j.sqlite").exists()
    bad_config = tmp_path / "bad.toml"
    bad_config.write_text("[table]\nid = 3\n")
    done = flushtable("run", "--config", "bad.toml", "--journal", "j.sqlite", "--no-panel", cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "j.sqlite").exists()
