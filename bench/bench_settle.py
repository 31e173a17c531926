"""Rounds settled per second through `controller.rules.settle.settle`, and a long randomised check.

Deals random legal rounds of every game and banking mode (random decisions within each hand's limits,
designated-player funds from nothing to plenty, caps, rakes, now and then a misdealt seat or a dead
round), settles each, and checks every settlement conserves money and never has a designated player
pay beyond its funds. Prints one JSON object. Not a timed test; the long check make test cannot afford.

Usage: python bench/bench_settle.py [--rounds N] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

from controller.rules.cards import shuffled_deck
from controller.rules.games import (
    CHASE_THE_FLUSH,
    DESIGNATED_PLAYER,
    GAMES,
    HIGH_CARD_FLUSH,
    STREETS,
    decision_limits,
)
from controller.rules.hands import evaluate
from controller.rules.settle import Banking, Rake, Round, Seat, Settlement, settle


def random_round(rng: random.Random) -> Round:
    game = rng.choice(sorted(GAMES))
    spec = GAMES[game]
    designated = game == HIGH_CARD_FLUSH and rng.random() < 0.5
    players = rng.randint(1, spec.max_players)
    numbers = rng.sample(range(1, 8), players + (1 if designated else 0))
    deck = shuffled_deck(rng)
    dealer = tuple(deck[: spec.hole_cards - (rng.random() < 0.01)])
    position = spec.hole_cards
    community = tuple(deck[position : position + spec.community_cards])
    position += spec.community_cards
    seats: list[Seat] = []
    for number in numbers[1:] if designated else numbers:
        count = spec.hole_cards - (rng.random() < 0.03)
        cards = tuple(deck[position : position + count])
        position += spec.hole_cards
        ante = rng.choice((100, 500, 1000, 2500))
        wagers = {"ante": ante}
        if game == CHASE_THE_FLUSH:
            wagers["xtra_bonus"] = ante
        for bonus in spec.optional_wagers:
            if rng.random() < 0.5:
                wagers[bonus] = rng.choice((100, 500, 1000))
        folded = rng.random() < 0.3
        street = None
        if not folded:
            if game == CHASE_THE_FLUSH:
                street = rng.choice(STREETS)
            low, high = decision_limits(game, evaluate((*cards, *community)), ante, street)
            wagers[spec.decision_wager] = rng.randint(low, high)
        seats.append(Seat(number, cards, wagers, folded=folded, street=street))
    banking = Banking()
    rake = None
    if designated:
        cap = rng.choice((None, None, 1000, 10_000, 100_000))
        banking = Banking(DESIGNATED_PLAYER, numbers[0], rng.choice((0, 2000, 10_000, 50_000, 10**7)), cap)
        if rng.random() < 0.5:
            rake = Rake(rng.choice(("i", "ii", "iii")), rng.choice((25, 50, 100)))
    return Round(game, dealer, tuple(seats), banking, community, rake=rake, dead=rng.random() < 0.01)


def check(round_: Round, settlement: Settlement) -> None:
    total = (
        sum(seat.net_cents for seat in settlement.seats) + settlement.banker_net_cents + settlement.rake_cents
    )
    if total != 0:
        raise AssertionError(f"money not conserved: {total}")
    if round_.banking.mode == DESIGNATED_PLAYER:
        loss = -(settlement.banker_net_cents + settlement.banker_rake_cents)
        if loss > round_.banking.funds_cents:
            raise AssertionError(f"the DP paid {loss} beyond its funds {round_.banking.funds_cents}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rounds = [random_round(rng) for _ in range(args.rounds)]
    wall_started = time.perf_counter()
    cpu_started = time.process_time()
    settlements = [settle(round_) for round_ in rounds]
    cpu = time.process_time() - cpu_started
    wall = time.perf_counter() - wall_started
    for round_, settlement in zip(rounds, settlements, strict=True):
        check(round_, settlement)
    print(
        json.dumps(
            {
                "benchmark": "settle_random_rounds",
                "api": "controller.rules.settle.settle",
                "rounds": len(rounds),
                "rounds_per_s": round(len(rounds) / wall),
                "rounds_per_cpu_s": round(len(rounds) / cpu) if cpu > 0 else None,
                "checked": {"money_conserved": True, "designated_player_within_funds": True},
                "designated_player_rounds": sum(r.banking.mode == DESIGNATED_PLAYER for r in rounds),
                "dead_rounds": sum(s.dead for s in settlements),
                "shortfalls": sum(
                    1 for s in settlements if s.designated_player and s.designated_player.shortfall_cents
                ),
                "caps_applied": sum(1 for s in settlements if s.bonus_cap and s.bonus_cap.applied),
                "load_average_1m": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
