"""The anchor's write-then-rename leaves no temporary behind (docs/journal.md "The anchor"): a signal's
exception mid-write takes its temporary with it, and a writer killed outright (SIGKILL, or SIGTERM
before `run` handles it) leaves one that the next `flushtable run` removes, while a writer still
running keeps its own. Real files, real processes, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from controller.journal.anchor import Anchor, anchor_path, read_anchor, write_anchor
from tests.journal.test_startup_proof import WAIT_S, flushtable, run_command

# A writer held inside write_anchor after its temporary is written, before the rename: it says so on
# standard output and waits on standard input (never answered), so the test kills it at that point.
_HELD_WRITER = """
import os, sys
from controller.journal.anchor import read_anchor, write_anchor
path = sys.argv[1]
def held(descriptor: int) -> None:
    print("writing", flush=True)
    sys.stdin.read()
os.fsync = held
write_anchor(path, read_anchor(path))
"""


def temporaries(journal: Path) -> list[str]:
    anchor = anchor_path(journal)
    return sorted(name for name in os.listdir(journal.parent) if name.startswith(f"{anchor.name}.tmp-"))


@pytest.fixture
def held_writer(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A journal played by `flushtable run`, and a process held in the middle of writing its anchor."""
    journal = tmp_path / "journal.sqlite"
    completed = flushtable(*run_command(journal, rounds=1, seed=2))
    assert completed.returncode == 0, completed.stderr[-3000:]
    writer = subprocess.Popen(
        [sys.executable, "-c", _HELD_WRITER, str(journal)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "writing"  # bounded: the process ends if it fails
        yield journal, writer
    finally:
        writer.kill()
        writer.wait(timeout=WAIT_S)


def test_a_signal_mid_write_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM delivered while the temporary is being written, its handler raising SystemExit (what a
    process that exits on the signal does): the write is abandoned and its temporary with it. The
    signal is real; os.fsync is wrapped only to send it at that moment."""
    journal = tmp_path / "journal.sqlite"
    before = write_anchor(journal, Anchor.genesis("T1"))
    real_fsync = os.fsync

    def fsync_then_signalled(descriptor: int) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        real_fsync(descriptor)

    def exit_on_signal(number: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + number)

    previous = signal.signal(signal.SIGTERM, exit_on_signal)
    try:
        monkeypatch.setattr(os, "fsync", fsync_then_signalled)
        with pytest.raises(SystemExit):
            write_anchor(journal, Anchor.of("T1", 1, "a" * 64))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert temporaries(journal) == []
    assert read_anchor(journal) == before  # the old anchor, whole


def test_a_killed_writers_temporary_is_removed_at_the_next_start(
    held_writer: tuple[Path, subprocess.Popen[str]],
) -> None:
    journal, killed = held_writer
    left = temporaries(journal)
    assert left == [f"{anchor_path(journal).name}.tmp-{killed.pid}"]
    killed.kill()
    killed.wait(timeout=WAIT_S)
    assert temporaries(journal) == left  # a kill leaves it: no exit path of the writer ran
    completed = flushtable(*run_command(journal, rounds=1, seed=3))
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert temporaries(journal) == []


def test_a_running_writers_temporary_is_kept(held_writer: tuple[Path, subprocess.Popen[str]]) -> None:
    journal, running = held_writer
    left = temporaries(journal)
    assert left == [f"{anchor_path(journal).name}.tmp-{running.pid}"]
    completed = flushtable(*run_command(journal, rounds=1, seed=3))
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert running.poll() is None
    assert temporaries(journal) == left  # still being written: not the start's to remove
