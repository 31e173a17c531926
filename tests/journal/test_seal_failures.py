"""A seal that cannot be made (docs/journal.md "When a seal fails"): every failure is one clear line, the
open segment stays open and whole, and a running table goes on, with a journal_error alert journaled.
Real SQLite files; the daemon is `flushtable run` as a child process."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.config import DEFAULT_CONFIG_TOML, SegmentPolicy
from controller.daemon import daemon_record
from controller.daemon_journal import DaemonJournal
from controller.journal import Journal
from controller.journal import entries as e
from controller.journal.recovery import rebuild_state
from controller.journal.seals import seal_numbers, segments_dir
from controller.journal.segments import SealBusy, seal_open_segment
from controller.journal.state import TableState
from controller.journal.store import JournalError
from tests.journal.test_segments import batches, build

REPO = Path(__file__).resolve().parents[2]


def test_a_seal_while_another_connection_reads_waits_in_one_line_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    build(path, [batches()[:3]])
    with Journal.open_existing(path) as journal:
        state = rebuild_state(journal)
    before = path.read_bytes()
    reader = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM journal").fetchone()  # a read transaction held
        with pytest.raises(SealBusy) as refused:
            seal_open_segment(path, state, key=None)
    finally:
        reader.close()
    line = str(refused.value)
    assert "\n" not in line
    assert "cannot seal now" in line
    assert seal_numbers(path) == []
    assert path.read_bytes() == before
    with Journal.open(path, "T1") as journal:  # the open segment goes on
        assert journal.file.base.segment == 1
    assert seal_open_segment(path, state, key=None) is not None  # and seals once the reader is gone


def test_a_state_that_cannot_be_a_checkpoint_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    build(path, [batches()[:3]])
    with Journal.open_existing(path) as journal:
        state = rebuild_state(journal)
    state.limits = {"table_max_cents": object()}  # a damaged state (a bug): not JSON
    with pytest.raises(JournalError) as refused:
        seal_open_segment(path, state, key=None)
    assert "the checkpoint cannot be written" in str(refused.value)
    assert seal_numbers(path) == []


def _run(config: Path, rounds: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "run", "--config", str(config), "--rounds", str(rounds),
         "--seed", "3", "--no-panel", "--log-level", "warning"],
        capture_output=True, text=True, timeout=300, env=env, check=False, cwd=config.parent,
    )  # fmt: skip


def _seal_alerts(path: Path) -> list[str]:
    """The journal_error alerts journaled for a seal that failed (their fault_raised entries)."""
    with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT payload FROM journal WHERE kind = 'fault_raised' ORDER BY seq").fetchall()
    texts = [str(row[0]) for row in rows]
    return [text for text in texts if "segment not sealed" in text and "journal_error" in text]


@contextlib.contextmanager
def _immutable(directory: Path) -> Iterator[None]:
    """The directory made immutable (chattr +i): nothing is created in it, not even by root, as a
    segments directory on a read-only or foreign mount would refuse."""
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["chattr", "+i", str(directory)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"chattr +i is not available here: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(directory)], capture_output=True, check=False)


def test_a_table_whose_segments_cannot_be_written_goes_on_with_an_alert(tmp_path: Path) -> None:
    """The segments directory refuses every new file: the seal while the table runs fails, and so does
    the next start's; both times the table goes on, a journal_error alert journaled."""
    path = tmp_path / "var" / "journal.sqlite"
    config = tmp_path / "table.toml"
    config.write_text(
        DEFAULT_CONFIG_TOML.replace(
            'path = "var/journal.sqlite"',
            f'path = "{path}"\nsegment_entries = 150\nsegment_per_gaming_day = false',
        )
    )
    with _immutable(segments_dir(path)):
        first = _run(config, 4)
        assert first.returncode == 0, first.stderr[-2000:]
        assert "Traceback" not in first.stderr
        assert "journal_seal_failed" in first.stderr
        assert seal_numbers(path) == []
        assert _seal_alerts(path), first.stderr[-2000:]
        # The next start finds the segment due, fails to seal it, and opens the table all the same.
        alerts = len(_seal_alerts(path))
        second = _run(config, 1)
        assert second.returncode == 0, second.stderr[-2000:]
        assert "Traceback" not in second.stderr
        assert len(_seal_alerts(path)) > alerts
    with Journal.open_existing(path) as journal:
        assert journal.file.base.segment == 1
        assert sum(1 for _ in journal.entries(kinds=["table_opened"])) == 2
    third = _run(config, 1)  # the directory writable again: the start seals the segment
    assert third.returncode == 0, third.stderr[-2000:]
    assert seal_numbers(path) != []


def test_after_a_failed_seal_is_cured_the_next_segment_is_sealed_at_the_policys_size(tmp_path: Path) -> None:
    """A failed live seal waits a tenth of segment_entries before its retry; once a seal succeeds the
    next segment is due by the policy again (the retry bound was kept, so every later segment waited
    for the failed one's size: a reviewer's finding)."""
    path = tmp_path / "journal.sqlite"
    ledger = DaemonJournal(
        path,
        "T1",
        commit_delay_s=10.0,
        idle=lambda: True,
        act=lambda outcome: None,
        notify=lambda: None,
        halt=lambda: None,
        latencies_s=deque(maxlen=10),
    )
    ledger.open(new_journal=True)
    policy = SegmentPolicy(entries=10)
    ledger.seals.seal_while_running(TableState("T1"), policy)
    now = datetime.now(UTC)

    def write(count: int) -> None:
        for _ in range(count):
            ledger.append([daemon_record(e.TableClosed(by="daemon", reason="a test"))])

    try:
        blocker = segments_dir(path)
        blocker.mkdir()
        with _immutable(blocker):
            write(40)
            assert ledger.seals.seal_live_if_due(now) is None
            assert len(ledger.seals.seal_failures) == 1
        write(1)
        cured = ledger.seals.seal_live_if_due(now)
        assert cured is not None
        assert cured.segment == 1
        write(15)  # the next segment past the policy's 10 entries: due
        again = ledger.seals.seal_live_if_due(now)
        assert again is not None, ledger.journal.reader.segment_summary()
        assert again.segment == 2
        assert seal_numbers(path) == [1, 2]
    finally:
        ledger.close()
