"""A Ctrl-C or SIGTERM while `flushtable run` is still starting.

- During the journal's proof (synchronous, seconds on a long open segment): the start is cancelled at
  once, nothing is appended (no `table_opened`), the process says so and exits 0. Before, the daemon
  installed its handlers only after `table_opened`: a SIGTERM there ended the process by its default
  action (exit -15) where no exit path ran, and (a first fix) a handler on the loop only ran after the
  proof, so the cancelled table opened anyway.
- Just after the proof: the table opens and stops cleanly (exit 0, "stopping: no round in play", no
  round started).

The signal is sent by the process to itself at a known point of the real start (a wrapper of the proof,
``prepare_for_run``, or of the recovery that follows it, in a child process; no clock)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.daemon.harness import entries, flushtable

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import controller.daemon as daemon
    import controller.daemon_journal as daemon_journal

    real_prepare = daemon_journal.prepare_for_run
    real_recover = daemon.recover

    def prepare_with_a_signal(*arguments, **options):
        os.kill(os.getpid(), signal.SIGTERM)  # delivered now, inside the proof
        return real_prepare(*arguments, **options)

    def recover_after_a_signal(*arguments, **options):
        os.kill(os.getpid(), signal.SIGTERM)  # the proof has ended: recovery, then the table opens
        return real_recover(*arguments, **options)

    if sys.argv[2] == "during":
        daemon_journal.prepare_for_run = prepare_with_a_signal
    else:
        daemon.recover = recover_after_a_signal
    from controller.cli import main

    sys.exit(main(["run", "--journal", sys.argv[1], "--rounds", "2", "--no-panel", "--seed", "3"]))
    """
)


@pytest.mark.parametrize("when", ["during", "after"])
def test_a_sigterm_at_the_start_never_ends_the_process_by_default(tmp_path: Path, when: str) -> None:
    journal_path = tmp_path / "journal.sqlite"
    first = flushtable("run", "--journal", str(journal_path), "--rounds", "1", "--no-panel", "--seed", "3")
    assert first.returncode == 0, first.stderr[-3000:]
    before = [entry.kind for entry in entries(journal_path)]
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(journal_path), when],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert child.returncode == 0, (child.returncode, child.stderr[-3000:])
    after = [entry.kind for entry in entries(journal_path)]
    assert after[: len(before)] == before
    added = after[len(before) :]
    if when == "during":
        assert "stopping: SIGTERM while the journal proved itself before the table opened" in child.stderr
        assert added == []  # the cancelled start appended nothing
    else:
        assert "stopping: no round in play" in child.stderr
        assert "table_opened" in added
        assert "round_started" not in added
    assert not list(tmp_path.glob("*.tmp-*"))
    assert flushtable("journal", "verify", "--journal", str(journal_path)).returncode == 0
