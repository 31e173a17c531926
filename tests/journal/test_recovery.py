"""Recovery: the state rebuilt from the journal; interrupted rounds voided once, every wager returned."""

from __future__ import annotations

import ast
import inspect
import random
import textwrap
from pathlib import Path

import pytest

from controller.cli import main
from controller.engine.state import RecoveredState, ReducedState
from controller.journal import Journal, JournalError
from controller.journal.anchor import Anchor
from controller.journal.meters import compute_meters
from controller.journal.recall import recall_from
from controller.journal.recovery import AnchorNotHeld, OpenRound, rebuild_state, recover
from controller.journal.state import TableState
from controller.journal.verify import verify_chain
from controller.rules.settle import settle_round_json
from tests.journal.scripted import play_round


def locked_stakes(journal: Journal, round_id: str) -> dict[int, dict[str, int]]:
    locked = next(journal.entries(round_id=round_id, kinds=["bets_locked"]))
    return {int(seat): wagers for seat, wagers in locked.payload["wagers"].items()}


@pytest.mark.parametrize("game", ["high-card-flush", "top-flush", "chase-the-flush"])
@pytest.mark.parametrize("outcome", ["open_after_lock", "open_mid_deal"])
def test_an_interrupted_round_is_voided_with_every_locked_wager_returned(
    journal: Journal, game: str, outcome: str
) -> None:
    rng = random.Random(11)
    settled = play_round(journal, rng, game=game)
    interrupted = play_round(journal, rng, game=game, outcome=outcome)  # type: ignore[arg-type]
    state = rebuild_state(journal)
    assert [open_round.round_id for open_round in state.open_rounds] == [interrupted]
    assert state.open_rounds[0].locked_wagers == locked_stakes(journal, interrupted)

    report = recover(journal)
    assert report.voided == [interrupted]
    voided = next(journal.entries(round_id=interrupted, kinds=["round_voided"]))
    assert voided.source == "recovery"
    assert voided.payload["by"] == "recovery"
    settlement = voided.payload["settlement"]
    returned = {
        seat["seat"]: {name: wager["stake"] for name, wager in seat["wagers"].items()}
        for seat in settlement["seats"]
    }
    assert returned == locked_stakes(journal, interrupted)
    assert all(
        wager["result"] == "returned" and wager["net"] == 0
        for seat in settlement["seats"]
        for wager in seat["wagers"].values()
    )
    assert settlement["banker_net"] == 0
    # The record settles to itself with the rules engine, like every other recalled round.
    assert settle_round_json(voided.payload["round"]) == settlement
    # The settled round before it was not touched.
    assert [
        entry.kind for entry in journal.entries(round_id=settled, kinds=["round_settled", "round_voided"])
    ] == ["round_settled"]


def test_a_crash_before_the_lock_leaves_no_round_to_void(journal: Journal, journal_path: Path) -> None:
    """The engine starts a round when it locks the bets: chips on the layout before that are the
    players' own, journaled as sensed (bet_changed, no round), and a crash then leaves nothing to void
    and no round number used."""
    play_round(journal, random.Random(12), outcome="open_before_lock")
    sensed = list(journal.entries(kinds=["bet_changed"]))
    assert sensed
    assert all(entry.round_id is None and not entry.payload["locked"] for entry in sensed)
    assert list(journal.entries(kinds=["round_started", "bets_locked"])) == []
    state = rebuild_state(journal)
    assert state.open_rounds == []
    assert state.phase == "betting"
    report = recover(journal)
    assert report.voided == []
    assert report.resumed == []
    assert list(journal.entries(kinds=["round_voided"])) == []
    assert recall_from(journal) == []
    meters = compute_meters(journal)
    assert meters.rounds_started == 0
    assert meters.returned_cents == 0
    assert meters.balanced
    journal.close()
    # After the restart the next round is the journal's first, numbered 1.
    with Journal.open(journal_path, "T1") as reopened:
        first = play_round(reopened, random.Random(13))
        assert first.endswith("-000001")
        assert [record["status"] for record in recall_from(reopened)] == ["settled"]
    assert verify_chain(journal_path).ok


def test_recovery_is_idempotent_and_never_closes_a_round_twice(journal: Journal, journal_path: Path) -> None:
    rng = random.Random(13)
    for outcome in ("settled", "open_after_lock", "dead", "open_mid_deal"):
        play_round(journal, rng, outcome=outcome)
    first = recover(journal)
    assert len(first.voided) == 2
    count = journal.last_entry().seq  # type: ignore[union-attr]
    journal.close()
    # A restart: a new process, a new connection.
    with Journal.open(journal_path, "T1") as reopened:
        second = recover(reopened)
        assert second.voided == []
        assert reopened.last_entry().seq == count  # type: ignore[union-attr]
        closings: dict[str, int] = {}
        for entry in reopened.entries(kinds=["round_settled", "round_dead", "round_voided"]):
            closings[entry.round_id or ""] = closings.get(entry.round_id or "", 0) + 1
        assert closings == dict.fromkeys(closings, 1)
        assert len(closings) == 4
        assert compute_meters(reopened).balanced
    assert verify_chain(journal_path).ok


def test_two_recoveries_racing_void_a_round_once(journal: Journal, journal_path: Path) -> None:
    interrupted = play_round(journal, random.Random(14), outcome="open_after_lock")
    second = Journal.open(journal_path, "T1")

    def the_other_process_gets_there_first(open_round: OpenRound) -> bool:
        assert recover(second).voided == [open_round.round_id]
        return False  # then this one tries to void it too, and must step aside

    report = recover(journal, can_resume=the_other_process_gets_there_first)
    second.close()
    assert report.voided == []
    assert len(list(journal.entries(round_id=interrupted, kinds=["round_voided"]))) == 1


def test_a_round_that_can_be_resumed_is_left_open(journal: Journal) -> None:
    interrupted = play_round(journal, random.Random(15), outcome="open_mid_deal")
    report = recover(journal, can_resume=lambda open_round: True)
    assert report.resumed == [interrupted]
    assert report.voided == []
    assert [open_round.round_id for open_round in report.state.open_rounds] == [interrupted]


def test_latched_faults_hold_the_table_across_restarts_until_cleared(
    journal: Journal, journal_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(16)
    dead = play_round(journal, rng, outcome="dead")  # raises a latching red_light fault
    red = next(journal.entries(round_id=dead, kinds=["fault_raised"]))
    assert red.payload["kind"] == "red_light"
    assert red.payload["severity"] == "latching"
    red_id = red.payload["fault_id"]
    # An alert (not latching) between rounds, as the engine types it: a structured reason.
    journal.append(
        "fault_raised",
        {
            "fault_id": "F-alert",
            "kind": "device_lost",
            "severity": "alert",
            "device": "display",
            "reason": {"code": "device_lost", "message": "display lost"},
        },
        round_id=None,
        source="engine",
    )
    journal.close()
    with Journal.open(journal_path, "T1") as reopened:
        state = rebuild_state(reopened)
    assert state.held
    assert list(state.latched_faults) == [red_id]
    assert set(state.open_alerts) == {red_id, "F-alert"}
    assert state.latched_faults[red_id].round_id == dead
    assert state.open_alerts["F-alert"].detail == "display lost"

    base = ["clear", "--journal", str(journal_path)]
    capsys.readouterr()  # the appends' log lines
    assert main([*base, "--reason", " ", "--by", "sam"]) == 2
    assert capsys.readouterr().err == "flushtable clear: --reason: empty; say why the table may play again\n"
    # A final line break is no part of a name: it would be journaled and logged with it.
    assert main([*base, "--reason", "ok", "--by", "sam\n"]) == 2
    assert (
        capsys.readouterr().err
        == "flushtable clear: --by: 'sam\\n' is not a name (letters, digits, . _ @ -)\n"
    )
    assert main([*base, "--reason", "ok", "--by", "sam", "--fault", "F-alert"]) == 2
    assert "'F-alert' is not a latched fault" in capsys.readouterr().err
    assert main([*base, "--reason", "shoe inspected, deck replaced", "--by", "sam"]) == 0
    out = capsys.readouterr().out
    assert f"Cleared {red_id}: red_light {red.payload['reason']['message']}" in out
    assert "The table is no longer held." in out
    with Journal.open_existing(journal_path) as reopened:
        state = rebuild_state(reopened)
        cleared = next(reopened.entries(kinds=["fault_cleared"]))
    assert not state.held
    assert cleared.source == "operator:sam"
    assert cleared.payload == {
        "fault_id": red_id,
        "by": "sam",
        "reason": "shoe inspected, deck replaced",
    }
    assert main([*base, "--reason", "again", "--by", "sam"]) == 0
    assert capsys.readouterr().out == "No latched faults: the table is not held.\n"


def test_button_designated_player_and_round_numbers_are_rebuilt(journal: Journal, journal_path: Path) -> None:
    rng = random.Random(17)
    play_round(journal, rng)
    dp_round = play_round(journal, rng, banking_mode="designated-player")
    dp_banking = next(journal.entries(round_id=dp_round, kinds=["round_started"])).payload["banking"]
    journal.append("dp_waived", {"seat": 3}, round_id=None, source="display")
    journal.close()
    with Journal.open(journal_path, "T1") as reopened:
        state = rebuild_state(reopened)
        assert state.last_round_id == dp_round
        assert state.last_round_number == 2
        assert reopened.indexes.next_round_id().endswith("-000003")
        assert state.designated_player == dp_banking
        assert state.button_seat == dp_banking["seat"]
        assert state.waived_seats == [3]
        reopened.append(
            "button_moved",
            {"from_seat": dp_banking["seat"], "to_seat": 5, "reason": "rotate", "by": "engine"},
            round_id=None,
            source="engine",
        )
        state = rebuild_state(reopened)
        assert state.button_seat == 5
        assert state.waived_seats == []


def test_a_settled_round_cannot_be_voided_by_anyone(journal: Journal) -> None:
    settled = play_round(journal, random.Random(18))
    record = recall_from(journal, round_id=settled)[0]
    with pytest.raises(JournalError, match="already closed by round_settled"):
        journal.append(
            "round_voided",
            {"round": record["round"], "settlement": record["settlement"], "reason": "x", "by": "mallory"},
            round_id=settled,
            source="operator:mallory",
        )


def test_recovery_refuses_when_the_journal_does_not_hold_its_anchored_entry(journal: Journal) -> None:
    """A round whose settlement an anchor has seen is never voided: recovery checks the anchored entry on
    the connection it writes with, and writes nothing when it is not there (issue 30)."""
    rng = random.Random(5)
    settled = play_round(journal, rng)
    interrupted = play_round(journal, rng, outcome="open_after_lock")
    last = journal.last_entry()
    assert last is not None
    settled_at = next(journal.entries(round_id=settled, kinds=["round_settled"])).seq
    # The anchor names an entry past the end (the settlement of a round cut off with its WAL), or an
    # entry the journal holds with another hash (rewritten): nothing is voided.
    for anchored in (
        Anchor.of("T1", last.seq + 3, "a" * 64),
        Anchor.of("T1", settled_at, "b" * 64),
    ):
        with pytest.raises(AnchorNotHeld, match=f"the anchor names entry {anchored.seq}, which the journal"):
            recover(journal, anchored=anchored)
        last_now = journal.last_entry()
        assert last_now is not None
        assert last_now.seq == last.seq
    held = journal.entry(settled_at)
    assert held is not None
    report = recover(journal, anchored=Anchor.of("T1", settled_at, held.hash))
    assert report.voided == [interrupted]


def test_recovery_hands_the_engine_a_typed_state() -> None:
    """docs/engine.md "Journal entries": the engine reads the reducer's state through ``ReducedState``
    (the type checker holds ``TableState`` to it, below), never by ``getattr`` on an object."""
    reduced: ReducedState = TableState("T1")  # mypy: TableState is a ReducedState
    assert RecoveredState.from_table_state(reduced) == RecoveredState()
    source = inspect.getsource(RecoveredState.from_table_state)
    calls = [
        node.func.id
        for node in ast.walk(ast.parse(textwrap.dedent(source)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    assert "getattr" not in calls
    assert "hasattr" not in calls
