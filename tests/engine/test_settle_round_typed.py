"""The engine settles the round it built as a typed value, never reading back the settle input it
journals (issue 28): for every round the engine closes (settled, dead, voided; house and designated
player, a rake and a bonus cap, its own paytables and a manager's change of them, the Progressive), the
typed round equals ``parse_round`` of the journaled input, and the journaled settlement equals
``settle`` of that input."""

from __future__ import annotations

import pytest

from controller.engine import TableConfig
from controller.engine import actions as a
from controller.engine.settling import RoundToSettle
from controller.engine.state import DESIGNATED_PLAYER
from controller.rules.settle import Round, parse_round, settle_round_json
from tests.engine.table import Table, stack
from tests.engine.test_autoplay import CONFIGS, check_session, play_session
from tests.progressive.test_table_progressive import (
    DEALER,
    NOTHING,
    PARAMETERS,
    SEVEN_CARD_SF,
    THREE_CARD_SF,
    play,
)

SESSIONS = {
    **CONFIGS,
    "hcf-dp-own-paytables": TableConfig(
        banking_mode=DESIGNATED_PLAYER,
        house_may_bank=True,
        paytables={"flush": "hcf-flush-dp", "straight_flush": {"7": 500, "5": 100, "3": 5}},
    ),
}


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict[str, object], Round]]:
    """Every (settle input, typed round) the engine settles, as it builds them (a spy: the real method)."""
    seen: list[tuple[dict[str, object], Round]] = []
    original = RoundToSettle.settle_round

    def spy(self: RoundToSettle, *, dead: bool = False) -> tuple[dict[str, object], Round]:
        pair = original(self, dead=dead)
        seen.append(pair)
        return pair

    monkeypatch.setattr(RoundToSettle, "settle_round", spy)
    return seen


@pytest.mark.parametrize("name", list(SESSIONS))
def test_the_typed_round_is_the_journaled_input_read(
    name: str, built: list[tuple[dict[str, object], Round]]
) -> None:
    table = play_session(SESSIONS[name], rounds=60, seed=11, fault_rate=0.2)
    counts = check_session(table)
    assert counts["round_settled"] > 0
    assert len(built) == sum(counts.values())
    assert any(round_.dead for _obj, round_ in built) or name == "hcf-dp-own-paytables"
    for obj, round_ in built:
        assert round_ == parse_round(obj)
    closings = [r for r in table.journal() if r.kind in ("round_settled", "round_dead", "round_voided")]
    for (obj, _round), record in zip(built, closings, strict=True):
        assert record.payload["round"] == obj
        assert record.payload["settlement"] == settle_round_json(obj)


def test_a_round_with_the_progressive_is_typed_as_its_input_reads(
    built: list[tuple[dict[str, object], Round]],
) -> None:
    table = Table(
        TableConfig(game="top-flush", progressive=PARAMETERS),
        stack(SEVEN_CARD_SF, THREE_CARD_SF, NOTHING, DEALER),
    )
    play(table, {1: 100, 2: 100, 3: 100})
    ((obj, round_),) = built
    assert round_.progressive is not None
    assert round_ == parse_round(obj)
    assert table.payload("round_settled")["settlement"] == settle_round_json(obj)


def test_a_managers_paytable_change_settles_the_next_round_by_the_new_table(
    built: list[tuple[dict[str, object], Round]],
) -> None:
    # The engine parses its configuration's paytables once per configuration: a manager's change
    # (a new configuration) must be what the next round settles by.
    config = TableConfig(seats=(1,), paytables={"flush": {"7": 300, "6": 100, "5": 10, "4": 1}})
    table = Table(config, [])

    def one_round() -> None:
        table.deck, table.next_card = stack(NOTHING, DEALER), 0
        table.start()
        table.bet(1, "ante", 500)
        table.bet(1, "flush", 100)
        table.lock()
        table.bet(1, "raise", 500)
        table.key("confirm")
        table.key("next")
        assert table.engine.view().state == "idle"
        for wager in ("ante", "flush", "raise"):  # the chips paid and collected
            table.bet(1, wager, 0)

    one_round()
    outs = table.event(a.SetPaytable("flush", {"7": 900, "6": 90, "5": 9}, by="mgr"))
    assert not table.refusals(outs)
    one_round()
    assert [round_.paytables["flush"].odds_for(7) for _obj, round_ in built] == [300, 900]
    for obj, round_ in built:
        assert round_ == parse_round(obj)
