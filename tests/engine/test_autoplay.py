"""Simulated players and dealer (controller/simulation/autoplay.py) play long sessions of every game through
the engine, with faults injected at random: every round closes exactly once, every closing settles to
settle() of its round, money balances, and the table never stops for good."""

from __future__ import annotations

import random

import pytest

from controller.engine import JournalRecord, TableConfig
from controller.engine import actions as a
from controller.engine.state import DESIGNATED_PLAYER
from controller.rules.settle import settle_round_json
from controller.simulation.autoplay import AutoPlayer, PlaceChips, PressKey
from drivers.events import BetChanged, CardDealt, DealerKey, ShufflerFault
from tests.engine.table import Table

CONFIGS = {
    "hcf-house": TableConfig(),
    "hcf-dp": TableConfig(
        banking_mode=DESIGNATED_PLAYER, rake={"method": "ii", "amount": 50}, bonus_cap_cents=200_000
    ),
    "top-flush": TableConfig(game="top-flush"),
    "chase": TableConfig(game="chase-the-flush", seats=(1, 2, 3, 4, 5, 6, 7)),
}
CLOSINGS = ("round_settled", "round_dead", "round_voided")


def play_session(config: TableConfig, rounds: int, seed: int, fault_rate: float) -> Table:
    rng = random.Random(seed)
    table = Table(config, list(range(52)))
    player = AutoPlayer(random.Random(seed + 1))

    def new_deck() -> None:
        table.deck = list(range(52))
        rng.shuffle(table.deck)
        table.next_card = 0

    def sabotage(position: int, index: int, card: int) -> list[object] | None:
        if rng.random() > fault_rate / 6:
            return None
        choice = rng.choice(["drop", "red_light", "duplicate", "past_post"])
        if choice == "drop":
            return []
        if choice == "red_light":
            return [
                CardDealt("shuffler", position, index, card),
                ShufflerFault("shuffler", "red_light", position),
            ]
        if choice == "duplicate" and table.next_card > 1:
            return [CardDealt("shuffler", position, index, table.deck[0])]
        return [CardDealt("shuffler", position, index, card), BetChanged("sensors", 1, 0, 99_900, 999, True)]

    table.tamper = sabotage
    steps = 0
    while len([e for e in table.journal() if e.kind in CLOSINGS]) < rounds:
        steps += 1
        assert steps < rounds * 200, "the session stalled"
        engine = table.engine
        if engine.view().state == "betting" and table.next_card:
            new_deck()
        if engine.view().held:
            # The simulated supervisor: chips back first (the player's actions), then clear every fault.
            for action in player.next_actions(engine.view()):
                if isinstance(action, PlaceChips):
                    table.bet(action.seat, action.wager, action.amount_cents, locked=True)
            for fault_id in list(engine.view().latched):
                table.event(a.ClearFault(fault_id, "sim-supervisor", "simulated fault checked"))
            continue
        actions = player.next_actions(engine.view())
        if not actions:
            table.tick(engine.view().config.decision_timeout_s + 1)
            continue
        for action in actions:
            if isinstance(action, PlaceChips):
                table.bet(
                    action.seat, action.wager, action.amount_cents, locked=engine.view().state != "betting"
                )
            elif isinstance(action, PressKey):
                table.event(DealerKey("display", action.key, action.seat))
            else:
                table.event(action)
    return table


def check_session(table: Table) -> dict[str, int]:
    counts = dict.fromkeys(CLOSINGS, 0)
    closed: set[str] = set()
    for entry in table.journal():
        if entry.kind not in CLOSINGS:
            continue
        assert entry.round_id not in closed
        assert entry.round_id is not None
        closed.add(entry.round_id)
        counts[entry.kind] += 1
        settlement = entry.payload["settlement"]
        assert settle_round_json(entry.payload["round"]) == settlement
        assert isinstance(settlement, dict)
        assert sum(s["net"] for s in settlement["seats"]) + settlement["banker_net"] + settlement["rake"] == 0
    started = {e.round_id for e in table.journal("round_started")}
    assert closed <= started
    assert len(started - closed) <= 1  # at most the round in play when the session stopped
    errors = [
        e.payload
        for e in table.journal("fault_raised")
        if isinstance(e, JournalRecord)
        and str(e.payload["reason"]["message"]).startswith(("engine error", "round machine"))
    ]
    assert errors == []
    return counts


@pytest.mark.parametrize("name", list(CONFIGS))
def test_autoplay_session_without_faults_settles_every_round(name: str) -> None:
    table = play_session(CONFIGS[name], rounds=40, seed=7, fault_rate=0.0)
    counts = check_session(table)
    assert counts["round_settled"] == 40
    kinds = set(table.kinds())
    assert "decision" in kinds
    if name != "chase":
        assert "decision_refused" in kinds  # an over-limit raise was made and corrected
    if name == "hcf-dp":
        assert "button_moved" in kinds


@pytest.mark.parametrize("name", list(CONFIGS))
def test_autoplay_session_with_faults_keeps_every_money_line(name: str) -> None:
    table = play_session(CONFIGS[name], rounds=60, seed=11, fault_rate=0.2)
    counts = check_session(table)
    assert counts["round_settled"] > 0
    assert counts["round_dead"] + len(table.journal("past_posting")) + len(table.journal("dead_hand")) > 0
