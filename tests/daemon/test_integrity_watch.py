"""The daemon's integrity watch (controller/integrity_watch.py, TableDaemon.check_integrity): a biased
shoe raises one `integrity` alert through the engine, a fair one none; the check reads a bounded window
of a real SQLite journal through its own read-only connection, in a worker thread.

No mock: the journal is a real file; the daemon is the real TableDaemon with its journal and engine set
up as run() does, without devices (the watch touches neither devices nor the panel)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from controller.cli import main
from controller.config import load_config
from controller.daemon import RunOptions, TableDaemon, engine_config_for
from controller.engine import JournalRecord, TableEngine
from controller.integrity_watch import (
    alert_for_verdict,
    check_journal,
    check_journal_in_process,
    integrity_alert_for,
    window_records,
)
from controller.journal.store import Journal
from controller.panel.view import TableView
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
def daemon_on(path: Path, **options: Any) -> TableDaemon:
    """A TableDaemon with its journal and engine as run() makes them (no devices, no panel)."""
    config = load_config(None)
    daemon = TableDaemon(config, RunOptions(journal_path=path, print_rounds=False, **options))
    daemon._journal = Journal.open(path, config.table_id)
    daemon._engine = TableEngine(engine_config_for(config))
    return daemon


def integrity_faults(path: Path) -> list[dict[str, Any]]:
    with Journal.open_existing(path) as journal:
        return [
            {**entry.payload, "round_id": entry.round_id}
            for entry in journal.entries(kinds=["fault_raised"])
            if entry.payload["kind"] == "integrity"
        ]


def test_the_daemon_raises_one_integrity_alert_that_the_panel_shows(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path)
    try:
        write_rounds(daemon.journal, biased(200, 1003))
        with capture_logs() as logs:
            asyncio.run(daemon.check_integrity())
            asyncio.run(daemon.check_integrity())  # the alarm stands: no second alert
        assert daemon.integrity_status == "alarm"
    finally:
        daemon.journal.close()
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
    assert not daemon.engine.held  # an alert, not a hold: the table plays on
    # The panel's view of the journal shows it as an open integrity alert.
    view = TableView()
    with Journal.open_existing(path) as journal:
        for entry in journal.entries():
            view.apply(entry)
    alert = view.alerts[str(fault["fault_id"])]
    assert (alert.kind, alert.severity, alert.state) == ("integrity", "alert", "active")


def test_the_daemon_raises_nothing_for_a_fair_table(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path)
    try:
        write_rounds(daemon.journal, hcf_records(300, seed=7))
        asyncio.run(daemon.check_integrity())
        assert daemon.integrity_status == "pass"
    finally:
        daemon.journal.close()
    assert integrity_faults(path) == []


def test_a_failed_check_is_logged_and_the_table_goes_on(tmp_path: Path) -> None:
    daemon = daemon_on(tmp_path / "journal.sqlite")
    daemon.journal_path = tmp_path / "elsewhere.sqlite"  # no such journal: the check cannot read it
    try:
        with capture_logs() as logs:
            asyncio.run(daemon.check_integrity())
    finally:
        daemon.journal.close()
    assert daemon.integrity_status is None
    (failed,) = [line for line in logs if line["event"] == "integrity_check_failed"]
    assert "elsewhere.sqlite: no such file" in failed["error"]


@pytest.mark.parametrize(("every", "checks"), [(2, 2), (0, 0)])
def test_closed_rounds_start_a_check_every_n_rounds(tmp_path: Path, every: int, checks: int) -> None:
    """`integrity_every_rounds` closed rounds start a check (off the loop); 0 disables the watch."""
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path, integrity_every_rounds=every)
    records = biased(4, 1)
    started: list[asyncio.Task[None]] = []

    async def close_rounds() -> None:
        for number, record in enumerate(records, start=1):
            daemon.act_and_commit(round_entries(daemon.journal.table_id, number, record))
            task = daemon._integrity_task
            if task is not None and task not in started:
                started.append(task)
                await task

    try:
        asyncio.run(close_rounds())
    finally:
        daemon.journal.close()
    assert len(started) == checks
    assert daemon.summary.rounds_closed == 4
    # The second check (after round 4) read both windows' rounds: 4 fair-enough rounds pass.
    assert daemon.integrity_status == ("pass" if checks else None)
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
        while not started:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return started[0].returncode

    assert asyncio.run(main()) == -9  # killed and reaped, not left running
