"""`make run`'s terminal shows the rounds alone (issue 24: JSON log lines were interleaved with the round
lines): `flushtable run --log-file PATH` appends the log there, as JSON lines, and standard output and
standard error carry no log line. A real subprocess on the embedded default's simulated devices."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.daemon.harness import FLUSHTABLE


def test_the_log_goes_to_its_file_and_the_terminal_shows_rounds(tmp_path: Path) -> None:
    log_path = tmp_path / "var" / "flushtable.log"
    command = [FLUSHTABLE, "run", "--rounds", "2", "--seed", "3", "--no-panel", "--log-level", "info"]
    completed = subprocess.run(
        [*command, "--log-file", str(log_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env={**os.environ, "NOTIFY_SOCKET": ""},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.count("SETTLED") + completed.stdout.count("DEAD") >= 2, completed.stdout
    terminal = completed.stdout + completed.stderr
    assert not [line for line in terminal.splitlines() if line.startswith("{")], terminal[-3000:]
    assert "card_dealt" not in terminal
    logged = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert any(line["event"] == "round_settled" for line in logged)


def test_a_log_file_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    completed = subprocess.run(
        [FLUSHTABLE, "run", "--rounds", "1", "--no-panel", "--log-file", str(tmp_path / "afile" / "x.log")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"flushtable run: --log-file: cannot append to {tmp_path / 'afile'}")
    assert completed.stderr.count("\n") == 1  # one line, no traceback
    assert not (tmp_path / "var").exists()  # refused before the journal was touched
