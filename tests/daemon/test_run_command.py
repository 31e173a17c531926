"""`flushtable run` as an operator starts it, in a subprocess: the embedded default plays and settles
rounds and exits 0; SIGTERM in the middle of a round shuts down cleanly (exit 0, the journal verifies,
the round finished, or is voided at the next start)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.daemon.crash import journal_kinds_count
from tests.daemon.harness import (
    FLUSHTABLE,
    check_every_round_closed_once,
    check_recall_settles,
    entries,
    flushtable,
)


def test_embedded_default_plays_two_rounds_and_exits_0(tmp_path: Path) -> None:
    # No --config, no --journal: the embedded default, its journal in ./var/ under the working directory.
    completed = subprocess.run(
        [FLUSHTABLE, "run", "--rounds", "2", "--seed", "3", "--no-panel"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "NOTIFY_SOCKET": ""},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.count("SETTLED") + completed.stdout.count("DEAD") >= 2, completed.stdout
    journal_path = tmp_path / "var" / "journal.sqlite"
    journal = entries(journal_path)
    closings = check_every_round_closed_once(journal)
    assert closings["round_settled"] >= 1
    check_recall_settles(journal_path)
    assert flushtable("journal", "verify", "--journal", str(journal_path)).returncode == 0


def test_sigterm_mid_round_shuts_down_cleanly(tmp_path: Path) -> None:
    journal_path = tmp_path / "journal.sqlite"
    # Real time (not accelerated): a round takes seconds, so the signal lands inside one.
    process = subprocess.Popen(
        [
            FLUSHTABLE,
            "run",
            "--seed",
            "2",
            "--no-panel",
            "--journal",
            str(journal_path),
            "--log-level",
            "info",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline_s = time.monotonic() + 45
        while journal_kinds_count(journal_path, "card_dealt") == 0:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline_s, "no card was dealt in 45 s"
            time.sleep(0.02)
        rounds_started = journal_kinds_count(journal_path, "round_started")
        process.send_signal(signal.SIGTERM)
        _stdout, stderr = process.communicate(timeout=45)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    assert '"stop_requested"' in stderr
    journal = entries(journal_path)
    assert journal[-1].kind == "table_closed"
    assert flushtable("journal", "verify", "--journal", str(journal_path)).returncode == 0
    # No new round started after the signal; the round in play either finished (settled or dead)
    # before the exit, or is open and voided by recovery at the next start.
    assert journal_kinds_count(journal_path, "round_started") == rounds_started
    open_rounds = {e.round_id for e in journal if e.kind == "round_started"} - {
        e.round_id for e in journal if e.kind in ("round_settled", "round_dead", "round_voided")
    }
    if open_rounds:
        restart = flushtable(
            "run",
            "--rounds",
            "1",
            "--seed",
            "3",
            "--no-panel",
            "--journal",
            str(journal_path),
            "--time-scale",
            "50",
        )
        assert restart.returncode == 0, restart.stderr[-3000:]
        voided = [e for e in entries(journal_path) if e.kind == "round_voided"]
        assert {e.round_id for e in voided} == open_rounds
        assert all(e.source == "recovery" for e in voided)
    check_every_round_closed_once(entries(journal_path)) if open_rounds else None
    check_recall_settles(journal_path)
