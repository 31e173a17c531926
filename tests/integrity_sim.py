"""Simulated shufflers that write recall records, for testing the integrity check.

The fair shuffler is random.Random's shuffle. The biased one deals from a deck where one suit is
over-represented near the top: a weighted random permutation (each card's key is U ** (1 / weight),
sorted descending), so a heavier suit tends to be dealt before the others.
"""

from __future__ import annotations

import random
from typing import Any

from controller.rules.cards import cards_text
from controller.rules.hands import evaluate
from controller.rules.paytables import default_paytable

SEATS = 6


def weighted_deck(rng: random.Random, heavy_suit: int, weight: float) -> list[int]:
    keys = [
        (rng.random() ** (1.0 / (weight if card // 13 == heavy_suit else 1.0)), card) for card in range(52)
    ]
    return [card for _, card in sorted(keys, reverse=True)]


def hcf_records(
    rounds: int, seed: int, *, heavy_suit: int = 3, weight: float = 1.0, stake: int = 500
) -> list[dict[str, Any]]:
    """Settled house-banked High Card Flush rounds (cards and flush bonus bets) from one shoe."""
    rng = random.Random(seed)
    flush_table = default_paytable("high-card-flush", "house", "flush")
    records: list[dict[str, Any]] = []
    for round_id in range(rounds):
        if weight == 1.0:
            deck = list(range(52))
            rng.shuffle(deck)
        else:
            deck = weighted_deck(rng, heavy_suit, weight)
        hands = [deck[7 * i : 7 * i + 7] for i in range(SEATS + 1)]
        seats = []
        settled = []
        for seat in range(1, SEATS + 1):
            cards = hands[seat]
            odds = flush_table.odds_for(evaluate(cards).flush_length)
            net = -stake if odds is None else stake * odds
            seats.append(
                {
                    "seat": seat,
                    "cards": cards_text(cards),
                    "wagers": {"ante": stake, "flush": stake},
                    "folded": False,
                }
            )
            settled.append(
                {
                    "seat": seat,
                    "status": "live",
                    "wagers": {
                        "flush": {"stake": stake, "result": "lose" if odds is None else "win", "net": net}
                    },
                    "net": net,
                }
            )
        records.append(
            {
                "round_id": round_id,
                "status": "settled",
                "round": {
                    "game": "high-card-flush",
                    "banking": {"mode": "house"},
                    "dealer": cards_text(hands[0]),
                    "seats": seats,
                },
                "settlement": {"seats": settled},
            }
        )
    return records
