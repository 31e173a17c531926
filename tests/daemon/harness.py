"""The whole table in a test: configurations written as TOML files, the real daemon (controller/daemon.py)
in the simulation harness (controller/simulation/table.py) with its simulated devices over real
pseudo-terminals and a real SQLite journal, and the checks every daemon test makes on the journal it
leaves (tests/daemon/)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from controller.config import TableConfig, load_config
from controller.daemon import RunOptions, RunSummary, TableDaemon
from controller.journal.kinds import CLOSING_KINDS
from controller.journal.recall import recall_records
from controller.journal.store import Journal, JournalEntry
from controller.rules.settle import settle_round_json
from controller.simulation.table import SimulatedTable, SimulationOptions
from tests.device_harness.leaks import run_async

REPO = Path(__file__).resolve().parents[2]
FLUSHTABLE = str(Path(sys.executable).with_name("flushtable"))

DEVICES_TOML = """
[devices.shuffler]
kind = "shuffler"
url = "sim+pty://shuffler"

[devices.sensors]
kind = "bet_sensors"
url = "sim+pty://sensors"

[devices.display]
kind = "dealer_display"
url = "sim+pty://display"
"""

# The sections the tables below share, written once (a designated-player table's banking and limits,
# the stand-alone Progressive wager's meter): a test's own table reads them too (test_dp_table.py).
HOUSE_LIMITS_TOML = """
[limits]
min_ante_cents = 500
max_ante_cents = 50000
"""

DP_BANKING_TOML = """
[banking]
mode = "designated-player"

[limits]
min_ante_cents = 500
max_ante_cents = 50000
aggregate_bonus_cap_cents = 2000000
"""

DP_RAKE_TOML = """
[rake]
method = "players_not_dp"
amount_cents = 50
"""

# Without limit_cents: a table adds its own line under it, or none (no cap on the meter).
PROGRESSIVE_TOML = """
[progressive]
unit_cents = 100
base_cents = 100000
reset_cents = 100000
increment_percent = 20
hidden_percent = 5
"""
PROGRESSIVE_LIMIT_TOML = "limit_cents = 500000\n"


def table_toml(table_id: str, game: str, seats: int | None = None) -> str:
    """A configuration's ``[table]`` section."""
    seats_line = "" if seats is None else f"seats = {seats}\n"
    return f'\n[table]\nid = "{table_id}"\ngame = "{game}"\n{seats_line}'


GAMES_TOML: dict[str, str] = {
    "hcf-house": table_toml("HCF1", "high-card-flush", 6) + HOUSE_LIMITS_TOML,
    "hcf-dp": table_toml("HCF2", "high-card-flush", 7) + DP_BANKING_TOML + DP_RAKE_TOML,
    # A stand-alone Progressive wager (docs/configuration.md "[progressive]"): the simulated players
    # play it on most seats, so the money check (check_money_balances) reads its take every round.
    "hcf-progressive": table_toml("HCP1", "high-card-flush", 6)
    + HOUSE_LIMITS_TOML
    + PROGRESSIVE_TOML
    + PROGRESSIVE_LIMIT_TOML,
    # The same at a designated-player table: the house banks the Progressive wager, never the DP, so
    # the banker's net leaves it out (docs/rules.md "Progressive wager").
    "hcf-dp-progressive": table_toml("HCP2", "high-card-flush", 7)
    + DP_BANKING_TOML
    + DP_RAKE_TOML
    + PROGRESSIVE_TOML
    + PROGRESSIVE_LIMIT_TOML,
    "top-flush": table_toml("TF1", "top-flush") + HOUSE_LIMITS_TOML,
    "chase": table_toml("CTF1", "chase-the-flush", 7) + HOUSE_LIMITS_TOML,
}


def write_config(directory: Path, game: str, *, decision_s: float = 30.0) -> Path:
    """A table's configuration as an operator writes it: a TOML file (loaded with load_config)."""
    text = (
        GAMES_TOML[game]
        + f"\n[timeouts]\ndecision_s = {decision_s}\n"
        + f'\n[journal]\npath = "{directory / "journal.sqlite"}"\n'
        + DEVICES_TOML
    )
    path = directory / f"{game}.toml"
    path.write_text(text, encoding="utf-8")
    return path


@dataclass(frozen=True, slots=True)
class DaemonRun:
    summary: RunSummary
    journal_path: Path
    out: str


RUN_OPTIONS = frozenset(field.name for field in fields(RunOptions))
SIMULATION_OPTIONS = frozenset(field.name for field in fields(SimulationOptions))
TABLE_OPTIONS = frozenset(("on_ready", "companions", "commit_delay_s", "noise_clock"))


def simulated_table(
    config: TableConfig, journal_path: Path, out: Any = None, **options: Any
) -> SimulatedTable:
    """The harness around the daemon, its keyword options sorted to where they belong: RunOptions
    (what an operator sets), SimulationOptions, or the harness's own (on_ready, companions, ...)."""
    unknown = set(options) - RUN_OPTIONS - SIMULATION_OPTIONS - TABLE_OPTIONS
    assert not unknown, f"unknown options: {sorted(unknown)}"
    return SimulatedTable(
        config,
        RunOptions(journal_path=journal_path, **{k: v for k, v in options.items() if k in RUN_OPTIONS}),
        SimulationOptions(**{k: v for k, v in options.items() if k in SIMULATION_OPTIONS}),
        out=out,
        **{k: v for k, v in options.items() if k in TABLE_OPTIONS},
    )


def run_daemon(
    config: TableConfig | Path,
    journal_path: Path,
    *,
    timeout_s: float = 60.0,
    stop_when: Callable[[TableDaemon], bool] | None = None,
    **options: Any,
) -> DaemonRun:
    """Run the real daemon in the simulation harness to the end (``rounds=`` closed, or
    ``stop_when(daemon)`` true, when it is stopped as SIGTERM would), bounded; fail on any task left
    behind."""
    table_config = config if isinstance(config, TableConfig) else load_config(config)
    options.setdefault("print_rounds", False)
    options.setdefault("time_scale", 50.0)

    class _Out:
        def __init__(self) -> None:
            self.parts: list[str] = []

        def write(self, text: str) -> int:
            self.parts.append(text)
            return len(text)

        def flush(self) -> None:
            return None

    out = _Out()

    async def main() -> RunSummary:
        table = simulated_table(table_config, journal_path, out, **options)
        watcher: asyncio.Task[None] | None = None
        if stop_when is not None:
            watcher = asyncio.get_running_loop().create_task(_stop_when(table.daemon, stop_when))
        try:
            await table.run()
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
        return table.summary

    summary = run_async(main, timeout_s=timeout_s)
    return DaemonRun(summary, journal_path, "".join(out.parts))


async def _stop_when(daemon: TableDaemon, predicate: Callable[[TableDaemon], bool]) -> None:
    """Polled: the predicates read the engine and the summary, which change on the daemon's loop."""
    while not daemon.running or not predicate(daemon):
        await asyncio.sleep(0.02)
    daemon.request_stop()


def entries(journal_path: Path, table_id: str | None = None) -> list[JournalEntry]:
    with Journal.open_existing(journal_path) as journal:
        return list(journal.entries())


def by_round(all_entries: Iterable[JournalEntry]) -> dict[str, list[JournalEntry]]:
    rounds: dict[str, list[JournalEntry]] = {}
    for entry in all_entries:
        if entry.round_id is not None:
            rounds.setdefault(entry.round_id, []).append(entry)
    return rounds


def check_every_round_closed_once(all_entries: list[JournalEntry]) -> Counter[str]:
    """Every round_started has exactly one closing entry (settled, dead or voided), and nothing closes
    a round that never started. Returns the closings by kind."""
    started = [entry.round_id for entry in all_entries if entry.kind == "round_started"]
    closings = [entry for entry in all_entries if entry.kind in CLOSING_KINDS]
    assert len(started) == len(set(started)), "a round started twice"
    closed = Counter(entry.round_id for entry in closings)
    twice = [round_id for round_id, times in closed.items() if times > 1]
    assert not twice, f"rounds closed twice: {twice}"
    never_started = sorted(str(round_id) for round_id in set(closed) - set(started))
    still_open = sorted(str(round_id) for round_id in set(started) - set(closed))
    assert set(closed) == set(started), f"open: {still_open}; never started: {never_started}"
    return Counter(entry.kind for entry in closings)


def check_recall_settles(journal_path: Path) -> list[dict[str, Any]]:
    """Every recalled round's ``round`` settles (controller.rules.settle) to its recorded
    ``settlement``, and every settlement conserves money. Returns the records."""
    records = recall_records(journal_path)
    for record in records:
        if record["status"] != "void":
            assert settle_round_json(record["round"]) == record["settlement"], record["round_id"]
        check_money_balances(record["settlement"], record["round_id"])
    return records


def check_money_balances(settlement: dict[str, Any], round_id: str) -> None:
    """Each money line: every wager's net is what its result says; the players' nets, the banker's net,
    the rake and the progressive's take sum to zero (docs/settle.md "The Progressive wager": the banker's
    net leaves the Progressive wager out, the house's progressive banks it). The progressive's take is
    checked against its own books: what it collected (the settled Progressive wagers' stakes) less what
    it paid (each award, once, to the seat whose wager won it), and what moved through its pools (the
    meter and the reserve) to the cent."""
    players = 0
    progressive_stakes = progressive_awards = 0
    awards_by_seat: dict[int, int] = {}
    for seat in settlement["seats"]:
        seat_net = 0
        for name, wager in seat["wagers"].items():
            if wager["result"] in ("returned", "push"):
                assert wager["net"] == 0, (round_id, seat["seat"], name, wager)
            elif wager["result"] == "lose":
                assert wager["net"] == -wager["stake"], (round_id, seat["seat"], name, wager)
            if name == "progressive" and wager["result"] != "returned":
                # Always collected; an award is paid for it, not to it (docs/rules.md).
                progressive_stakes += wager["stake"]
                award_cents = wager["net"] + wager["stake"]
                assert award_cents >= 0, (round_id, seat["seat"], wager)
                if award_cents:
                    progressive_awards += award_cents
                    awards_by_seat[int(seat["seat"])] = award_cents
            seat_net += wager["net"]
        assert seat_net - seat.get("rake", 0) == seat["net"], (round_id, seat["seat"])
        players += seat["net"]
    progressive = settlement.get("progressive")
    progressive_net = 0
    if progressive is None:
        assert progressive_stakes == 0, (round_id, "a Progressive wager settled without a progressive")
    else:
        progressive_net = check_progressive_books(progressive, progressive_stakes, awards_by_seat, round_id)
        assert progressive_awards == progressive["paid_cents"], round_id
    assert players + settlement["banker_net"] + settlement.get("rake", 0) + progressive_net == 0, round_id


def check_progressive_books(
    progressive: dict[str, Any], stakes_cents: int, awards_by_seat: dict[int, int], round_id: str
) -> int:
    """The progressive's own books of one round, to the cent; returns its take (``net_cents``): collected
    less paid, each award booked once from the meter or the house, the meter and the reserve moved by
    exactly the contributions, the awards from the meter and the reset (docs/settle.md)."""
    assert progressive["collected_cents"] == stakes_cents, (round_id, progressive)
    booked = {int(award["seat"]): int(award["amount_cents"]) for award in progressive["awards"]}
    assert len(booked) == len(progressive["awards"]), (round_id, "a seat's award booked twice")
    assert booked == awards_by_seat, (round_id, booked, awards_by_seat)
    assert sum(booked.values()) == progressive["paid_cents"], (round_id, progressive)
    assert progressive["net_cents"] == progressive["collected_cents"] - progressive["paid_cents"], round_id
    from_meter = sum(
        award["amount_cents"] for award in progressive["awards"] if award["paid_from"] == "meter"
    )
    contributions, reserve, reset = progressive["contributions"], progressive["reserve"], progressive["reset"]
    reset_cents = 0 if reset is None else reset["amount_cents"]
    if reset is not None:
        assert reset["from_reserve_cents"] + reset["house_added_cents"] == reset_cents, (round_id, reset)
    assert (
        progressive["meter_before_cents"] + contributions["to_meter_cents"] - from_meter + reset_cents
        == progressive["meter_after_cents"]
    ), (round_id, progressive)
    assert (
        reserve["before_cents"]
        + reserve["hidden_cents"]
        + reserve["overflow_cents"]
        - reserve["to_reset_cents"]
        == reserve["after_cents"]
    ), (round_id, reserve)
    assert reserve["hidden_cents"] == contributions["hidden_cents"], (round_id, progressive)
    assert reserve["overflow_cents"] == contributions["overflow_cents"], (round_id, progressive)
    return int(progressive["net_cents"])


def settle_with_cli(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The real `flushtable settle --jsonl` on the rounds, in one process."""
    completed = subprocess.run(
        [FLUSHTABLE, "settle", "--jsonl"],
        input="".join(json.dumps(round_) + "\n" for round_ in rounds),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert completed.returncode == 0, completed.stderr
    return [json.loads(line) for line in completed.stdout.splitlines()]


def flushtable(*arguments: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FLUSHTABLE, *arguments], capture_output=True, text=True, timeout=timeout_s, check=False
    )
