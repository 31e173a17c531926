"""A manager's actions between rounds — ante limits, paytables, opening and closing the table — and
their survival across a restart (through a real journal file and the journal's recovery)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import msgspec
import pytest

from controller.engine import JournalRecord, Output, RecoveredState, TableConfig, TableEngine
from controller.engine import actions as a
from controller.journal import Journal, entries
from controller.journal.recovery import rebuild_state, recover
from controller.journal.sentence import entry_sentence
from controller.journal.state import TableState
from controller.rules.settle import settle_round_json
from tests.engine.table import NOW_S, Table, recovered_state, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3
from tests.journal.test_state import stamped


def hcf_table(**config: Any) -> Table:
    return Table(TableConfig(**config), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))


def records(outs: list[Output], kind: str | None = None) -> list[JournalRecord]:
    return [o for o in outs if isinstance(o, JournalRecord) and (kind is None or o.kind == kind)]


def play_hcf_round(table: Table, *, ante1: int = 500, flush1: int = 100) -> None:
    table.start()
    table.bet(1, "ante", ante1)
    table.bet(1, "flush", flush1)
    table.bet(3, "ante", 1000)
    table.lock()
    table.bet(1, "raise", ante1)
    table.key("fold_seat", 3)
    table.key("confirm")
    table.key("next")  # paid


# --- limits ---------------------------------------------------------------------------------------
def test_set_limits_between_rounds_is_journaled_and_governs_the_next_lock() -> None:
    table = hcf_table(config_digest="d1")
    outs = table.call(table.engine.handle, a.SetLimits(2000, 50_000, "maria"), table.now_s)
    (entry,) = records(outs, "limits_set")
    assert entry.source == "operator:maria"
    assert entry_sentence({"kind": entry.kind, "payload": entry.payload}) == (
        "maria set the limits: ante 20.00 to 500.00, bonus maxima flush bonus 500.00 (the ante's maximum), "
        "straight flush bonus 500.00 (the ante's maximum) (were 1.00 to 1,000.00)"
    )
    assert entry.entry == entries.LimitsSet(
        by="maria",
        before={
            "min_ante_cents": 100,
            "max_ante_cents": 100_000,
            "max_bonus_cents": {"flush": 100_000, "straight_flush": 100_000},
            "own_max_bonus_cents": {},
        },
        after={
            "min_ante_cents": 2000,
            "max_ante_cents": 50_000,
            "max_bonus_cents": {"flush": 50_000, "straight_flush": 50_000},
            "own_max_bonus_cents": {},
        },
        config_digest="d1",
    )
    config = table.engine.view().config
    assert (config.min_ante_cents, config.max_ante_cents) == (2000, 50_000)
    assert {wager: config.max_bonus_for(wager) for wager in ("flush", "straight_flush")} == {
        "flush": 50_000,
        "straight_flush": 50_000,
    }
    table.start()
    table.bet(1, "ante", 500)
    refused = table.refusals(table.lock())
    assert refused
    assert "ante 5.00 outside the table's limits 20.00 to 500.00" in refused[0].reason
    table.bet(1, "ante", 2000)
    table.lock()
    assert table.engine.view().state == "decisions"


def bonus_maxima(table: Table) -> dict[str, int]:
    """Each bonus wager's maximum in effect (its own, or the ante's maximum)."""
    config = table.engine.view().config
    return {wager: config.max_bonus_for(wager) for wager in table.engine.view().spec.bonus_wagers}


def test_a_limit_change_changes_only_the_limit_named() -> None:
    """What a table-games manager expects of "change this limit": every other posted limit as it was. A
    bonus wager with a maximum of its own keeps it when the ante's limits change; one without keeps
    following the ante's maximum, also after another bonus's maximum is set (never frozen at the ante's
    maximum of that moment, to be silently left behind by the next ante change)."""
    table = hcf_table()
    assert bonus_maxima(table) == {"flush": 100_000, "straight_flush": 100_000}
    table.call(table.engine.handle, a.SetBonusLimit("flush", 1000, "maria"), table.now_s)
    assert bonus_maxima(table) == {"flush": 1000, "straight_flush": 100_000}
    table.call(table.engine.handle, a.SetLimits(100, 20_000, "maria"), table.now_s)
    assert bonus_maxima(table) == {"flush": 1000, "straight_flush": 20_000}
    limits = table.journal("limits_set")[-1]
    assert entry_sentence({"kind": limits.kind, "payload": limits.payload}) == (
        "maria set the limits: ante 1.00 to 200.00, bonus maxima flush bonus 10.00, "
        "straight flush bonus 200.00 (the ante's maximum) (were 1.00 to 1,000.00)"
    )
    table.call(table.engine.handle, a.SetLimits(100, 60_000, "maria"), table.now_s)
    assert bonus_maxima(table) == {"flush": 1000, "straight_flush": 60_000}
    table.call(table.engine.handle, a.SetBonusLimit("straight_flush", 2500, "maria"), table.now_s)
    table.call(table.engine.handle, a.SetLimits(100, 5000, "maria"), table.now_s)
    assert bonus_maxima(table) == {"flush": 1000, "straight_flush": 2500}
    # The lock checks the limits in effect: flush 10.00, straight flush 25.00 (its own, above the ante's).
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "flush", 1000)
    table.bet(1, "straight_flush", 2501)
    (refused,) = table.refusals(table.lock())
    assert refused.reason == "seat 1 straight_flush: 25.01 is over the table's maximum 25.00"
    table.bet(1, "straight_flush", 2500)
    assert not table.refusals(table.lock())
    assert table.engine.view().state == "decisions"


def test_a_bonus_maximum_of_the_configuration_stays_when_the_ante_changes() -> None:
    table = hcf_table(max_bonus_cents={"straight_flush": 2500})
    table.call(table.engine.handle, a.SetLimits(100, 50_000, "maria"), table.now_s)
    assert bonus_maxima(table) == {"flush": 50_000, "straight_flush": 2500}
    after = table.journal("limits_set")[-1].payload["after"]
    assert after["own_max_bonus_cents"] == {"straight_flush": 2500}
    table.call(table.engine.handle, a.SetBonusLimit("flush", 1500, "maria"), table.now_s)
    assert bonus_maxima(table) == {"flush": 1500, "straight_flush": 2500}


@pytest.mark.parametrize(
    ("low", "high", "reason"),
    [
        (5000, 1000, "min_ante_cents: 50.00 is above max_ante_cents 10.00"),
        (0, 1000, "min_ante_cents: must be a whole number of cents"),
        (True, 1000, "min_ante_cents: must be a whole number of cents"),
        (100, 10**15, "max_ante_cents: must be a whole number of cents"),
    ],
)
def test_set_limits_refuses_bad_limits_naming_the_field(low: Any, high: Any, reason: str) -> None:
    engine = TableEngine(TableConfig())
    outs = engine.handle(a.SetLimits(low, high, "maria"), NOW_S)
    assert next(r.reason for r in outs if hasattr(r, "reason")).startswith(reason)
    (entry,) = records(outs, "action_refused")
    assert isinstance(entry.entry, entries.ActionRefused)  # a refusal changes nothing (recovery ignores it)
    assert entry.entry.reason.startswith(reason)
    assert entry.entry.private is None
    assert records(outs, "limits_set") == []
    assert (engine.view().config.min_ante_cents, engine.view().config.max_ante_cents) == (100, 100_000)


def test_limits_and_paytables_change_only_between_rounds() -> None:
    table = hcf_table()
    table.start()  # betting is open: the players bet under the posted limits
    for call in (
        lambda: table.engine.handle(a.SetLimits(1000, 2000, "maria"), table.now_s),
        lambda: table.engine.handle(a.SetPaytable("flush", "hcf-flush-dp", "maria"), table.now_s),
        lambda: table.engine.handle(a.CloseTable("maria", "end of shift"), table.now_s),
    ):
        refused = table.refusals(table.call(call))
        assert refused
        assert "only between rounds" in refused[0].reason
    table.bet(1, "ante", 500)
    table.lock()
    assert table.engine.view().state == "decisions"
    refused = table.refusals(table.call(table.engine.handle, a.SetLimits(1000, 2000, "maria"), table.now_s))
    assert refused
    assert refused[0].reason == "a round is open (decisions): only between rounds"
    table.bet(1, "raise", 500)
    table.key("confirm")
    assert table.engine.view().state == "paying"  # settled: the round is closed, the chips still move
    table.key("next")
    assert table.engine.view().state == "idle"
    assert not table.refusals(table.call(table.engine.handle, a.SetLimits(1000, 2000, "maria"), table.now_s))


def test_a_held_table_between_rounds_may_change_its_settings() -> None:
    from drivers.events import ShufflerFault

    table = hcf_table()
    table.event(ShufflerFault("shuffler", "jam"))
    assert table.engine.view().state == "held"
    assert not table.refusals(table.call(table.engine.handle, a.SetLimits(1000, 2000, "maria"), table.now_s))
    assert not table.refusals(
        table.call(table.engine.handle, a.CloseTable("maria", "shoe jammed"), table.now_s)
    )


# --- paytables --------------------------------------------------------------------------------------
def test_set_paytable_preset_and_custom_lines_settle_the_next_round() -> None:
    table = hcf_table()
    outs = table.call(
        table.engine.handle, a.SetPaytable("flush", {"7": 500, "5": 20, "4": 2}, "maria"), table.now_s
    )
    (entry,) = records(outs, "paytable_set")
    assert entry.payload["before"] == "hcf-flush-house"
    assert entry.payload["after"] == {"7": 500, "5": 20, "4": 2}
    assert entry.payload["wager"] == "flush"
    play_hcf_round(table)
    settled = table.payload("round_settled")
    assert settled["round"]["paytables"] == {"flush": {"7": 500, "5": 20, "4": 2}}
    assert settle_round_json(settled["round"]) == settled["settlement"]
    seat1 = settled["settlement"]["seats"][0]
    # Seat 1 holds a 5-card spade flush: 20 to 1 on the custom table (10 to 1 on the preset).
    assert seat1["wagers"]["flush"] == {"stake": 100, "result": "win", "net": 2000, "odds": 20}
    outs = table.call(
        table.engine.handle, a.SetPaytable("straight_flush", "hcf-straight-flush-dp", "m"), table.now_s
    )
    assert records(outs, "paytable_set")[0].payload["after"] == "hcf-straight-flush-dp"
    settings = table.engine._settings
    assert {wager: settings.paytable_in_effect(wager) for wager in ("flush", "straight_flush")} == {
        "flush": {"7": 500, "5": 20, "4": 2},
        "straight_flush": "hcf-straight-flush-dp",
    }


@pytest.mark.parametrize(
    ("wager", "spec", "reason"),
    [
        ("ante", "hcf-flush-house", "wager: 'ante' is not a bonus wager of high-card-flush"),
        ("flush", "no-such-table", "paytables.flush: unknown paytable preset"),
        ("flush", {"9": 5}, "paytables.flush: line '9' is not a length from 1 to 7"),
        ("flush", {"7": 0}, "paytables.flush.7: odds must be a whole number"),
        ("flush", 42, "paytables.flush: a paytable is a preset name"),
    ],
)
def test_set_paytable_refuses_what_parse_paytable_refuses(wager: str, spec: object, reason: str) -> None:
    engine = TableEngine(TableConfig())
    outs = engine.handle(a.SetPaytable(wager, spec, "maria"), NOW_S)
    refusals = [o for o in outs if hasattr(o, "reason")]
    assert refusals
    assert str(refusals[0].reason).startswith(reason)
    assert engine.view().config.paytables == {}


# --- open and closed ---------------------------------------------------------------------------------
def test_a_closed_table_starts_no_round_until_a_manager_opens_it() -> None:
    table = hcf_table()
    outs = table.call(table.engine.handle, a.CloseTable("maria", "end of shift"), table.now_s)
    (closed,) = records(outs, "table_closed")
    assert (closed.payload, closed.source) == ({"by": "maria", "reason": "end of shift"}, "operator:maria")
    assert table.engine.view().table_open is False
    for refused in (table.refusals(table.start()), table.refusals(table.key("next"))):
        assert refused
        assert refused[0].reason == "the table is closed: a manager opens it"
    assert table.engine.view().state == "idle"
    assert table.refusals(table.call(table.engine.handle, a.CloseTable("maria", "again"), table.now_s))
    outs = table.call(table.engine.handle, a.OpenTable("maria"), table.now_s)
    (opened,) = records(outs, "table_opened")
    assert opened.payload["by"] == "maria"
    assert opened.source == "operator:maria"
    assert table.refusals(table.call(table.engine.handle, a.OpenTable("maria"), table.now_s))
    play_hcf_round(table)
    assert table.journal("round_settled")


def test_close_table_needs_a_reason_and_a_name() -> None:
    engine = TableEngine(TableConfig())
    assert any(hasattr(o, "reason") for o in engine.handle(a.CloseTable("maria", " "), NOW_S))
    assert any(hasattr(o, "reason") for o in engine.handle(a.CloseTable("", "end of shift"), NOW_S))
    assert engine.view().table_open


def test_actions_as_data_on_the_one_queue() -> None:
    engine = TableEngine(TableConfig())
    engine.handle(a.SetLimits(500, 5000, "maria"), NOW_S)
    engine.handle(a.SetPaytable("straight_flush", {"5": 200}, "maria"), NOW_S)
    engine.handle(a.CloseTable("maria", "private game"), NOW_S)
    assert (engine.view().config.min_ante_cents, engine.view().config.max_ante_cents) == (500, 5000)
    assert engine.view().config.paytables == {"straight_flush": {"5": 200}}
    assert not engine.view().table_open
    engine.handle(a.OpenTable("maria"), NOW_S)
    assert engine.view().table_open


# --- across a restart -------------------------------------------------------------------------------
def journal_outputs(journal: Journal, outs: list[Output]) -> None:
    """What the daemon does with one engine call's outputs: its journal records in one transaction."""
    batch = [(r.kind, r.payload, r.round_id, r.source) for r in records(outs)]
    if batch:
        journal.append_many(batch)


def test_a_bonus_following_the_ante_still_follows_it_after_a_restart(tmp_path: Path) -> None:
    """Through a real journal file and its recovery: flush's own maximum is restored, and straight flush,
    which had none, still follows the ante's maximum on the restarted engine."""
    path = tmp_path / "journal.sqlite"
    config = TableConfig(config_digest="d1")
    with Journal.open(path, "T1") as journal:
        table = Table(config, stack())
        for action in (a.SetBonusLimit("flush", 1000, "maria"), a.SetLimits(100, 20_000, "maria")):
            journal_outputs(journal, table.call(table.engine.handle, action, table.now_s))
        recovered = RecoveredState.from_table_state(recover(journal).state)
    assert recovered.max_bonus_cents == {"flush": 1000}
    assert dataclasses.replace(recovered_state(table.engine), faults_raised=0) == dataclasses.replace(
        recovered, faults_raised=0
    )
    engine = TableEngine(config, recovered)
    assert engine.view().config.max_bonus_for("straight_flush") == 20_000
    engine.handle(a.SetLimits(100, 60_000, "maria"), NOW_S)
    assert (
        engine.view().config.max_bonus_for("flush"),
        engine.view().config.max_bonus_for("straight_flush"),
    ) == (
        1000,
        60_000,
    )


def test_limits_journaled_before_own_maxima_were_written_restore_what_that_engine_had() -> None:
    """An older engine wrote every bonus maximum in effect (``after.max_bonus_cents``) and held each as
    the wager's own. Its entry is this engine's with ``own_max_bonus_cents`` taken out (the only field
    that differs): recovered, every maximum it wrote stands, as it did on that engine."""
    table = Table(TableConfig(config_digest="d1"), stack())
    table.call(table.engine.handle, a.SetLimits(100, 20_000, "maria"), table.now_s)
    (record,) = table.journal("limits_set")
    assert isinstance(record.entry, entries.LimitsSet)
    older_after = {k: v for k, v in record.entry.after.items() if k != "own_max_bonus_cents"}
    older = dataclasses.replace(record, entry=msgspec.structs.replace(record.entry, after=older_after))
    state = TableState("T1").apply_all(stamped([older], "T1"))
    recovered = RecoveredState.from_table_state(state)
    assert recovered.max_bonus_cents == {"flush": 20_000, "straight_flush": 20_000}
    engine = TableEngine(TableConfig(config_digest="d1"), recovered)
    engine.handle(a.SetLimits(100, 60_000, "maria"), NOW_S)
    assert engine.view().config.max_bonus_for("straight_flush") == 20_000


def test_settings_and_a_close_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    config = TableConfig(config_digest="d1")
    with Journal.open(path, "T1") as journal:
        table = Table(config, stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
        journal_outputs(
            journal, table.call(table.engine.handle, a.SetLimits(300, 9000, "maria"), table.now_s)
        )
        journal_outputs(
            journal, table.call(table.engine.handle, a.SetLimits(1000, 20_000, "maria"), table.now_s)
        )
        journal_outputs(
            journal, table.call(table.engine.handle, a.SetPaytable("flush", "hcf-flush-dp", "m"), table.now_s)
        )
        journal_outputs(
            journal, table.call(table.engine.handle, a.SetLimits(5, 1, "maria"), table.now_s)
        )  # refused
        journal_outputs(
            journal, table.call(table.engine.handle, a.CloseTable("maria", "end of shift"), table.now_s)
        )
        # The daemon's own start/stop entries (source "engine") do not reopen a manager's close.
        journal.append("table_closed", {"by": "daemon", "reason": "shutdown"}, round_id=None, source="engine")
        journal.append(
            "table_opened",
            {"game": "high-card-flush", "banking_mode": "house", "config_digest": "d1", "by": "daemon"},
            round_id=None,
            source="engine",
        )
        state = recover(journal).state
    recovered = RecoveredState.from_table_state(state)
    assert recovered.table_closed
    assert recovered.closed_reason == "end of shift"
    assert (recovered.min_ante_cents, recovered.max_ante_cents) == (1000, 20_000)
    assert recovered.paytables == {"flush": "hcf-flush-dp"}
    assert recovered.settings_config_digest == "d1"
    # What the engine says a restart rebuilds (fault ids are numbered after the journal's last seq).
    assert (
        dataclasses.replace(recovered_state(table.engine), faults_raised=recovered.faults_raised) == recovered
    )
    engine = TableEngine(config, recovered)
    assert not engine.view().table_open
    assert (engine.view().config.min_ante_cents, engine.view().config.max_ante_cents) == (1000, 20_000)
    assert engine.view().config.paytables == {"flush": "hcf-flush-dp"}
    assert [o.reason for o in engine.handle(a.StartRound(), NOW_S) if hasattr(o, "reason")] == [
        "the table is closed: a manager opens it"
    ]
    # A new configuration file (another digest) wins over changes made against the old one.
    fresh = TableEngine(TableConfig(config_digest="d2", min_ante_cents=200), recovered)
    assert (fresh.view().config.min_ante_cents, fresh.view().config.paytables) == (200, {})
    assert not fresh.view().table_open  # the close is the manager's, whatever the file says
    # Reopened by a manager: a restart finds it open.
    with Journal.open(path, "T1") as journal:
        journal_outputs(journal, engine.handle(a.OpenTable("maria"), NOW_S))
        assert RecoveredState.from_table_state(rebuild_state(journal)).table_closed is False


def test_changes_against_a_new_configuration_forget_the_old_files_changes(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j.sqlite", "T1") as journal:
        old = TableEngine(TableConfig(config_digest="d1"))
        journal_outputs(journal, old.handle(a.SetLimits(300, 9000, "maria"), NOW_S))
        new = TableEngine(TableConfig(config_digest="d2"))
        journal_outputs(journal, new.handle(a.SetPaytable("flush", "hcf-flush-dp", "maria"), NOW_S))
        recovered = RecoveredState.from_table_state(rebuild_state(journal))
    assert recovered.settings_config_digest == "d2"
    assert (recovered.min_ante_cents, recovered.paytables) == (None, {"flush": "hcf-flush-dp"})
    engine = TableEngine(TableConfig(config_digest="d2"), recovered)
    assert (engine.view().config.min_ante_cents, engine.view().config.paytables) == (
        100,
        {"flush": "hcf-flush-dp"},
    )
