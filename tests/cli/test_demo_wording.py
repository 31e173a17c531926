"""`flushtable demo` in the product's one wording, at a covered table (issue 24): it printed its own
("3-card flush Q63 of d", `xtra_bonus`, "returned 0.00"), and its designated player's 400.00 under a
500.00 bonus cap left most seats uncovered (dead, every wager returned)."""

from __future__ import annotations

import re

import pytest

from controller.cli import main
from controller.commands.demo import deal_demo_rounds, render, round_json
from controller.journal.render import settlement_lines
from controller.money import money
from controller.rules.describe import describe_hand_json
from controller.rules.settle import NOT_COVERED, settle_round_json

SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_demo_reads_as_the_table_does(seed: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", str(seed)]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\d-card flush [2-9TJQKA]+ of [shdc]\b", out)
    assert "returned 0.00" not in out
    assert not re.search(r"\b(xtra_bonus|all_in|straight_flush|same_suit_bonus|top_flush_bonus)\b", out)
    for demo in deal_demo_rounds(seed):
        settlement = demo.settlement.to_json()
        # The product's renderer, over the very input `flushtable settle` would be given for the round.
        assert settle_round_json(round_json(demo.round)) == settlement
        body = settlement_lines(round_json(demo.round), settlement, money)
        assert "\n".join(body) in "\n".join(render(demo))
        for seat in demo.settlement.seats:
            if seat.hand is not None:
                assert describe_hand_json(seat.to_json()["hand"]) in out  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", SEEDS)
def test_the_designated_player_covers_every_seat(seed: int) -> None:
    dp_round = deal_demo_rounds(seed)[1]
    assert dp_round.settlement.designated_player is not None
    assert [seat.seat for seat in dp_round.settlement.seats if seat.dead_reason == NOT_COVERED] == []
