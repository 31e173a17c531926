"""A SIGTERM that comes while `flushtable run` is still starting (the journal proving itself, which
takes seconds on a long open segment) stops the table cleanly once it has opened: exit 0, the stop said
on standard error, no round started, the journal verifies. Before, the daemon installed its handlers
only after `table_opened`, so such a signal ended the process by its default action (exit -15), where no
exit path ran (a temporary file of the anchor's left behind, the stop not said).

The signal is sent by the process to itself at the moment the start opens its journal: a real signal at
a known point of the real start (a wrapper of ``DaemonJournal.open`` in a child process; no clock)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.daemon.harness import entries, flushtable

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from controller.daemon_journal import DaemonJournal

    real_open = DaemonJournal.open

    def open_after_a_sigterm(self, **options):
        os.kill(os.getpid(), signal.SIGTERM)  # delivered now: the start is still proving its journal
        return real_open(self, **options)

    DaemonJournal.open = open_after_a_sigterm
    from controller.cli import main

    sys.exit(main(["run", "--journal", sys.argv[1], "--rounds", "2", "--no-panel", "--seed", "3"]))
    """
)


def test_a_sigterm_during_the_start_stops_the_table_cleanly_once_open(tmp_path: Path) -> None:
    journal_path = tmp_path / "journal.sqlite"
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(journal_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert child.returncode == 0, (child.returncode, child.stderr[-3000:])
    assert "stopping: no round in play" in child.stderr
    kinds = [entry.kind for entry in entries(journal_path)]
    assert "table_opened" in kinds
    assert "round_started" not in kinds
    assert not list(tmp_path.glob("*.tmp-*"))
    assert flushtable("journal", "verify", "--journal", str(journal_path)).returncode == 0
