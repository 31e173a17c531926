"""The operator's entries by their kinds (controller/journal/entries/; docs/journal.md "Operator entries"):
a journal of release 9254278, which wrote every one of them as ``operator_action``
(tests/journal/fixtures/journal-v2-9254278-operator-actions.sqlite: what that release's own engine and panel
wrote while its tests ran), opens, verifies as written, reads each entry as today's kind, folds, recalls and
takes this release's appends; and every reader takes the kinds this release writes."""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from controller.engine import RecoveredState, TableConfig
from controller.engine import actions as a
from controller.floor.gaming_day import DayEntry, fold_day
from controller.floor.surveillance import FloorEntry, events_of
from controller.journal import Journal
from controller.journal import entries as e
from controller.journal.kinds import LEGACY_OPERATOR_ACTION
from controller.journal.proof import anchor_journal, startup_check
from controller.journal.recall import recall_records
from controller.journal.recovery import rebuild_state
from controller.journal.sentence import entry_sentence
from controller.journal.store import recompute_hash
from controller.journal.verify import verify_chain
from tests.engine.table import Table, stack
from tests.journal.scripted import play_round

FIXTURE = Path(__file__).parent / "fixtures" / "journal-v2-9254278-operator-actions.sqlite"
ENTRIES = 135
BIG_WIN_CENTS = 10**9  # no win is big here: only the operator events count
# What release 9254278's operator_action entries read as, by kind (counted once by hand from the file).
READ_AS = {
    "action_refused": 71,
    "panel_request": 29,
    "limits_set": 17,
    "seat_killed": 6,
    "paytable_set": 5,
    "void_ordered": 3,
    "linked_confirmation_sent": 2,
    "device_reset": 1,
    "difference_accepted": 1,
}


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / FIXTURE.name
    shutil.copyfile(FIXTURE, target)
    return target


def test_an_earlier_releases_operator_actions_read_as_todays_kinds_and_verify_as_written(
    tmp_path: Path,
) -> None:
    path = _copy(tmp_path)
    result = verify_chain(path)
    assert result.ok, result.summary()
    assert result.entries_checked == ENTRIES
    with Journal.open_existing(path, readonly=True) as journal:
        stored = list(journal.entries())
        state = rebuild_state(journal)
    assert {entry.kind for entry in stored} == {LEGACY_OPERATOR_ACTION}  # the rows as written
    assert all(recompute_hash(entry) == entry.hash for entry in stored)  # reading changed no byte
    assert Counter(entry.entry.kind for entry in stored) == READ_AS
    assert not any(isinstance(entry.entry, e.OperatorAction) for entry in stored)
    by_seq = {entry.seq: entry.entry for entry in stored}
    # Each form of the old words, read back into its fields (seqs as the file holds them).
    assert by_seq[4] == e.SeatKilled(seat=1, by="sam", reason="over the bonus limit", excluded=True)
    assert by_seq[12] == e.SeatKilled(seat=3, by="sam", reason="hand exposed")
    assert by_seq[24] == e.DeviceReset(
        device="shuffler", by="sue", reason="in fault when its table was released"
    )
    assert by_seq[103] == e.DifferenceAccepted(
        fault_id="FT1-000001",
        by="sue",
        reason="the player's 8.00 stays out of the round",
        spot="seat 3 flush reads 10.00, the round holds 2.00",
    )
    assert by_seq[7] == e.ActionRefused(
        action="set_limits", by="maria", reason="betting is open (betting): only between rounds"
    )
    assert by_seq[106] == e.PanelRequest(action="move_button", by="max", request={"seat": 2}, outcome="done")
    assert isinstance(by_seq[105], e.LinkedConfirmationSent)
    assert by_seq[105].award_id == "MAIN/T1/R1/1"
    # The one reducer restores the manager's settings from them: the last one (a paytable) was made against
    # another configuration file (config_digest "d2"), so only it stands, as the engine would restore it.
    last = [entry.entry for entry in stored if isinstance(entry.entry, e.LimitsSet | e.PaytableSet)][-1]
    assert isinstance(last, e.PaytableSet)
    assert last.config_digest == "d2"
    assert (state.settings_config_digest, state.paytables, state.limits) == (
        "d2",
        {last.wager: last.after},
        None,
    )
    assert RecoveredState.from_table_state(state).paytables == {last.wager: last.after}
    assert recall_records(path) == []  # no round in the file; the reader takes every entry
    # The floor's readers take the rows as the uplink sends them (kind and payload as written).
    floor_rows = [
        FloorEntry("T1", s.seq, s.time_utc, None, s.source, s.kind, s.public, s.hash) for s in stored
    ]
    kills = [
        event for row in floor_rows for event in events_of(row, BIG_WIN_CENTS) if event["type"] == "kill"
    ]
    assert len(kills) == READ_AS["seat_killed"]
    day = fold_day([DayEntry("T1", s.kind, s.time_utc, s.public) for s in stored], "2000", "3000")
    assert (day["T1"].kills, day["T1"].overrides) == (READ_AS["seat_killed"], READ_AS["difference_accepted"])


def test_a_table_upgraded_in_place_keeps_appending_after_the_old_kind(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    assert anchor_journal(path, key=None).ok
    head_before = verify_chain(path).head_hash
    assert startup_check(path, "T1", key=None).refusal is None
    with Journal.open(path, "T1") as journal:
        assert journal.entry(ENTRIES).hash == head_before  # type: ignore[union-attr]
        play_round(journal, random.Random(9))
        journal.append("panel_request", e.PanelRequest(action="logout", by="sam", request={}, outcome="done"),
                       round_id=None, source="operator:sam")  # fmt: skip
    result = verify_chain(path)
    assert result.ok, result.summary()
    assert result.entries_checked > ENTRIES
    assert startup_check(path, "T1", key=None).refusal is None
    connection = sqlite3.connect(path)
    try:
        kinds = Counter(
            kind for (kind,) in connection.execute("SELECT kind FROM journal WHERE seq > ?", (ENTRIES,))
        )
    finally:
        connection.close()
    assert kinds["panel_request"] == 1
    assert LEGACY_OPERATOR_ACTION not in kinds  # this release never writes the old kind
    (record,) = recall_records(path)
    assert record["status"] == "settled"


def test_the_old_kind_is_refused_to_a_writer(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j.sqlite", "T1") as journal:
        with pytest.raises(e.EntryError, match=r"^journal: a void_ordered entry given as operator_action$"):
            journal.append(
                LEGACY_OPERATOR_ACTION,
                {"action": "void_round", "by": "sue", "detail": "dispute"},
                round_id=None,
                source="operator:sue",
            )
        assert journal.last_entry() is None


def _engine_records(table: Table, kinds: set[str]) -> list[tuple[str, str, dict[str, object]]]:
    return [(r.kind, r.source, dict(r.payload)) for r in table.journal() if r.kind in kinds]


def test_every_reader_takes_the_kinds_the_engine_writes() -> None:
    """The sentence, the floor's events and gaming day, and the reducer, fed what the engine writes now."""
    table = Table(TableConfig(config_digest="d1"), stack())
    table.call(table.engine.handle, a.SetLimits(200, 50_000, "mia"), table.now_s)
    table.call(table.engine.handle, a.SetPaytable("flush", "hcf-flush-dp", "mia"), table.now_s)
    table.call(table.engine.handle, a.VoidRound("dispute", "sue"), table.now_s)  # nothing open: refused
    table.start()
    table.bet(1, "ante", 500)
    table.call(table.engine.handle, a.KillSeat(1, "hand exposed", "sam"), table.now_s)  # betting: excluded
    written = _engine_records(table, {"limits_set", "paytable_set", "action_refused", "seat_killed"})
    assert [kind for kind, _, _ in written] == ["limits_set", "paytable_set", "action_refused", "seat_killed"]
    sentences = [entry_sentence({"kind": kind, "payload": payload}) for kind, _, payload in written]
    assert sentences == [
        "mia set the limits: ante 2.00 to 500.00, bonus maxima flush bonus 500.00 (the ante's "
        "maximum), straight flush bonus 500.00 (the ante's maximum) (were 1.00 to 1,000.00)",
        "mia set the flush bonus paytable: hcf-flush-dp (was hcf-flush-house)",
        "sue: void round refused: no open round to void (idle)",
        "sam excluded seat 1 from the round: hand exposed",
    ]
    rows = [
        FloorEntry("T1", seq, "2027-01-15T08:00:00.000000Z", None, source, kind, payload, "00")
        for seq, (kind, source, payload) in enumerate(written, start=1)
    ]
    kills = [event for row in rows for event in events_of(row, BIG_WIN_CENTS)]
    assert [(event["type"], event["summary"]) for event in kills] == [
        (
            "kill",
            "kill_seat by sam: seat 1 excluded from the round: hand exposed",
        )  # as release 9254278 said it
    ]
    day = fold_day([DayEntry("T1", r.kind, r.time_utc, r.payload) for r in rows], "2000", "3000")
    assert day["T1"].kills == 1
