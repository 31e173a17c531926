"""The settle input read by pydantic models (controller/rules/settle.py RoundInput): the refusals of the
hand-written parser it replaced, word for word, where two rules meet (an unknown field next to a missing
one, a null next to an absent value), and the engine's table checked by the same rake model."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.errors import UserError
from controller.rules.settle import parse_round
from tests.rules.test_settle_input import GOOD

DP: dict[str, Any] = {
    **copy.deepcopy(GOOD),
    "banking": {"mode": "designated-player", "seat": 4, "funds": 100_000},
    "rake": {"method": "ii", "amount": 25},
}


@pytest.mark.parametrize(
    ("base", "field", "value", "message"),
    [
        # An object's unknown field is named before its own missing fields.
        (
            GOOD,
            "seats",
            [{"a": 1}],
            "seats[0]: unknown field 'a' (known: cards, folded, seat, street, wagers)",
        ),
        (DP, "rake", {"a": 1}, "rake: unknown field 'a' (known: amount, method)"),
        (
            GOOD,
            "colour",
            "red",
            "round: unknown field 'colour' (known: banking, community, dead, dealer, game, "
            "paytables, rake, seats)",
        ),
        # A null is a wrong value, an absent field is missing.
        (
            DP,
            "banking",
            {"mode": "designated-player", "seat": None, "funds": 1},
            "banking.seat: must be a seat number 1..7, not null",
        ),
        (
            DP,
            "banking",
            {"mode": "designated-player", "funds": 1},
            "banking.seat: missing (the designated player's seat)",
        ),
        (
            DP,
            "banking",
            {"mode": "designated-player", "seat": 4, "funds": None},
            "banking.funds: must be a whole number of cents, not null None",
        ),
        (
            DP,
            "banking",
            {"mode": "designated-player", "seat": 4},
            "banking.funds: missing (the cents the designated player posted before the deal)",
        ),
        (
            DP,
            "rake",
            {},
            "rake.method: must be 'i' (every player), 'ii' (every player but the designated player) or "
            "'iii' (the designated player only), not None",
        ),
        (DP, "rake", {"method": "ii"}, "rake.amount: missing (the fixed cents per hand each payer pays)"),
        (
            GOOD,
            "banking",
            {"mode": "house", "seat": 3},
            "banking.seat: only the designated-player mode takes 'seat'",
        ),
        (GOOD, "dealer", ("Ts", "7s", "2s", "3d", "5d", "8c", 5), "dealer[6]: 5 is not a card"),
    ],
)
def test_where_two_rules_meet_the_old_words_hold(
    base: dict[str, Any], field: str, value: Any, message: str
) -> None:
    round_ = copy.deepcopy(base)
    round_[field] = value
    with pytest.raises(UserError) as refused:
        parse_round(round_)
    assert str(refused.value).startswith(message), str(refused.value)


def test_a_rake_of_null_is_no_rake_and_tuples_from_code_are_lists() -> None:
    round_ = copy.deepcopy(DP)
    round_["rake"] = None
    assert parse_round(round_).rake is None
    round_["seats"] = tuple(round_["seats"])
    assert len(parse_round(round_).seats) == 2
