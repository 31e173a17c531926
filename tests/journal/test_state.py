"""The one reducer against the engine: folding the records the engine returns gives, at every step of
long faulted sessions of every game, what the engine itself holds — the round and its wagers, the
latched faults, the button, the phase, the rounds counted — and the meters balance with every closing
settlement. And the same fold read back from the journal file equals the fold of the records."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.engine import JournalRecord
from controller.journal import Journal
from controller.journal import entries as e
from controller.journal.state import TableState
from controller.rules.settle import settle_round_json
from tests.engine.table import recovered_state
from tests.engine.test_autoplay import CONFIGS, play_session


@dataclass(frozen=True, slots=True)
class Stamped:
    """A record as the journal would store it (the fold needs only the envelope and the entry)."""

    seq: int
    time_utc: str
    table_id: str
    round_id: str | None
    source: str
    entry: e.Entry


def stamped(records: list[JournalRecord], table_id: str) -> list[Stamped]:
    return [
        Stamped(
            seq, f"2027-01-15T08:00:00.{seq:06d}Z", table_id, record.round_id, record.source, record.entry
        )
        for seq, record in enumerate(records, start=1)
    ]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_fold_of_the_engines_records_is_the_engines_state(name: str, tmp_path: Path) -> None:
    table = play_session(CONFIGS[name], rounds=25, seed=11, fault_rate=0.5)
    engine = table.engine
    records = table.journal()
    state = TableState(engine.view().config.table_id).apply_all(
        stamped(records, engine.view().config.table_id)
    )

    assert set(state.latched_faults) == set(engine.view().latched)
    assert state.rounds_started == recovered_state(engine).rounds_started
    assert state.button_seat == recovered_state(engine).button_seat
    assert state.phase == engine.view().state
    live = engine.view().round
    if live is not None and not live.closed:
        open_round = state.rounds[live.round_id]
        assert open_round.open
        held = {seat: dict(play.wagers) for seat, play in live.seats.items() if any(play.wagers.values())}
        assert {seat: w for seat, w in open_round.wagers().items() if any(w.values())} == held
    # Meters: every closing entry counted once, and money balances round by round.
    closings = [r for r in records if r.kind in ("round_settled", "round_dead", "round_voided")]
    meters = state.meters
    assert meters.rounds_settled + meters.rounds_dead + meters.rounds_voided == len(closings)
    assert meters.balanced
    assert not meters.unbalanced_rounds
    assert meters.player_net_cents == sum(
        seat["net"] for r in closings for seat in r.payload["settlement"]["seats"]
    )
    # Every settled round's private round re-settles to its settlement (hands included).
    for record in closings:
        if record.kind == "round_settled":
            assert settle_round_json(record.payload["round"]) == record.payload["settlement"]

    # The same records through the journal file: the replayed fold agrees with the direct one.
    path = tmp_path / "journal.sqlite"
    with Journal.open(path, engine.view().config.table_id, synchronous="OFF") as journal:
        journal.append_many(records)
        replayed = TableState(journal.table_id).apply_all(journal.replay())
    assert replayed.meters.to_json() == meters.to_json()
    assert set(replayed.latched_faults) == set(state.latched_faults)
    assert replayed.closed_rounds == state.closed_rounds
    assert replayed.phase == state.phase


def test_step_by_step_the_open_round_matches_the_engine() -> None:
    """After every engine step of a faulted session, the fold's open round holds what the engine holds
    (what recovery would void and return if the controller died right there)."""
    rng = random.Random(3)
    config = CONFIGS["hcf-house"]
    table = play_session(config, rounds=6, seed=rng.randrange(1000), fault_rate=0.3)
    records = table.journal()
    state = TableState(config.table_id)
    checked = 0
    for item in stamped(records, config.table_id):
        state.apply(item)
        for round_state in state.open_rounds:
            assert round_state.round_id.startswith(f"R{config.table_id}-")
            assert round_state.locked_wagers is None or all(
                wagers.get("ante", 0) > 0 for wagers in round_state.locked_wagers.values()
            )
            checked += 1
    assert checked > 0
    assert not state.open_rounds or state.open_rounds[-1].round_id == table.engine.view().round.round_id  # type: ignore[union-attr]


def test_a_community_card_is_not_shown_while_its_street_is_being_dealt() -> None:
    """Chase the Flush: the flop's cards show once the flop is dealt in full (the machine in ``flop``),
    not while the shoe deals them: here the shoe drops the flop's second card, the community's count is
    wrong, the round is dead, and the first flop card — dealt, journaled, fanned out while the round
    was in ``dealing_flop`` — must never have been visible."""
    from controller.journal.state_parts import COMMUNITY_POSITION
    from controller.simulation.autoplay import AutoPlayer, PlaceChips, PressKey
    from tests.engine.table import Table

    config = CONFIGS["chase"]
    table = Table(config, list(range(52)))
    engine = table.engine
    table.tamper = lambda position, index, card: [] if (position, index) == (COMMUNITY_POSITION, 1) else None
    player = AutoPlayer(random.Random(4), walk_away_rate=0.0, over_limit_rate=0.0)
    for _ in range(200):
        live = engine.view().round
        if live is not None and live.closed:
            break
        actions = player.next_actions(engine.view())
        for action in actions:
            if isinstance(action, PlaceChips):
                table.bet(
                    action.seat, action.wager, action.amount_cents, locked=engine.view().state != "betting"
                )
            elif isinstance(action, PressKey):
                table.key(action.key, action.seat)
        if not actions:
            table.tick(config.decision_timeout_s + 1)
    records = table.journal()
    assert any(r.kind == "round_dead" for r in records), "the round should die on the community's count"
    state = TableState(config.table_id)
    community_seen = 0
    for item in stamped(records, config.table_id):
        state.apply(item)
        part = item.entry.private_part()
        if isinstance(part, e.CardDealtPrivate) and part.position == COMMUNITY_POSITION:
            community_seen += 1
            assert not state.private_visible(item), f"community card shown in {state.phase}"
    assert community_seen >= 1
