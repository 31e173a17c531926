"""`flushtable demo`: deal and settle one round of each game and print it readably.

Four rounds: High Card Flush house-banked, High Card Flush with a designated player (funds, rake and an
aggregate bonus cap), Top Flush, Chase the Flush. Simulated players decide by
controller.simulated_players; every wager is settled by controller.rules.settle, the same code that
settles the table's real rounds.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from controller.commands.journal_args import property_of
from controller.journal.render import banking_text, game_title, settlement_lines
from controller.money import MoneyFormat, money
from controller.rules.cards import cards_text, deal_hands, shuffled_deck
from controller.rules.games import (
    CHASE_THE_FLUSH,
    DESIGNATED_PLAYER,
    HIGH_CARD_FLUSH,
    TOP_FLUSH,
    decision_limits,
    game_spec,
)
from controller.rules.hands import evaluate
from controller.rules.settle import Banking, Rake, Round, Seat, Settlement, settle
from controller.simulated_players import chase_all_in_street, raise_or_fold

NAME = "demo"
HELP = "deal and settle a round of each game with simulated players, and print them"

# A designated player's funds: the largest cover five seats can need (ante and the 3x raise at the
# demo's largest ante, 25.00, and the bonuses up to the cap), so the demo shows a covered table.
DEMO_DP_CAP_CENTS = 50_000
DEMO_DP_FUNDS_CENTS = 5 * (2_500 + 3 * 2_500) + DEMO_DP_CAP_CENTS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=None, help="shuffle seed, for a reproducible demo")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="the table configuration whose [property] money the amounts are written in "
        "(default: the amounts alone)",
    )


@dataclass(frozen=True, slots=True)
class DemoRound:
    title: str
    round: Round
    decisions: dict[int, str]  # seat -> what the simulated player did, in words
    settlement: Settlement


def _seat_wagers(rng: random.Random, game: str, ante_cents: int) -> dict[str, int]:
    spec = game_spec(game)
    wagers = {"ante": ante_cents}
    if game == CHASE_THE_FLUSH:
        wagers["xtra_bonus"] = ante_cents
    for bonus in spec.optional_wagers:
        if rng.random() < 0.6:
            wagers[bonus] = rng.choice((100, 200, 500))
    return wagers


def _seven_card_round(
    rng: random.Random, game: str, seat_numbers: Sequence[int], banking: Banking, fmt: MoneyFormat
) -> DemoRound:
    deck = shuffled_deck(rng)
    dealer_cards, *seat_cards = deal_hands(deck, [7] * (len(seat_numbers) + 1))
    dealer = evaluate(dealer_cards)
    seats: list[Seat] = []
    decisions: dict[int, str] = {}
    decision_wager = game_spec(game).decision_wager
    for number, cards in zip(seat_numbers, seat_cards, strict=True):
        ante = rng.choice((500, 1000, 2500))
        wagers = _seat_wagers(rng, game, ante)
        hand = evaluate(cards)
        amount = raise_or_fold(game, hand, ante)
        low, high = decision_limits(game, hand, ante)
        if amount is None:
            decisions[number] = "folds"
        else:
            wagers[decision_wager] = amount
            allowed = (
                f"the only {decision_wager} allowed" if low == high else f"may {fmt(low)} to {fmt(high)}"
            )
            decisions[number] = f"{decision_wager}s {fmt(amount)} ({allowed})"
        seats.append(Seat(seat=number, cards=tuple(cards), wagers=wagers, folded=amount is None))
    rake = Rake(method="ii", amount_cents=50) if banking.mode == DESIGNATED_PLAYER else None
    round_ = Round(game=game, dealer=tuple(dealer_cards), seats=tuple(seats), banking=banking, rake=rake)
    del dealer
    return DemoRound(_title(round_), round_, decisions, settle(round_))


def _chase_round(rng: random.Random, seat_numbers: Sequence[int], fmt: MoneyFormat) -> DemoRound:
    deck = shuffled_deck(rng)
    hands = deal_hands(deck, [3] * (len(seat_numbers) + 1) + [4])
    dealer_cards, *seat_cards, community = hands
    seats: list[Seat] = []
    decisions: dict[int, str] = {}
    for number, cards in zip(seat_numbers, seat_cards, strict=True):
        ante = rng.choice((500, 1000, 2500))
        wagers = _seat_wagers(rng, CHASE_THE_FLUSH, ante)
        street = chase_all_in_street(cards, community)
        if street is None:
            decisions[number] = "checks, checks, then folds at the river"
        else:
            amount, _ = decision_limits(CHASE_THE_FLUSH, evaluate(cards), ante, street)
            wagers["all_in"] = amount
            decisions[number] = f"all in {fmt(amount)} on the {street}"
        seats.append(Seat(number, tuple(cards), wagers, folded=street is None, street=street))
    round_ = Round(
        game=CHASE_THE_FLUSH, dealer=tuple(dealer_cards), seats=tuple(seats), community=tuple(community)
    )
    return DemoRound(_title(round_), round_, decisions, settle(round_))


def _title(round_: Round) -> str:
    obj = round_json(round_)
    return f"{game_title(obj['game'])}, {banking_text(obj)}"


def deal_demo_rounds(seed: int, fmt: MoneyFormat = money) -> list[DemoRound]:
    """The four demonstration rounds for ``seed``: the same seed deals the same cards. ``fmt``: the
    money the players' decisions are told in (the property's, with --config)."""
    rng = random.Random(seed)
    return [
        _seven_card_round(rng, HIGH_CARD_FLUSH, [1, 2, 3, 4, 5, 6], Banking(), fmt),
        _seven_card_round(
            rng,
            HIGH_CARD_FLUSH,
            [1, 2, 4, 5, 6],
            Banking(
                mode=DESIGNATED_PLAYER,
                seat=3,
                funds_cents=DEMO_DP_FUNDS_CENTS,
                bonus_cap_cents=DEMO_DP_CAP_CENTS,
            ),
            fmt,
        ),
        _seven_card_round(rng, TOP_FLUSH, [1, 2, 3, 4, 5], Banking(), fmt),
        _chase_round(rng, [1, 2, 3, 4, 5, 6, 7], fmt),
    ]


def round_json(round_: Round) -> dict[str, Any]:
    """The round as settle's input (docs/settle.md): what the product's renderer reads, and what
    `flushtable settle` would be given for it."""
    banking: dict[str, Any] = {"mode": round_.banking.mode}
    if round_.banking.mode == DESIGNATED_PLAYER:
        banking.update(seat=round_.banking.seat, funds=round_.banking.funds_cents)
        if round_.banking.bonus_cap_cents is not None:
            banking["bonus_cap"] = round_.banking.bonus_cap_cents
    obj: dict[str, Any] = {
        "game": round_.game,
        "banking": banking,
        "dealer": cards_text(round_.dealer),
        "seats": [
            {
                "seat": seat.seat,
                "cards": cards_text(seat.cards),
                "wagers": dict(seat.wagers),
                "folded": seat.folded,
                **({"street": seat.street} if seat.street is not None else {}),
            }
            for seat in round_.seats
        ],
    }
    if round_.community:
        obj["community"] = cards_text(round_.community)
    if round_.rake is not None:
        obj["rake"] = {"method": round_.rake.method, "amount": round_.rake.amount_cents}
    return obj


def render(demo: DemoRound, fmt: MoneyFormat = money) -> list[str]:
    """The round as lines a person reads, in the product's one wording (controller/journal/render.py, as
    recall, the daemon's round lines and `flushtable settle --text` print it), after the simulated
    players' decisions."""
    round_input = round_json(demo.round)
    settlement = demo.settlement.to_json()
    lines = [
        f"== {demo.title} ==",
        "  Decisions: " + "; ".join(f"seat {seat} {words}" for seat, words in sorted(demo.decisions.items())),
    ]
    lines.extend(settlement_lines(round_input, settlement, fmt))
    total = (
        sum(seat.net_cents for seat in demo.settlement.seats)
        + demo.settlement.banker_net_cents
        + demo.settlement.rake_cents
    )
    lines.append(f"  Check: players + banker + rake = {fmt(total)}")
    return lines


def run(args: argparse.Namespace) -> int:
    # --config's [property] money (read only when given, as the journal commands do; a bad file refused
    # before anything is printed); none: the amounts alone, "in the table's currency".
    fmt = property_of(args).money
    seed: int = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    print(f"flushtable demo: one round of each game, seed {seed} (repeat it with --seed {seed})")
    print("Amounts in the table's currency; every wager settled by the rules engine.")
    for demo in deal_demo_rounds(seed, fmt):
        print()
        print("\n".join(render(demo, fmt)))
    sys.stdout.flush()
    return 0
