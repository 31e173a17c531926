"""The par sheets' payout model agrees with the settlement engine, deal by deal.

The par sheets count outcome classes (banker not qualifying, player wins, ties, loses; a contested
bonus wins, pushes, loses) and pay each class by one formula. Here random deals are settled by
controller.rules.settle and compared with that formula, so the two cannot drift apart on a rule.
"""

from __future__ import annotations

import random

import pytest

from controller.gamemath.parsheet import MAX_RAISE
from controller.rules.cards import cards_text
from controller.rules.hands import Hand, evaluate
from controller.rules.paytables import default_paytable
from controller.rules.settle import settle_round_json

ANTE = 100
DEALS = 150


def _class_nets(player: Hand, banker: Hand, raise_size: int) -> tuple[int, int]:
    """(ante net, raise net) in antes, as raise_fold.py pays the outcome classes."""
    if not banker.qualifies:
        return 1, 0
    if player > banker:
        return 1, raise_size
    if player == banker:
        return 0, 0
    return -1, -raise_size


def _contest(player: Hand, dp: Hand, wager: str) -> str:
    """The designated player's bonus as contests.py and raise_fold.py classify it."""
    if player == dp:
        return "push"
    if wager == "flush":
        return "win" if player.flush_length >= 4 and player > dp else "lose"
    if player.straight_flush_length < 3:
        return "lose"
    if player.straight_flush > dp.straight_flush:
        return "win"
    return "push" if player.straight_flush == dp.straight_flush else "lose"


@pytest.mark.parametrize(
    ("game", "banking"),
    [("high-card-flush", "house"), ("high-card-flush", "designated-player"), ("top-flush", "house")],
)
def test_raise_fold_payout_model_matches_settlement(game: str, banking: str) -> None:
    rng = random.Random(f"{game}/{banking}")
    decision = "raise" if game == "high-card-flush" else "play"
    for _ in range(DEALS):
        deck = list(range(52))
        rng.shuffle(deck)
        player_cards, banker_cards = deck[:7], deck[7:14]
        player, banker = evaluate(player_cards), evaluate(banker_cards)
        raise_size = rng.choice([1, MAX_RAISE[game][player.flush_length]])
        wagers = {"ante": ANTE, decision: ANTE * raise_size}
        if game == "high-card-flush":
            wagers |= {"flush": ANTE, "straight_flush": ANTE}
        round_: dict[str, object] = {
            "game": game,
            "dealer": cards_text(banker_cards),
            "seats": [{"seat": 2, "cards": cards_text(player_cards), "wagers": wagers, "folded": False}],
        }
        if banking == "designated-player":
            round_["banking"] = {"mode": "designated-player", "seat": 1, "funds": 10_000_000}
        settled = settle_round_json(round_)
        lines = settled["seats"][0]["wagers"]  # type: ignore[index]
        ante_net, raise_net = _class_nets(player, banker, raise_size)
        assert lines["ante"]["net"] == ANTE * ante_net
        assert lines[decision]["net"] == ANTE * raise_net
        if banking == "designated-player":
            for wager, table_name in (("flush", "flush"), ("straight_flush", "straight_flush")):
                outcome = _contest(player, banker, wager)
                table = default_paytable(game, banking, table_name)
                length = player.flush_length if wager == "flush" else player.straight_flush_length
                odds = table.odds_for(length)
                expected = {"push": 0, "lose": -ANTE, "win": ANTE * (odds or 0)}[outcome]
                assert lines[wager]["net"] == expected, (wager, player, banker)


def test_chase_all_in_model_matches_settlement() -> None:
    """chase.py pays an all-in of a antes as a * S1 + S0 per dealer hand."""
    rng = random.Random("chase")
    xtra = default_paytable("chase-the-flush", "house", "xtra_bonus")
    for _ in range(DEALS):
        deck = list(range(52))
        rng.shuffle(deck)
        hole, dealer_hole, community = deck[:3], deck[3:6], deck[6:10]
        player, dealer = evaluate(hole + community), evaluate(dealer_hole + community)
        all_in, street = rng.choice([(3, "preflop"), (2, "flop"), (1, "river")])
        settled = settle_round_json(
            {
                "game": "chase-the-flush",
                "dealer": cards_text(dealer_hole),
                "community": cards_text(community),
                "seats": [
                    {
                        "seat": 1,
                        "cards": cards_text(hole),
                        "wagers": {"ante": ANTE, "xtra_bonus": ANTE, "all_in": ANTE * all_in},
                        "folded": False,
                        "street": street,
                    }
                ],
            }
        )
        odds = xtra.odds_for(player.flush_length) or 0
        win, lose = player > dealer, player < dealer
        qualifies = dealer.qualifies
        slope = int(win) - int(lose)
        base = (
            (int(win and qualifies) + odds * int(win))
            - 2 * int(lose and qualifies)
            - int(lose and not qualifies)
        )
        assert settled["seats"][0]["net"] == ANTE * (all_in * slope + base)  # type: ignore[index]
