"""The reducer's checkpoint carries the whole TableState (docs/journal.md "Segments and seals"): a
stand-alone progressive table sealed and started again from its last seal has the meter, the reserve,
every 1.39A meter and the pending awards of the whole journal's fold, and still refuses a replayed claim
or contribution; every attribute a fold leaves is carried or named as not carried, with why; a seal of
format 1 (which dropped the progressive) is never read as a state: the start refolds the journal."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.errors import UserError
from controller.journal import Journal
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.chain import canonical_json
from controller.journal.checkpoint import (
    CARRIED_AS,
    CHECKPOINT_FORMAT,
    NOT_CARRIED,
    CheckpointFormatError,
    checkpoint_in_format,
    refold_reason,
    state_from_checkpoint,
    state_to_checkpoint,
)
from controller.journal.proof import prepare_for_run
from controller.journal.recovery import rebuild_state
from controller.journal.seals import read_seal, seal_file
from controller.journal.segments import seal_due, seal_open_segment, verify_segments
from controller.journal.state import TableState
from controller.journal.store import JournalError
from controller.progressive import model
from controller.progressive.controller import ProgressiveController
from controller.progressive.journal_store import JournalStore
from controller.progressive.model import Hit
from tests.journal.mixed import (
    CONFIG_SHA256,
    TABLE,
    assert_same_state,
    progressive_round_id,
    rounds,
    write_mixed,
)

KEY = b"0123456789abcdef0123456789abcdef-checkpoint-test"


def seal(path: Path) -> None:
    """Seal as the daemon does: the state the journal folds to, the anchor at the end."""
    with Journal.open(path, TABLE) as journal:
        state = rebuild_state(journal)
    sealed = seal_open_segment(
        path,
        state,
        key=KEY,
        write_anchor_at_end=lambda seq, hash_hex: write_anchor(
            path, Anchor.of(TABLE, seq, hash_hex), key=KEY
        ),
    )
    assert sealed is not None


def whole_fold(journal: Journal) -> TableState:
    return TableState(TABLE).apply_all(journal.replay())


@pytest.fixture
def small_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The meter remembers 6 rounds and 4 paid awards (20,000 and 2,000 live), so forgetting, and the
    refusal of a forgotten round's replay, happen within this journal."""
    monkeypatch.setattr(model, "RECENT_ROUNDS", 6)
    monkeypatch.setattr(model, "RECENT_PAID_AWARDS", 4)


def sealed_progressive_journal(path: Path) -> None:
    """Two sealed segments and an open one, progressive entries in each."""
    prepare_for_run(path, TABLE, key=KEY)
    count = len(rounds())
    for part in (range(7), range(7, 12), range(12, count)):
        with Journal.open(path, TABLE, synchronous="OFF") as journal:
            write_mixed(journal, part)
            last = journal.last_entry()
            assert last is not None
            write_anchor(path, Anchor.of(TABLE, last.seq, last.hash), key=KEY)
        if part.stop < count:
            seal(path)


@pytest.mark.usefixtures("small_memory")
def test_a_progressive_table_started_from_its_last_seal_is_the_whole_fold(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    sealed_progressive_journal(path)
    with Journal.open(path, TABLE) as journal:
        assert journal.file.base.segment == 3  # started from seal 2's checkpoint and the open segment
        started = rebuild_state(journal)
        whole = whole_fold(journal)
        meter = whole.progressive
        # The journal holds what a seal must carry: the meter moved, an overflow, a reserve movement, a
        # change, awards pending and paid, forgotten rounds, the software checks.
        assert meter.opened
        assert meter.changes == 1
        assert meter.overflow_cents > 0
        assert meter.reserve_moved_cents == 2_500
        assert meter.resets >= 2
        assert len(meter.pending()) >= 2
        assert meter.paid_cents > 0
        assert meter.forgotten_through.get(TABLE, 0) > 0
        assert meter.equations_hold()
        assert whole.software is not None
        assert whole.software_checked is not None
        assert whole.clock is not None
        assert whole.clock_stepped is not None
        assert whole.config_checked is not None
        assert [p.status for p in whole.changes.values()] == ["approved", "lapsed", "pending"]
        assert whole.approved_config_files == {CONFIG_SHA256: "C3"}
        assert_same_state(started, whole)
        assert started.progressive.to_json() == meter.to_json()  # every 1.39A meter, the pending awards
        assert started.progressive.pending() == meter.pending()

        # After the start, a replay is still answered as one, never counted or paid again.
        seq_before = journal.last_entry().seq  # type: ignore[union-attr]
        controller = ProgressiveController(JournalStore(journal), state=started.progressive)
        last_number = len(rounds())
        replayed = controller.contribute_now(TABLE, progressive_round_id(last_number - 1), 3)
        assert replayed.replayed
        claimed = controller.claim_now(TABLE, progressive_round_id(15), [Hit(0, 7)])
        assert claimed.replayed
        assert [award.pending for award in claimed.awards] == [True]
        with pytest.raises(UserError, match="older than the rounds the meter remembers"):
            controller.contribute_now(TABLE, progressive_round_id(1), 1)  # forgotten: refused
        paid = controller.confirm_paid_now(f"{TABLE}/{progressive_round_id(5)}/0", by="sup2")
        assert paid.replayed
        assert paid.award.paid is not None
        assert paid.award.paid.by == "sup1"
        with pytest.raises(UserError, match="was ever recorded"):  # paid long ago, forgotten: never again
            controller.confirm_paid_now(f"{TABLE}/{progressive_round_id(3)}/0", by="sup2")
        assert journal.last_entry().seq == seq_before  # type: ignore[union-attr]  # nothing written


def test_every_attribute_of_a_folded_state_is_carried_or_named_with_why(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j.sqlite", TABLE, synchronous="OFF") as journal:
        write_mixed(journal, range(len(rounds())))
        folded = whole_fold(journal)
    carried = set(state_to_checkpoint(folded)["state"])
    for name in vars(folded):
        where = CARRIED_AS.get(name, (name,))
        assert set(where) <= carried or name in NOT_CARRIED, (
            f"TableState.{name} is neither in the checkpoint (controller/journal/checkpoint.py) nor in "
            "its NOT_CARRIED with the reason: a seal would drop it"
        )
    assert all(reason.strip() for reason in NOT_CARRIED.values())
    assert set(NOT_CARRIED) <= set(vars(folded)), "NOT_CARRIED names an attribute TableState no longer has"
    restored = state_from_checkpoint(json.loads(canonical_json(state_to_checkpoint(folded))))
    assert_same_state(restored, folded)
    assert folded.progressive.opened
    assert folded.software is not None


def test_a_seal_of_format_1_is_refolded_at_start_and_verified_as_format_1(tmp_path: Path) -> None:
    """A seal the first release of segments wrote (no progressive, no software checks): read as a
    state it would restart the meter from zero, so it never is; the start folds the journal whole, and
    journal verify holds it to what format 1 carried."""
    path = tmp_path / "journal.sqlite"
    sealed_progressive_journal(path)
    for number in (1, 2):
        old = read_seal(path, number)
        assert old is not None
        checkpoint = checkpoint_in_format(old.checkpoint, 1)
        assert "progressive" not in checkpoint["state"]
        assert checkpoint["format"] == 1
        seal_file(path, number).chmod(0o644)
        seal_file(path, number).write_text(json.dumps(asdict(replace(old, checkpoint=checkpoint).keyed(KEY))))
        with pytest.raises(CheckpointFormatError, match="format 1"):
            state_from_checkpoint(checkpoint)
    with Journal.open(path, TABLE) as journal:
        assert_same_state(rebuild_state(journal), whole_fold(journal))
    assert [verdict.ok for verdict in verify_segments(path, key=KEY)] == [True, True]
    # A format-1 seal whose checkpoint was edited is still found.
    old = read_seal(path, 2)
    assert old is not None
    edited: dict[str, Any] = json.loads(json.dumps(old.checkpoint))
    edited["state"]["meters"]["handle_cents"] += 100_00
    seal_file(path, 2).write_text(json.dumps(asdict(replace(old, checkpoint=edited).keyed(KEY))))
    verdicts = verify_segments(path, key=KEY)
    assert [verdict.ok for verdict in verdicts] == [True, False]
    assert "checkpoint" in verdicts[1].line
    # The start reads the sealed past only against the seal: the same edit refuses the start.
    with Journal.open(path, TABLE) as journal, pytest.raises(JournalError, match="do not fold to"):
        rebuild_state(journal)


def test_a_start_after_a_seal_of_format_1_seals_at_once() -> None:
    """So the sealed segments are refolded at one start only (the open segment holds entries)."""
    now = datetime(2026, 12, 5, 12, tzinfo=UTC)
    policy: dict[str, Any] = {
        "every_entries": 500_000,
        "per_gaming_day": True,
        "gaming_day_start_utc": "06:00",
    }
    first = "2026-12-05T07:00:00.000000Z"  # today's gaming day, few entries: not due by the policy
    current = {"format": CHECKPOINT_FORMAT, "state": {}}
    format_1 = {"format": 1, "state": {}}
    assert seal_due(10, first, now, **policy) is None
    assert refold_reason(current) is None
    assert seal_due(10, first, now, **policy, last_checkpoint_refolds=refold_reason(current)) is None
    why = seal_due(10, first, now, **policy, last_checkpoint_refolds=refold_reason(format_1))
    assert why is not None
    assert "format 1" in why
    # nothing to seal yet
    assert seal_due(0, None, now, **policy, last_checkpoint_refolds=refold_reason(format_1)) is None
    assert CHECKPOINT_FORMAT == 4


@pytest.mark.parametrize(
    "paytable",
    [None, "progressive", {"7": {"meter_share_percent": 100}, "6": {"meter_share_percent": 10}, "5": 1000}],
)
def test_the_progressives_parameters_come_back_exactly(paytable: object) -> None:
    """A preset or a custom paytable, fractional rates, a sign-off amount and a lower wager bound: the
    parameters a checkpoint restores are the fold's (the same parser, on what a journaled ``after`` holds)."""
    opening: dict[str, object] = {
        "unit_cents": 400,
        "base_cents": 50_000,
        "reset_cents": 60_000,
        "increment_percent": 12.5,
        "hidden_percent": 2.25,
        "limit_cents": 90_000,
        "signoff_cents": 100_000,
        "max_round_wagers": 5,
    }
    if paytable is not None:
        opening["paytable"] = paytable
    meter = model.MeterState()
    meter.apply_all(model.open_events(TABLE, model.parse_parameters(opening), by="config"))
    meter.apply_all(model.contribution_events(meter, TABLE, progressive_round_id(1), 5))
    state = TableState(TABLE)
    state.progressive = meter
    restored = state_from_checkpoint(json.loads(canonical_json(state_to_checkpoint(state))))
    assert restored.progressive == meter
    assert restored.progressive.parameters == meter.parameters
    assert meter.parameters is not None
    assert meter.parameters.signoff_cents == 100_000
