"""`flushtable demo` (what `make run` runs until the daemon exists): a settled round of each game."""

from __future__ import annotations

import pytest

from controller.cli import main
from controller.commands.demo import deal_demo_rounds
from controller.rules.games import CHASE_THE_FLUSH, DESIGNATED_PLAYER, HIGH_CARD_FLUSH, TOP_FLUSH


def test_the_demo_prints_a_settled_round_of_each_game(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "7"]) == 0
    out = capsys.readouterr().out
    for title in (
        "== High Card Flush, house-banked ==",
        "== High Card Flush, designated player seat 3 ==",
        "== Top Flush, house-banked ==",
        "== Chase the Flush, house-banked ==",
    ):
        assert title in out
    assert out.count("Check: players + banker + rake = 0.00") == 4
    assert "seed 7" in out


def test_the_same_seed_deals_the_same_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    main(["demo", "--seed", "11"])
    first = capsys.readouterr().out
    main(["demo", "--seed", "11"])
    assert capsys.readouterr().out == first
    main(["demo", "--seed", "12"])
    assert capsys.readouterr().out != first


@pytest.mark.parametrize("seed", range(40))
def test_every_demo_round_is_a_legal_round_that_conserves_money(seed: int) -> None:
    demos = deal_demo_rounds(seed)
    assert [(demo.round.game, demo.round.banking.mode) for demo in demos] == [
        (HIGH_CARD_FLUSH, "house"),
        (HIGH_CARD_FLUSH, DESIGNATED_PLAYER),
        (TOP_FLUSH, "house"),
        (CHASE_THE_FLUSH, "house"),
    ]
    for demo in demos:
        settlement = demo.settlement
        assert not settlement.dead
        total = sum(seat.net_cents for seat in settlement.seats) + settlement.banker_net_cents
        assert total + settlement.rake_cents == 0
