"""Ctrl-C on a real `flushtable run` subprocess (issue 17 item 9): real SIGINTs (and a SIGTERM) to a
simulated table on an accelerated clock, with and without its panel.

The simulated players walk away from every decision (--sim-walk-away-rate 1), so the signal lands
while the round in play waits out its decision timeout: the longest a round can stall on the people.
One signal: "stopping: ..." on standard error at once, and exit 0 within the decision timeout + 1 s.
Two: exit within 2 s of the second. Either way the journal verifies and the next start voids the open
round. Times are measured on the monotonic clock and printed; the asserts add LOAD_ALLOWANCE_S so a
loaded machine (2 cores shared) does not fail them; docs/operations.md has the measured figures.

Also: the simulated players walk away only when asked (the demo never stalls on one)."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from controller.daemon_stop import StopRequest
from tests.daemon.crash import journal_kinds_count
from tests.daemon.harness import FLUSHTABLE, entries, flushtable, run_daemon, write_config

TIME_SCALE = 10.0
DECISION_WALL_S = 30.0 / TIME_SCALE  # the embedded default's decision timeout (30 s) on that clock
LOAD_ALLOWANCE_S = 4.0  # a loaded machine's slack on top of each bound
FIRST_MESSAGE = "stopping: the round in play finishes first (up to 3 s: the decision timeout)"
SECOND_MESSAGE = "stopping now: the open round is voided with every wager returned at the next start"


class Table:
    """`flushtable run` in a subprocess, its standard error read as it comes (line, monotonic time)."""

    def __init__(self, journal_path: Path, *, panel: bool) -> None:
        self.journal_path = journal_path
        self.lines: list[tuple[float, str]] = []
        self.process = subprocess.Popen(
            [
                FLUSHTABLE,
                "run",
                "--seed",
                "4",
                "--journal",
                str(journal_path),
                "--time-scale",
                str(TIME_SCALE),
                "--sim-walk-away-rate",
                "1",
                "--log-level",
                "warning",
                *(["--panel", "127.0.0.1:0"] if panel else ["--no-panel"]),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "NOTIFY_SOCKET": ""},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def stderr(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def wait_for_a_stalled_round(self) -> None:
        """Until the cards of a round are dealt: its players then walk away, and it waits out the
        decision timeout (bounded wait on the journal)."""
        deadline_s = time.monotonic() + 45
        while journal_kinds_count(self.journal_path, "card_dealt") == 0:
            assert self.process.poll() is None, self.stderr()
            assert time.monotonic() < deadline_s, "no card was dealt in 45 s"
            time.sleep(0.02)

    def said(self, text: str, timeout_s: float) -> float:
        """When ``text`` appeared on standard error (monotonic), waiting up to ``timeout_s``."""
        deadline_s = time.monotonic() + timeout_s
        while time.monotonic() < deadline_s:
            for at_s, line in list(self.lines):
                if text in line:
                    return at_s
            time.sleep(0.01)
        raise AssertionError(f"{text!r} not on standard error:\n{self.stderr()}")

    def exit_time(self, timeout_s: float) -> float:
        """When the process exited (monotonic), waiting up to ``timeout_s``; its exit status is 0."""
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"still running after {timeout_s} s:\n{self.stderr()}") from None
        exited_s = time.monotonic()
        self._reader.join(timeout=5)
        assert self.process.returncode == 0, self.stderr()
        assert "Traceback" not in self.stderr()
        return exited_s

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def check_journal_and_restart(journal_path: Path) -> set[str | None]:
    """The journal verifies, ends in table_closed; the next start voids the open rounds (returned)."""
    assert flushtable("journal", "verify", "--journal", str(journal_path)).returncode == 0
    journal = entries(journal_path)
    assert journal[-1].kind == "table_closed"
    open_rounds = {e.round_id for e in journal if e.kind == "round_started"} - {
        e.round_id for e in journal if e.kind in ("round_settled", "round_dead", "round_voided")
    }
    restart = flushtable(
        *("run", "--rounds", "1", "--seed", "3", "--no-panel", "--time-scale", "50"),
        *("--journal", str(journal_path)),
    )
    assert restart.returncode == 0, restart.stderr[-3000:]
    voided = {
        e.round_id for e in entries(journal_path) if e.kind == "round_voided" and e.source == "recovery"
    }
    assert voided == open_rounds
    assert flushtable("journal", "verify", "--journal", str(journal_path)).returncode == 0
    return open_rounds


@pytest.mark.parametrize(
    ("signal_number", "panel"),
    [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["sigint-no-panel", "sigint-panel", "sigterm-no-panel"],
)
def test_one_signal_says_so_at_once_and_stops_within_the_decision_timeout(
    tmp_path: Path, signal_number: signal.Signals, panel: bool
) -> None:
    journal_path = tmp_path / "journal.sqlite"
    table = Table(journal_path, panel=panel)
    try:
        table.wait_for_a_stalled_round()
        rounds_started = journal_kinds_count(journal_path, "round_started")
        signalled_s = time.monotonic()
        table.process.send_signal(signal_number)
        said_s = table.said(FIRST_MESSAGE, timeout_s=DECISION_WALL_S + 1 + LOAD_ALLOWANCE_S)
        exited_s = table.exit_time(timeout_s=60)
    finally:
        table.close()
    print(
        f"\n{signal_number.name} panel={panel}: message after {said_s - signalled_s:.3f} s, "
        f"exit after {exited_s - signalled_s:.3f} s (bound {DECISION_WALL_S + 1:g} s)"
    )
    assert said_s - signalled_s < 1 + LOAD_ALLOWANCE_S
    assert exited_s - signalled_s < DECISION_WALL_S + 1 + LOAD_ALLOWANCE_S
    assert SECOND_MESSAGE not in table.stderr()
    assert journal_kinds_count(journal_path, "round_started") == rounds_started  # no new round
    check_journal_and_restart(journal_path)


@pytest.mark.parametrize("panel", [False, True], ids=["no-panel", "panel"])
def test_a_second_sigint_stops_at_once_and_the_next_start_voids_the_round(
    tmp_path: Path, panel: bool
) -> None:
    journal_path = tmp_path / "journal.sqlite"
    table = Table(journal_path, panel=panel)
    try:
        table.wait_for_a_stalled_round()
        table.process.send_signal(signal.SIGINT)
        table.said(FIRST_MESSAGE, timeout_s=DECISION_WALL_S)
        second_s = time.monotonic()
        table.process.send_signal(signal.SIGINT)
        exited_s = table.exit_time(timeout_s=60)
    finally:
        table.close()
    print(f"\nsecond SIGINT panel={panel}: exit after {exited_s - second_s:.3f} s (bound 2 s)")
    assert exited_s - second_s < 2 + LOAD_ALLOWANCE_S
    assert SECOND_MESSAGE in table.stderr()
    assert "round_left_open" in table.stderr()
    # The round stalled on its walk-aways was left open by the second press: voided at the next start.
    assert check_journal_and_restart(journal_path)


def timeout_decisions(journal_path: Path) -> int:
    return sum(
        1 for e in entries(journal_path) if e.kind == "decision" and e.payload.get("cause") == "timeout"
    )


@pytest.mark.parametrize(("walk_away_rate", "walk_aways"), [(None, False), (0.03, True), (1.0, True)])
def test_the_simulated_players_walk_away_only_when_asked(
    tmp_path: Path, walk_away_rate: float | None, walk_aways: bool
) -> None:
    # The default (make run, `flushtable run` with no option) never waits out a decision timeout on a
    # simulated player; asked for (a soak, --sim-walk-away-rate), every seat walks away.
    options: dict[str, Any] = {} if walk_away_rate is None else {"walk_away_rate": walk_away_rate}
    journal_path = tmp_path / "journal.sqlite"
    # On the harness's 50x clock a 30 s decision timeout is 0.6 s of wall time: a loaded machine that
    # holds the process that long would pass for a walk-away. With none asked for, the timeout is 12 s
    # of wall time (600 s), past any stall, and a player who walked away would still be waited out and
    # counted; the walk-aways asked for keep the short one (each costs the test its timeout).
    decision_s = 30.0 if walk_aways else 600.0
    config = write_config(tmp_path, "hcf-house", decision_s=decision_s)
    run_daemon(config, journal_path, rounds=12, seed=7, autoplay=True, **options)
    assert (timeout_decisions(journal_path) > 0) is walk_aways


@pytest.mark.parametrize("rate", ["2", "-0.1", "nan"])
def test_a_walk_away_rate_out_of_range_is_one_line(tmp_path: Path, rate: str) -> None:
    journal_path = tmp_path / "journal.sqlite"
    done = flushtable("run", "--no-panel", "--journal", str(journal_path), "--sim-walk-away-rate", rate)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"flushtable run: --sim-walk-away-rate: must be from 0 to 1, not {float(rate)}"
    ]
    assert not journal_path.exists()


def test_the_stop_says_what_it_waits_for_and_a_second_signal_ends_the_wait() -> None:
    async def main() -> list[str]:
        err = io.StringIO()
        stop = StopRequest(30.0, err=err)
        stop.signalled(round_in_play=False)
        assert stop.asked.is_set()
        assert not stop.now.is_set()
        stop.signalled(round_in_play=False)
        assert stop.now.is_set()
        started_s = time.monotonic()
        await stop.wait_round(lambda: True)  # a round that would never close: the second signal ends it
        assert time.monotonic() - started_s < 1.0
        return err.getvalue().splitlines()

    assert asyncio.run(main()) == ["stopping: no round in play", "stopping now"]


def test_the_round_wait_ends_at_the_decision_timeout() -> None:
    async def main() -> float:
        stop = StopRequest(0.2, err=io.StringIO())
        started_s = time.monotonic()
        await stop.wait_round(lambda: True)
        return time.monotonic() - started_s

    waited_s = asyncio.run(main())
    assert 0.2 <= waited_s < 0.2 + LOAD_ALLOWANCE_S
