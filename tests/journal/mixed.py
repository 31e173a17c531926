"""A table's journal with every kind a checkpoint must carry: the round engine's own rounds (every game,
faults included), the stand-alone progressive's entries written by its real controller through the
table's journal (contributions, an overflow past the limit, a jackpot claimed and left pending, another
confirmed paid, fixed awards paid at once, a reserve movement, a manager's change of parameters), the
software checks (software_verified, software_checked), and the regulatory controls (clock_offset,
clock_stepped, config_checked, two-person changes proposed, approved, lapsed and left pending)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from controller.journal import Journal
from controller.journal import entries as e
from controller.journal.chain import canonical_json
from controller.journal.checkpoint import NOT_CARRIED, state_to_checkpoint
from controller.journal.state import TableState
from controller.journal.store import PendingEntry
from controller.progressive.controller import ProgressiveController
from controller.progressive.journal_store import JournalStore
from controller.progressive.model import Hit, MeterState, parse_parameters


def _bench_journal() -> ModuleType:
    """bench/bench_journal.py loaded from its file, never by putting bench/ on sys.path: a directory
    added to the import path for the rest of the run is what the software check (rightly) refuses as
    modules beside the product (tests/software)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_journal.py"
    spec = importlib.util.spec_from_file_location("bench_journal", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses in it resolve their module by name
    spec.loader.exec_module(module)
    return module


_BENCH_JOURNAL = _bench_journal()
engine_rounds = _BENCH_JOURNAL.engine_rounds
retagged = _BENCH_JOURNAL.retagged  # the rounds with their ids made unique for another copy

TABLE = "T1"
OPENING: dict[str, object] = {
    "unit_cents": 100,
    "base_cents": 50_000,
    "reset_cents": 50_000,
    "increment_percent": 50,
    "hidden_percent": 5,
    "limit_cents": 50_400,  # low: the overflow to the reserve is reached within a few rounds
}
CHANGED = {**OPENING, "increment_percent": 40, "limit_cents": 60_000}
JACKPOT_RUN = 7  # a 7-card straight flush: 100% of the meter, waits for a supervisor
FIXED_RUN = 3  # a 3-card run: a fixed award, paid at once

_ROUNDS: list[list[Any]] = []


def rounds() -> list[list[Any]]:
    """The engine's rounds (made once per session: the engine is the slow part)."""
    if not _ROUNDS:
        _ROUNDS.extend(engine_rounds(TABLE, 3))
    return _ROUNDS


def progressive_round_id(number: int) -> str:
    return f"R{TABLE}-20261205-{number:06d}"


def software_verified() -> PendingEntry:
    entry = e.SoftwareVerified(
        release="1.4.0",
        release_digest="ab" * 32,
        development=False,
        key_id="0123456789abcdef",
        files=212,
        dependencies=31,
    )
    return PendingEntry(entry.kind, entry, None, "daemon")


def software_checked(number: int) -> PendingEntry:
    entry = e.SoftwareChecked(
        seed=f"{number:064x}", aggregate="cd" * 32, files=212, requested_by="floor:audit"
    )
    return PendingEntry(entry.kind, entry, None, "daemon")


def _control(entry: e.Entry, source: str = "daemon") -> PendingEntry:
    return PendingEntry(entry.kind, entry, None, source)


CONFIG_SHA256 = "ef" * 32


def controls(number: int) -> list[PendingEntry]:
    """The regulatory controls' entries written around round ``number``."""
    out: list[PendingEntry] = []
    if number % 4 == 2:
        out.append(
            _control(
                e.ClockOffset(
                    source="sntp://127.0.0.1:123",
                    offset_us=1_200 * number,
                    delay_us=300,
                    bound_us=1_000_000,
                    within_bound=True,
                    table_time_utc=f"2026-12-05T10:{number:02d}:00.000000Z",
                )
            )
        )
    if number == 4:
        out.append(
            _control(
                e.ClockStepped(
                    wall_clock_utc="2026-12-05T10:03:59.000000Z",
                    journal_time_utc="2026-12-05T10:04:00.000000Z",
                    step_back_us=1_000_000,
                )
            )
        )
    if number in (3, 6, 9):
        change_id = f"C{number}"
        out.append(
            _control(
                e.ChangeProposed(
                    change_id=change_id,
                    change_kind="config_file" if number == 3 else "limits",
                    params={"sha256": CONFIG_SHA256} if number == 3 else {"max_ante_cents": 100 * number},
                    summary=f"change {number}",
                    by="mgr1",
                    reason="new season",
                    lapses_utc="2026-12-06T10:00:00.000000Z",
                ),
                "operator:mgr1",
            )
        )
    if number == 5:  # C3 approved (an approved config file not yet met by a start)
        out.append(
            _control(
                e.ChangeApproved(
                    change_id="C3",
                    change_kind="config_file",
                    proposed_by="mgr1",
                    by="mgr2",
                    summary="change 3",
                ),
                "operator:mgr2",
            )
        )
    if number == 8:  # C6 lapses; C9 stays pending
        out.append(
            _control(
                e.ChangeLapsed(
                    change_id="C6",
                    change_kind="limits",
                    proposed_by="mgr1",
                    lapses_utc="2026-12-06T10:00:00.000000Z",
                )
            )
        )
    if number == 10:
        out.append(
            _control(
                e.ConfigChecked(
                    source="table.toml",
                    file_sha256="12" * 32,
                    config_digest="34" * 32,
                    previous_file_sha256="56" * 32,
                    previous_config_digest="78" * 32,
                    settings={"limits.max_ante_cents": 10_000},
                    changed=["limits.max_ante_cents: 5000 -> 10000"],
                )
            )
        )
    return out


def write_mixed(journal: Journal, parts: range) -> MeterState:
    """Append the engine rounds of ``parts`` (indexes into ``rounds()``), each followed by its
    progressive requests (as the engine makes them at the settlement: a contribution, then a claim), and
    the occasional supervisor, manager and software entry; returns the progressive controller's meter
    (the one the requests were decided on)."""
    controller = ProgressiveController(JournalStore(journal))
    if controller.open_now(TABLE, parse_parameters(OPENING), by="config"):
        journal.append_many([software_verified()])
    for index in parts:
        journal.append_many(rounds()[index])
        number = index + 1
        round_id = progressive_round_id(number)
        controller.contribute_now(TABLE, round_id, 1 + number % 4)
        if number % 5 == 0:
            controller.claim_now(TABLE, round_id, [Hit(0, JACKPOT_RUN)])  # pending: a supervisor pays it
        elif number % 3 == 0:
            controller.claim_now(TABLE, round_id, [Hit(0, FIXED_RUN)])  # fixed: paid at once
        if number % 10 == 0:
            controller.confirm_paid_now(f"{TABLE}/{progressive_round_id(number - 5)}/0", by="sup1")
        if number == 7:
            controller.move_reserve_now(2_500, reason="house seed", by="mgr1")
        if number == 8:
            controller.change_parameters_now(parse_parameters(CHANGED), by="mgr1", reason="new limit")
        if number % 6 == 0:
            journal.append_many([software_checked(number)])
        if extra := controls(number):
            journal.append_many(extra)
    return controller.state


def assert_same_state(restored: TableState, folded: TableState) -> None:
    """Attribute by attribute (the objects' own equality: every field of every round, alert, device,
    meter and award), then as the checkpoint's JSON."""
    assert vars(restored).keys() == vars(folded).keys()
    for name in vars(folded):
        if name not in NOT_CARRIED:
            assert getattr(restored, name) == getattr(folded, name), name
    assert canonical_json(state_to_checkpoint(restored)) == canonical_json(state_to_checkpoint(folded))
