"""Random event sequences (hypothesis): the engine never raises, never fails inside, never shows a
hole card before its reveal, and every round it closes settles to exactly what settle() gives."""

from __future__ import annotations

import os
import random
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from controller.engine import Alert, JournalRecord, Output, Refused, TableConfig
from controller.engine import actions as engine_actions
from controller.engine.state import DESIGNATED_PLAYER
from controller.rules.cards import cards_text
from controller.rules.settle import settle_round_json
from drivers.events import (
    CardDealt,
    Deal,
    DealerKey,
    DeckVerified,
    DeviceLost,
    DeviceReady,
    HandComplete,
    SecurityEvent,
    ShowText,
    ShufflerFault,
)
from tests.engine.table import Table

CONFIGS = (
    TableConfig(),
    TableConfig(banking_mode=DESIGNATED_PLAYER, rake={"method": "i", "amount": 25}, bonus_cap_cents=50_000),
    TableConfig(game="top-flush"),
    TableConfig(game="chase-the-flush", seats=(1, 2, 3, 4, 5, 6, 7)),
)
REVEALED = ("reveal", "settling", "paying", "complete")
AMOUNTS = (0, 0, 100, 500, 500, 1000, 1500, 2000, 5000, -5, 10**9)

seats = st.integers(min_value=0, max_value=9)
# Steps that make progress, so that random sequences reach decisions, reveals, settlements and faults
# mid-round; the noise below is interleaved with them.
progress = st.one_of(
    st.tuples(st.just("open"), st.integers(1, 4), st.sampled_from([100, 500, 2500])),
    st.tuples(st.just("deal_many"), st.integers(1, 40)),
    st.tuples(st.just("decide"), st.integers(1, 5), st.sampled_from([0, 1, 1, 1, 2, 3, 5])),
    st.tuples(st.just("key"), st.just("fold_seat"), st.integers(1, 5)),
    st.tuples(st.just("key"), st.sampled_from(["next", "confirm"]), st.none()),
    st.tuples(st.just("tick"), st.sampled_from([10.0, 31.0])),
    st.tuples(st.just("clear")),
)
noise = st.one_of(
    st.tuples(st.just("start")),
    st.tuples(st.just("lock")),
    st.tuples(st.just("confirm")),
    st.tuples(st.just("deal")),
    st.tuples(st.just("deal")),
    st.tuples(st.just("deal")),
    st.tuples(st.just("bet"), seats, st.integers(0, 4), st.sampled_from(AMOUNTS)),
    st.tuples(st.just("bet"), st.integers(1, 4), st.integers(0, 3), st.sampled_from(AMOUNTS)),
    st.tuples(st.just("bet"), st.integers(1, 4), st.integers(0, 3), st.sampled_from(AMOUNTS)),
    st.tuples(
        st.just("key"),
        st.sampled_from(["next", "confirm", "fold_seat", "dp_waives", "call_floor", "void_request", "bogus"]),
        st.one_of(st.none(), seats),
    ),
    st.tuples(st.just("card"), st.sampled_from([0, 1, 2, 3, 15, 9]), st.integers(-1, 8), st.integers(-1, 53)),
    st.tuples(st.just("complete"), st.sampled_from([0, 1, 2, 3, 15]), st.integers(0, 8)),
    st.tuples(
        st.just("fault"),
        st.sampled_from(["jam", "misread", "card_count", "door_open", "red_light", "other"]),
        st.one_of(st.none(), st.sampled_from([0, 1, 3, 15])),
    ),
    st.tuples(st.just("deck"), st.booleans()),
    st.tuples(st.just("tick"), st.sampled_from([1.0, 10.0, 31.0, 120.0])),
    st.tuples(st.just("clear")),
    st.tuples(st.just("void")),
    st.tuples(st.just("dp_accept"), st.sampled_from([0, -1, 5_000, 100_000])),
    st.tuples(st.just("move_button"), seats),
    st.tuples(
        st.just("device"),
        st.sampled_from(["lost", "ready", "security"]),
        st.sampled_from(["shuffler", "sensors", "display"]),
    ),
)
# (one_of flattens nested one_ofs, so the weighting is done with a draw: noise 1 step in 3, or 1 in 13)
actions = st.integers(0, 2).flatmap(lambda i: noise if i == 0 else progress)
mostly_progress = st.integers(0, 12).flatmap(lambda i: noise if i == 0 else progress)


def run(table: Table, action: tuple[Any, ...], deals: list[list[object]]) -> None:
    engine = table.engine
    now = table.now_s
    name = action[0]
    if name == "open":
        _, players, ante = action
        if engine.view().state != "idle":
            return
        if engine.view().config.banking_mode == DESIGNATED_PLAYER and engine.view().dp_seat is None:
            table.call(engine.handle, engine_actions.DpAccepts(1_000_000, "dealer"), now)
        table.start()
        dp = engine.view().dp_seat
        for seat in [s for s in engine.view().config.seats if s != dp][:players]:
            table.bet(seat, "ante", ante)
            if engine.view().config.game == "chase-the-flush":
                table.bet(seat, "xtra_bonus", ante)
        table.lock()
    elif name == "deal_many":
        for _ in range(action[1]):
            if not deals:
                break
            if deals[0]:
                table.event(deals[0].pop(0))
            else:
                deals.pop(0)
    elif name == "decide":
        _, seat, multiplier = action
        live = engine.view().round
        if live is not None and seat in live.seats:
            ante = live.seats[seat].wagers.get("ante", 0)
            spot = table.wagers.index(engine.view().spec.decision_wager)
            table.bet(seat, table.wagers[spot], ante * multiplier, locked=True)
    elif name == "start":
        table.start()
    elif name == "lock":
        table.lock()
    elif name == "confirm":
        table.confirm()
    elif name == "deal":
        # The shoe deals the oldest Deal command in flight, one event per action step.
        if deals and deals[0]:
            table.event(deals[0].pop(0))
        elif deals:
            deals.pop(0)
    elif name == "bet":
        _, seat, spot, amount = action
        spot_count = len(table.wagers)
        if spot < spot_count:
            table.bet(seat, table.wagers[spot], amount, locked=engine.view().state not in ("idle", "betting"))
    elif name == "key":
        table.event(DealerKey("display", action[1], action[2]))
    elif name == "card":
        table.event(CardDealt("shuffler", action[1], action[2], action[3]))
    elif name == "complete":
        table.event(HandComplete("shuffler", action[1], action[2]))
    elif name == "fault":
        table.event(ShufflerFault("shuffler", action[1], action[2]))
    elif name == "deck":
        table.event(DeckVerified("shuffler", 52 if action[1] else 51, () if action[1] else (3,), ()))
    elif name == "tick":
        table.tick(action[1])
    elif name == "clear":
        latched = list(engine.view().latched)
        if latched:
            table.call(engine.handle, engine_actions.ClearFault(latched[0], "sue", "checked"), now)
    elif name == "void":
        table.call(engine.handle, engine_actions.VoidRound("test", "sue"), now)
    elif name == "dp_accept":
        table.call(engine.handle, engine_actions.DpAccepts(action[1], "dealer"), now)
    elif name == "move_button":
        table.call(engine.handle, engine_actions.MoveButton(action[1], "sue"), now)
    elif name == "device":
        kind, device = action[1], action[2]
        if kind == "lost":
            table.event(DeviceLost(device, "unplugged"))
        elif kind == "ready":
            table.event(DeviceReady(device, "x", "m", "sn", "1.0"))
        else:
            table.event(SecurityEvent(device, "bad_tag"))


def hole_card_texts(table: Table) -> set[str]:
    live = table.engine.view().round
    if live is None:
        return set()
    texts: set[str] = set(cards_text(live.dealer_cards))
    for play in live.seats.values():
        texts.update(cards_text(play.cards))
    return texts


def check_invariants(table: Table, start: int) -> None:
    engine = table.engine
    new = table.outputs[start:]
    for out in new:
        if isinstance(out, Alert):
            assert not out.message.startswith(("engine error", "round machine error")), out.message
    view = engine.view()
    revealed = view.state in REVEALED and view.round is not None and not view.round.closed_dead
    if not revealed:
        # Nothing meant for a display names a hole card: not the journal's public parts (what the panel,
        # the recall and the floor show), not the texts, not the alerts, not refusals.
        hole = hole_card_texts(table)
        assert not hole & table.public_journal_cards(start), hole
        for out in new:
            words: list[str] = []
            if isinstance(out, ShowText):
                words = out.text.replace(":", " ").replace(",", " ").split()
            elif isinstance(out, Alert):
                words = out.message.replace(":", " ").replace(",", " ").replace("(", " ").split()
            elif isinstance(out, Refused):
                words = out.reason.replace(":", " ").replace(",", " ").split()
            assert not hole & set(words), (out, hole)
    for out in new:
        if isinstance(out, JournalRecord) and out.kind in ("round_settled", "round_dead", "round_voided"):
            settlement = out.payload["settlement"]
            assert settle_round_json(out.payload["round"]) == settlement
            assert isinstance(settlement, dict)
            nets = sum(seat["net"] for seat in settlement["seats"])
            assert nets + settlement["banker_net"] + settlement["rake"] == 0


# 150 examples in `make test` (a few seconds); a long fuzz run: ENGINE_FUZZ_EXAMPLES=5000 pytest this file.
FUZZ_EXAMPLES = int(os.environ.get("ENGINE_FUZZ_EXAMPLES", "150"))


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config_index=st.integers(0, len(CONFIGS) - 1),
    deck_seed=st.integers(0, 2**32 - 1),
    steps=st.one_of(
        st.lists(actions, min_size=15, max_size=120), st.lists(mostly_progress, min_size=15, max_size=120)
    ),
)
def test_random_event_sequences_never_break_the_engine_or_leak_a_card(
    config_index: int, deck_seed: int, steps: list[tuple[Any, ...]]
) -> None:
    deck = list(range(52))
    random.Random(deck_seed).shuffle(deck)
    table = Table(CONFIGS[config_index], deck, auto_deal=False)
    deals: list[list[object]] = []
    closed: dict[str, int] = {}
    for action in steps:
        start = len(table.outputs)
        run(table, action, deals)
        for out in table.outputs[start:]:
            if isinstance(out, Deal):
                if table.next_card + sum(c for _, c in out.positions) > 52:
                    table.next_card = 0  # the next deck
                deals.append(table.shoe_events(out))
            if isinstance(out, JournalRecord) and out.kind in ("round_settled", "round_dead", "round_voided"):
                assert out.round_id is not None
                closed[out.round_id] = closed.get(out.round_id, 0) + 1
        check_invariants(table, start)
    assert all(count == 1 for count in closed.values()), closed  # a round is closed exactly once
    kinds = {o.kind for o in table.outputs if isinstance(o, JournalRecord)}
    for kind in ("round_settled", "round_dead", "round_voided", "past_posting", "decision", "dead_hand"):
        if kind in kinds:
            event(f"reached {kind}")


def scripted_round_steps(game_index: int) -> list[tuple[Any, ...]]:
    """A sequence that plays a whole round, to check the property test's driver can reach settlement."""
    steps: list[tuple[Any, ...]] = [("start",), ("bet", 1, 0, 500)]
    if CONFIGS[game_index].game == "chase-the-flush":
        steps.append(("bet", 1, 1, 500))  # the X-tra Bonus, equal to the ante
    steps.append(("lock",))
    steps += [("deal",)] * 30 + [("tick", 31.0)] + [("deal",)] * 5 + [("tick", 31.0)] + [("deal",)] * 5
    steps += [("tick", 31.0)]
    return steps


def test_the_random_driver_can_play_a_round_to_settlement() -> None:
    for index in (0, 2, 3):
        deck = list(range(52))
        table = Table(CONFIGS[index], deck, auto_deal=False)
        deals: list[list[object]] = []
        for action in scripted_round_steps(index):
            start = len(table.outputs)
            run(table, action, deals)
            deals.extend(table.shoe_events(o) for o in table.outputs[start:] if isinstance(o, Deal))
            check_invariants(table, start)
        assert table.journal("round_settled"), CONFIGS[index].game


def test_the_leak_check_catches_a_leak() -> None:
    """The invariant is not vacuous: an engine that shows hole cards before the reveal fails it."""
    import pytest

    from controller.engine import TableEngine
    from controller.journal import entries

    class LeakyEngine(TableEngine):
        """Journals the banker's first card in a public field as soon as it is dealt."""

        def handle(self, event: object, now_s: float) -> list[Output]:
            outs = super().handle(event, now_s)
            live = self.view().round
            if live is not None and live.dealer_cards:
                leak = entries.DealerKey(key=cards_text(live.dealer_cards[:1])[0], seat=None)
                outs.append(JournalRecord("dealer_key", leak, live.round_id, "engine"))
            return outs

    table = Table(CONFIGS[0], list(range(52)))
    table.engine = LeakyEngine(CONFIGS[0])
    table.start()
    table.bet(1, "ante", 500)
    start = len(table.outputs)
    table.lock()
    assert table.engine.view().state == "decisions"
    with pytest.raises(AssertionError):
        check_invariants(table, start)
