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

from controller.rules.cards import Card, cards_text, deal_hands, shuffled_deck
from controller.rules.games import (
    CHASE_THE_FLUSH,
    DESIGNATED_PLAYER,
    HIGH_CARD_FLUSH,
    TOP_FLUSH,
    decision_limits,
    game_spec,
)
from controller.rules.hands import Hand, evaluate
from controller.rules.settle import Banking, Rake, Round, Seat, Settlement, settle
from controller.simulated_players import chase_all_in_street, raise_or_fold

NAME = "demo"
HELP = "deal and settle a round of each game with simulated players, and print them"

_GAME_TITLES = {
    HIGH_CARD_FLUSH: "High Card Flush Poker",
    TOP_FLUSH: "Top Flush",
    CHASE_THE_FLUSH: "Chase the Flush",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=None, help="shuffle seed, for a reproducible demo")


@dataclass(frozen=True, slots=True)
class DemoRound:
    title: str
    round: Round
    decisions: dict[int, str]  # seat -> what the simulated player did, in words
    settlement: Settlement


def _money(cents: int, *, signed: bool = False) -> str:
    sign = "-" if cents < 0 else "+" if signed and cents > 0 else ""
    return f"{sign}{abs(cents) // 100}.{abs(cents) % 100:02d}"


def _hand_text(hand: Hand) -> str:
    suit = hand.flush_suit_text
    run = f"straight-flush run {hand.straight_flush_length} to the {hand.straight_flush_high}"
    return f"{hand.flush_length}-card flush {hand.flush_ranks} of {suit}; {run}"


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
    rng: random.Random, game: str, seat_numbers: Sequence[int], banking: Banking
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
            decisions[number] = f"{decision_wager}s {_money(amount)} (may {_money(low)} to {_money(high)})"
        seats.append(Seat(seat=number, cards=tuple(cards), wagers=wagers, folded=amount is None))
    rake = Rake(method="ii", amount_cents=50) if banking.mode == DESIGNATED_PLAYER else None
    round_ = Round(game=game, dealer=tuple(dealer_cards), seats=tuple(seats), banking=banking, rake=rake)
    title = _GAME_TITLES[game] + (
        f" - designated player in seat {banking.seat}"
        if banking.mode == DESIGNATED_PLAYER
        else " - house-banked"
    )
    del dealer
    return DemoRound(title, round_, decisions, settle(round_))


def _chase_round(rng: random.Random, seat_numbers: Sequence[int]) -> DemoRound:
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
            decisions[number] = f"all in {_money(amount)} on the {street}"
        seats.append(Seat(number, tuple(cards), wagers, folded=street is None, street=street))
    round_ = Round(
        game=CHASE_THE_FLUSH, dealer=tuple(dealer_cards), seats=tuple(seats), community=tuple(community)
    )
    return DemoRound(_GAME_TITLES[CHASE_THE_FLUSH] + " - house-banked", round_, decisions, settle(round_))


def deal_demo_rounds(seed: int) -> list[DemoRound]:
    """The four demonstration rounds for ``seed``: the same seed deals the same cards."""
    rng = random.Random(seed)
    return [
        _seven_card_round(rng, HIGH_CARD_FLUSH, [1, 2, 3, 4, 5, 6], Banking()),
        _seven_card_round(
            rng,
            HIGH_CARD_FLUSH,
            [1, 2, 4, 5, 6],
            Banking(mode=DESIGNATED_PLAYER, seat=3, funds_cents=40_000, bonus_cap_cents=50_000),
        ),
        _seven_card_round(rng, TOP_FLUSH, [1, 2, 3, 4, 5], Banking()),
        _chase_round(rng, [1, 2, 3, 4, 5, 6, 7]),
    ]


def _cards_line(cards: Sequence[Card]) -> str:
    return " ".join(cards_text(cards))


def render(demo: DemoRound) -> list[str]:
    """The round as lines a person reads: cards, hands, decisions, every wager's result, the nets."""
    round_ = demo.round
    settlement = demo.settlement
    lines = [f"== {demo.title} ==", ""]
    banker = "Designated player" if settlement.designated_player is not None else "Dealer"
    if round_.community:
        lines.append(f"  Community         {_cards_line(round_.community)}")
    assert settlement.dealer_hand is not None
    qualifies = "qualifies" if settlement.dealer_qualifies else "does NOT qualify"
    lines.append(f"  {banker:<17} {_cards_line(round_.dealer)}")
    lines.append(f"  {'':<17} {_hand_text(settlement.dealer_hand)} - {qualifies}")
    seats_by_number = {seat.seat: seat for seat in round_.seats}
    for result in settlement.seats:
        seat = seats_by_number[result.seat]
        lines.append("")
        lines.append(f"  Seat {result.seat:<12} {_cards_line(seat.cards)}")
        if result.hand is not None:
            lines.append(f"  {'':<17} {_hand_text(result.hand)}")
        if result.status == "dead":
            lines.append(f"  {'':<17} DEAD ({result.dead_reason}): every wager returned")
        else:
            lines.append(f"  {'':<17} {demo.decisions[result.seat]}")
        for wager in result.wagers:
            extra = f" at {wager.odds} to 1" if wager.odds is not None else ""
            if wager.capped_from_cents is not None:
                extra += f", capped from {_money(wager.capped_from_cents)}"
            if wager.shortfall_cents:
                extra += f", {_money(wager.shortfall_cents)} unpaid (designated player's funds ran out)"
            lines.append(
                f"  {'':<19}{wager.wager:<24}{_money(wager.stake_cents):>9}  "
                f"{wager.result:<8}{_money(wager.net_cents, signed=True):>10}{extra}"
            )
        if result.rake_cents:
            lines.append(
                f"  {'':<19}{'rake':<24}{'':>9}  {'':<8}{_money(-result.rake_cents, signed=True):>10}"
            )
        lines.append(f"  {'':<19}{'seat net':<43}{_money(result.net_cents, signed=True):>10}")
    lines.append("")
    if settlement.designated_player is not None:
        report = settlement.designated_player
        order = ", ".join(str(seat) for seat in report.action_order)
        lines.append(
            f"  Designated player: funds {_money(report.funds_cents)}, action order {order}, "
            f"committed {_money(report.committed_cents)}, shortfall {_money(report.shortfall_cents)}"
        )
    if settlement.bonus_cap is not None:
        cap = settlement.bonus_cap
        state = "applied" if cap.applied else "not reached"
        lines.append(
            f"  Aggregate bonus cap {_money(cap.cap_cents)}: bonus wins {_money(cap.bonus_wins_cents)}, "
            f"{state}, paid {_money(cap.paid_cents)}, rounding {_money(cap.rounding_cents)}"
        )
    banker_rake = settlement.banker_rake_cents
    rake_note = f" (after its rake {_money(banker_rake)})" if banker_rake else ""
    lines.append(f"  {banker} net {_money(settlement.banker_net_cents, signed=True)}{rake_note}")
    lines.append(f"  House rake {_money(settlement.rake_cents)}")
    total = (
        sum(seat.net_cents for seat in settlement.seats) + settlement.banker_net_cents + settlement.rake_cents
    )
    lines.append(f"  Check: players + banker + rake = {_money(total)}")
    return lines


def run(args: argparse.Namespace) -> int:
    seed: int = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    print(f"flushtable demo: one round of each game, seed {seed} (repeat it with --seed {seed})")
    print("Amounts in the table's currency; every wager settled by the rules engine.")
    for demo in deal_demo_rounds(seed):
        print()
        print("\n".join(render(demo)))
    sys.stdout.flush()
    return 0
