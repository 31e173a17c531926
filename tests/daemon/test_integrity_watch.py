"""The daemon's integrity watch (controller/integrity_watch.py, TableDaemon.check_integrity): a biased
shoe raises one `integrity` alert through the engine, a fair one none; the check reads a bounded window
of a real SQLite journal through its own read-only connection, in a child process.

No mock: the journal is a real file; the daemon is the real TableDaemon, running in the simulation
harness on its simulated devices (with nobody playing, unless a test says so)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from structlog.testing import capture_logs

from controller.cli import main
from controller.config import load_config
from controller.daemon import TableDaemon
from controller.engine import JournalRecord
from controller.integrity_watch import (
    alert_for_verdict,
    check_journal,
    check_journal_in_process,
    integrity_alert_for,
    window_records,
)
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.store import Journal
from controller.panel.view import TableView
from controller.simulation.table import SimulatedTable
from tests.daemon.harness import simulated_table
from tests.device_harness.leaks import run_async
from tests.integrity_sim import hcf_records


def biased(rounds: int, seed: int) -> list[dict[str, Any]]:
    """Spades 1.5x as likely to come next: flagged within 200 rounds (tests/test_integrity.py)."""
    return hcf_records(rounds, seed=seed, heavy_suit=3, weight=1.5)


def round_entries(journal_table_id: str, number: int, record: dict[str, Any]) -> list[JournalRecord]:
    """One simulated round as the engine journals its start and its close (what the check reads),
    typed as the engine types them (``JournalRecord.of``: the settle input and hands go private). The
    check is about a shoe's statistics over hundreds of rounds, so the rounds come from the simulated
    shoe of tests/integrity_sim.py rather than from playing the engine that many times."""
    round_id = f"R{journal_table_id}-20261129-{number:06d}"
    round_ = record["round"]
    started = {
        "round_id": round_id,
        "game": round_["game"],
        "banking": round_["banking"],
        "seats": [seat["seat"] for seat in round_["seats"]],
    }
    return [
        JournalRecord.of("round_started", started, round_id, "engine"),
        JournalRecord.of(
            "round_settled", {"round": round_, "settlement": record["settlement"]}, round_id, "engine"
        ),
    ]


def write_rounds(journal: Journal, records: Sequence[dict[str, Any]], *, first: int = 1) -> None:
    """The simulated shoe's rounds in a real journal (one transaction: fast on a real file)."""
    journal.append_many(
        [
            entry
            for number, record in enumerate(records, start=first)
            for entry in round_entries(journal.table_id, number, record)
        ]
    )


# --- the decision ---------------------------------------------------------------------------------
def test_a_biased_shoe_alerts_once_and_not_again_while_the_alarm_stands() -> None:
    records = biased(200, 1001)
    detail = integrity_alert_for(records, None)
    assert detail is not None
    assert detail.startswith("cards or results do not look random: ")
    assert detail.endswith("(last 200 settled rounds)")
    assert integrity_alert_for(records, "pass") == detail
    assert integrity_alert_for(records, "insufficient data") == detail
    assert integrity_alert_for(records, "alarm") is None  # told once: no spam


def test_a_fair_shoe_and_too_few_rounds_raise_nothing() -> None:
    assert integrity_alert_for(hcf_records(300, seed=7), None) is None  # passes (tests/test_integrity.py)
    assert integrity_alert_for(hcf_records(300, seed=7), "alarm") is None  # back to pass: no alert
    assert integrity_alert_for(biased(3, 1), None) is None  # insufficient data


# --- the journal window ---------------------------------------------------------------------------
def test_check_journal_reads_only_the_last_rounds_of_a_real_journal(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    with Journal.open(path, "T1") as journal:
        write_rounds(journal, biased(300, 1002))  # rounds 1-300: a biased shoe (alarms on its own)
        write_rounds(journal, hcf_records(300, seed=7), first=301)  # rounds 301-600: a fair one
        window = window_records(journal, 300)
    assert [record["round_id"] for record in window[:1] + window[-1:]] == [
        "RT1-20261129-000301",
        "RT1-20261129-000600",
    ]
    assert {record["status"] for record in window} == {"settled"}
    assert set(window[0]) == {"round_id", "status", "round", "settlement"}  # no events read
    fair_window = check_journal(path, 300)
    assert (fair_window.status, fair_window.rounds_checked) == ("pass", 300)
    whole = check_journal(path, 600)
    assert (whole.status, whole.rounds_checked) == ("alarm", 600)
    assert alert_for_verdict(whole, "pass") is not None


# --- the daemon ------------------------------------------------------------------------------------
T = TypeVar("T")


def journal_of(path: Path, records: Sequence[dict[str, Any]]) -> None:
    """A table's journal holding ``records``, with its anchor, as a daemon that played them leaves it."""
    with Journal.open(path, load_config(None).table_id) as journal:
        write_rounds(journal, records)
        last = journal.last_entry()
        assert last is not None
        write_anchor(path, Anchor.of(journal.table_id, last.seq, last.hash))


def with_daemon(
    path: Path, work: Callable[[TableDaemon], Awaitable[T]], *, timeout_s: float = 60.0, **options: Any
) -> T:
    """Run the daemon on ``path`` (nobody at the table), await ``work(daemon)`` once it runs, then stop
    it as SIGTERM would; ``work``'s result, or its error."""
    outcome: dict[str, Any] = {}

    async def companion(table: SimulatedTable) -> None:
        try:
            outcome["result"] = await work(table.daemon)
        except Exception as error:  # handed to the test below, not to the daemon
            outcome["error"] = error
        table.daemon.request_stop()

    options.setdefault("autoplay", False)
    options.setdefault("print_rounds", False)
    table = simulated_table(load_config(None), path, companions=[companion], **options)
    run_async(table.run, timeout_s=timeout_s)
    if "error" in outcome:
        raise outcome["error"]
    return cast(T, outcome["result"])


def integrity_faults(path: Path) -> list[dict[str, Any]]:
    with Journal.open_existing(path) as journal:
        return [
            {**entry.payload, "round_id": entry.round_id}
            for entry in journal.entries(kinds=["fault_raised"])
            if entry.payload["kind"] == "integrity"
        ]


def test_the_daemon_raises_one_integrity_alert_that_the_panel_shows(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    journal_of(path, biased(200, 1003))

    async def check_twice(daemon: TableDaemon) -> tuple[str | None, bool]:
        await daemon.check_integrity()
        await daemon.check_integrity()  # the alarm stands: no second alert
        return daemon.integrity_status, daemon.engine.view().held

    with capture_logs() as logs:
        status, held = with_daemon(path, check_twice)
    assert status == "alarm"
    checked = [line for line in logs if line["event"] == "integrity_checked"]
    assert [(line["status"], line["log_level"], line["rounds_checked"]) for line in checked] == [
        ("alarm", "warning", 200),
        ("alarm", "warning", 200),
    ]
    (fault,) = integrity_faults(path)
    assert fault["severity"] == "alert"
    assert fault["by"] == "integrity"
    assert fault["round_id"] is None
    # A structured reason: the verdict's words are statistics of many rounds, public, never a card.
    assert set(fault["reason"]) == {"code", "message"}
    assert fault["reason"]["code"] == "integrity_check"
    assert str(fault["reason"]["message"]).startswith("cards or results do not look random: ")
    assert "detail" not in fault
    assert not held  # an alert, not a hold: the table plays on
    # The panel's view of the journal shows it as an open integrity alert.
    view = TableView()
    with Journal.open_existing(path) as journal:
        for entry in journal.entries():
            view.apply(entry)
    alert = view.state.alerts[str(fault["fault_id"])]
    assert (alert.kind, alert.severity, alert.state) == ("integrity", "alert", "active")


def test_the_daemon_raises_nothing_for_a_fair_table(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    journal_of(path, hcf_records(300, seed=7))

    async def check(daemon: TableDaemon) -> str | None:
        await daemon.check_integrity()
        return daemon.integrity_status

    assert with_daemon(path, check) == "pass"
    assert integrity_faults(path) == []


def test_a_failed_check_is_logged_and_the_table_goes_on(tmp_path: Path) -> None:
    async def check_elsewhere(daemon: TableDaemon) -> tuple[str | None, bool]:
        # The integrity watch (DaemonWatches) reads a journal that is not there: the check cannot read it.
        daemon.watches.journal_path = tmp_path / "elsewhere.sqlite"
        await daemon.check_integrity()
        daemon.watches.journal_path = tmp_path / "journal.sqlite"
        return daemon.integrity_status, daemon.stopping

    with capture_logs() as logs:
        status, stopping = with_daemon(tmp_path / "journal.sqlite", check_elsewhere)
    assert status is None
    assert not stopping
    (failed,) = [line for line in logs if line["event"] == "integrity_check_failed"]
    assert "elsewhere.sqlite: no such file" in failed["error"]


@pytest.mark.parametrize(("every", "rounds"), [(2, 4), (0, 4)])
def test_closed_rounds_start_a_check_every_n_rounds(tmp_path: Path, every: int, rounds: int) -> None:
    """`integrity_every_rounds` closed rounds start a check (off the loop); 0 disables the watch. The
    simulated people play ``rounds`` rounds; the daemon then waits for the checks the rounds started
    (bounded), as the integrity task's log lines show."""
    path = tmp_path / "journal.sqlite"

    def checks_done(logs: Sequence[Mapping[str, Any]]) -> int:
        return sum(line["event"] in ("integrity_checked", "integrity_check_skipped") for line in logs)

    async def play(daemon: TableDaemon) -> int:
        async with asyncio.timeout(50):
            while daemon.summary.rounds_closed < rounds or checks_done(logs) < (
                rounds // every if every else 0
            ):
                await asyncio.sleep(0.02)
        return daemon.summary.rounds_closed

    with capture_logs() as logs:
        closed = with_daemon(path, play, autoplay=True, seed=5, time_scale=50.0, integrity_every_rounds=every)
    started = [line for line in logs if line["event"] in ("integrity_checked", "integrity_check_skipped")]
    # Every check the first ``rounds`` rounds started has logged; one started later may have been cut
    # short by the stop (only its wait is cancelled: nothing logged).
    assert (rounds // every if every else 0) <= len(started) <= (closed // every if every else 0)
    assert all(line["status"] != "alarm" for line in started if line["event"] == "integrity_checked")
    assert integrity_faults(path) == []


def test_run_refuses_a_negative_integrity_interval_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--integrity-every", "-1", "--no-panel"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "flushtable run: --integrity-every: must be 0 (never) or more, not -1"
    ]


def test_a_check_cancelled_by_the_daemon_stopping_kills_its_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal.sqlite"
    with Journal.open(path, load_config(None).table_id) as journal:
        write_rounds(journal, hcf_records(50, seed=3))
    started: list[asyncio.subprocess.Process] = []
    real_exec = asyncio.create_subprocess_exec

    async def recording_exec(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        process = await real_exec(*args, **kwargs)
        started.append(process)
        return process

    monkeypatch.setattr(asyncio, "create_subprocess_exec", recording_exec)  # the module calls it so

    async def main() -> int | None:
        task = asyncio.get_running_loop().create_task(check_journal_in_process(path, 50))
        async with asyncio.timeout(30):  # bounded: the child starts
            while not started:
                await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return started[0].returncode

    assert asyncio.run(main()) == -9  # killed and reaped, not left running
