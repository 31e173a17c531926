"""Settlement of one round of any of the three games, exactly per docs/rules.md. Pure: no I/O, no clock.

Public API (other modules code against these names; keep them stable):

- :func:`parse_round` ``(obj: Mapping[str, object]) -> Round``: a round from its JSON form (the
  ``flushtable settle`` contract in docs/settle.md). Raises :class:`UserError` naming the field.
- :func:`check_round` ``(round) -> None``: the same checks for a :class:`Round` built in code.
- :func:`settle` ``(round) -> Settlement``: every wager's result. Checks the round first.
- :meth:`Settlement.to_json` ``() -> dict``: the output contract.
- :func:`settle_parsed` ``(obj) -> Settlement``: ``settle(parse_round(obj))``, the round checked once.
- :func:`settle_round_json` ``(obj) -> dict``: parse, settle and ``to_json`` in one call.

Signs: a wager's ``net`` is the player's profit (a lost stake of 500 is -500; a push or a returned
wager is 0). ``banker_net`` is the banker's profit (the house, or the designated player). ``rake`` is
what the house took as its fee. Every settlement conserves money::

    sum(seat.net for seat in seats) + banker_net + rake == 0

The decisions docs/rules.md leaves open are written in docs/rules.md ("Decisions").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from controller.names import MAX_SEAT as MAX_SEAT  # noqa: PLC0414  (re-exported)
from controller.rules.amounts import MAX_AMOUNT_CENTS
from controller.rules.catalogue import BASE_RULE, FLUSH_BONUS, STRAIGHT_FLUSH_BONUS, WAGERS
from controller.rules.games import (
    CHASE_THE_FLUSH,
    DESIGNATED_PLAYER,
    HOUSE,
    PROGRESSIVE,
    GameSpec,
    game_spec,
    largest_decision_multiplier,
)
from controller.rules.hands import Hand, compare, evaluate
from controller.rules.paytables import Paytable
from controller.rules.round_input import (
    Banking,
    Rake,
    Round,
    Seat,
    check_round,
    parse_round,
    round_is_dead,
    seat_is_misdealt,
)
from controller.rules.settlement import (
    DEAD,
    FOLDED,
    LIVE,
    LOSE,
    NOT_COVERED,
    PUSH,
    RETURNED,
    ROUND_DEAD,
    WIN,
    WRONG_CARD_COUNT,
    BonusCapReport,
    Coverage,
    DesignatedPlayerReport,
    RakeLine,
    SeatResult,
    Settlement,
    WagerResult,
)
from table_names.records import FrozenRecord, Record

if TYPE_CHECKING:
    from controller.rules.progressive import ProgressiveResult


# --- settlement -----------------------------------------------------------------------------------------
class Owed(Record):
    """A provisional wager result, before the cap and the DP's funds."""

    __slots__ = ("capped_from", "net", "odds", "result", "shortfall", "stake", "wager")
    wager: str
    stake: int
    result: str
    net: int
    odds: int | None
    capped_from: int | None
    shortfall: int

    def __init__(  # noqa: PLR0913, PLR0917 - what is owed, every part
        self,
        wager: str,
        stake: int,
        result: str,
        net: int,
        odds: int | None = None,
        capped_from: int | None = None,
        shortfall: int = 0,
    ) -> None:
        self._set_fields(locals())


def _even_money(wager: str, stake: int, outcome: int) -> Owed:
    if outcome > 0:
        return Owed(wager, stake, WIN, stake)
    if outcome < 0:
        return Owed(wager, stake, LOSE, -stake)
    return Owed(wager, stake, PUSH, 0)


def paytable_win(wager: str, stake: int, table: Paytable, length: int) -> Owed:
    """Paid on the player's own hand: the highest line reached pays, none reached loses."""
    odds = table.odds_for(length)
    if odds is None:
        return Owed(wager, stake, LOSE, -stake)
    return Owed(wager, stake, WIN, stake * odds, odds=odds)


def _settle_hcf_or_top_flush(
    spec: GameSpec, seat: Seat, hand: Hand, dealer: Hand, *, qualifies: bool
) -> list[Owed]:
    """High Card Flush's and Top Flush's base rule: the ante and the raise (play)."""
    ante = seat.wagers["ante"]
    decision = spec.decision_wager
    if seat.folded:
        return [Owed("ante", ante, LOSE, -ante)]
    if not qualifies:
        # The banker does not qualify: the ante wins 1 to 1, the raise (play) pushes.
        return [Owed("ante", ante, WIN, ante), Owed(decision, seat.wagers[decision], PUSH, 0)]
    outcome = compare(hand, dealer)
    return [_even_money("ante", ante, outcome), _even_money(decision, seat.wagers[decision], outcome)]


class BonusBet(FrozenRecord):
    """What a bonus wager's rule judges: its stake on one seat, the paytable it is paid by this round,
    the seat's hand and the banker's, whether the banker qualifies, whether the seat folded, and
    whether the house banks the round (else a designated player does)."""

    __slots__ = ("dealer", "folded", "hand", "house_banked", "paytable", "qualifies", "stake", "wager")
    wager: str
    stake: int
    paytable: Paytable
    hand: Hand
    dealer: Hand
    qualifies: bool
    folded: bool
    house_banked: bool

    def __init__(  # noqa: PLR0913, PLR0917 - a bonus bet's every part
        self,
        wager: str,
        stake: int,
        paytable: Paytable,
        hand: Hand,
        dealer: Hand,
        qualifies: bool,
        folded: bool,
        house_banked: bool,
    ) -> None:
        self._set_fields(locals())


WagerRule = Callable[[BonusBet], "Owed"]


def flush_bonus(bet: BonusBet) -> Owed:
    """docs/rules.md: house-banked, paid on the player's own flush length, win or lose, even after a
    fold; against a designated player, a contest: a fold forfeits it, identical hands push, and it pays
    only when the player's flush reaches the paytable and beats the DP's hand."""
    if bet.house_banked:
        return paytable_win(bet.wager, bet.stake, bet.paytable, bet.hand.flush_length)
    if bet.folded:
        return Owed(bet.wager, bet.stake, LOSE, -bet.stake)
    if bet.hand == bet.dealer:
        return Owed(bet.wager, bet.stake, PUSH, 0)
    if bet.hand.flush_length >= bet.paytable.min_length and bet.hand > bet.dealer:
        return paytable_win(bet.wager, bet.stake, bet.paytable, bet.hand.flush_length)
    return Owed(bet.wager, bet.stake, LOSE, -bet.stake)


def straight_flush_bonus(bet: BonusBet) -> Owed:
    """As :func:`flush_bonus`, on the straight-flush run length; against a DP the longer run wins, then
    the higher top card, and equal runs push."""
    length = bet.hand.straight_flush_length
    if bet.house_banked:
        return paytable_win(bet.wager, bet.stake, bet.paytable, length)
    run = bet.hand.straight_flush  # run_length << 4 | top rank: longer first, then the higher top card
    dealer_run = bet.dealer.straight_flush
    if bet.folded:
        return Owed(bet.wager, bet.stake, LOSE, -bet.stake)
    if bet.hand == bet.dealer:
        return Owed(bet.wager, bet.stake, PUSH, 0)
    if length < bet.paytable.min_length or run < dealer_run:
        return Owed(bet.wager, bet.stake, LOSE, -bet.stake)
    if run == dealer_run:
        return Owed(bet.wager, bet.stake, PUSH, 0)
    return paytable_win(bet.wager, bet.stake, bet.paytable, length)


WAGER_RULES: dict[str, WagerRule] = {FLUSH_BONUS: flush_bonus, STRAIGHT_FLUSH_BONUS: straight_flush_bonus}
"""The settle rule of each bonus wager the game's base rule does not judge, by the name its catalogue
line gives (controller/rules/catalogue.py ``Wager.rule``)."""


def register_wager_rule(name: str, rule: WagerRule) -> None:
    """Name ``rule`` so a catalogue line can settle a wager by it (docs/engine.md "Adding a wager")."""
    WAGER_RULES[name] = rule


def _settle_bonuses(
    round_: Round, spec: GameSpec, seat: Seat, hands: tuple[Hand, Hand], *, qualifies: bool
) -> list[Owed]:
    """Each placed bonus wager the base rule does not judge, by its catalogue line's rule."""
    hand, dealer = hands
    owed: list[Owed] = []
    for name in spec.bonus_wagers:
        stake = seat.wagers.get(name, 0)
        rule = WAGERS[name].rule
        if stake and rule != BASE_RULE:
            bet = BonusBet(
                name,
                stake,
                round_.paytable(name),
                hand,
                dealer,
                qualifies,
                seat.folded,
                round_.banking.mode == HOUSE,
            )
            owed.append(WAGER_RULES[rule](bet))
    return owed


def _settle_chase(round_: Round, seat: Seat, hand: Hand, dealer: Hand, qualifies: bool) -> list[Owed]:
    """Chase the Flush's base rule: the ante, the X-tra Bonus (judged with the hand) and the all-in."""
    ante = seat.wagers["ante"]
    xtra = seat.wagers["xtra_bonus"]
    xtra_table = round_.paytable("xtra_bonus")
    owed: list[Owed] = []
    if seat.folded:
        # Fold: ante and X-tra Bonus lose; the Same Suit Bonus still pays on the hand.
        owed.append(Owed("ante", ante, LOSE, -ante))
        owed.append(Owed("xtra_bonus", xtra, LOSE, -xtra))
    else:
        all_in = seat.wagers["all_in"]
        outcome = compare(hand, dealer)
        if qualifies:
            owed.append(_even_money("ante", ante, outcome))
        else:
            owed.append(Owed("ante", ante, PUSH, 0))  # returned first, before any hand is looked at
        if outcome > 0:
            # X-tra Bonus on a win: a flush reaching the paytable pays, a shorter winning flush pushes.
            odds = xtra_table.odds_for(hand.flush_length)
            if odds is None:
                owed.append(Owed("xtra_bonus", xtra, PUSH, 0))
            else:
                owed.append(Owed("xtra_bonus", xtra, WIN, xtra * odds, odds=odds))
        else:
            owed.append(_even_money("xtra_bonus", xtra, outcome))
        owed.append(_even_money("all_in", all_in, outcome))
    return owed


def _in_spot_order(owed: list[Owed], wagers: Sequence[str]) -> list[Owed]:
    return sorted(owed, key=lambda item: wagers.index(item.wager))


def action_order(designated_seat: int, seats: Sequence[int]) -> tuple[int, ...]:
    """Seats in the order they are taken into action and paid in designated-player mode.

    docs/rules.md: "starting to the right of the button and going counter-clockwise". Seats are numbered
    1..7 clockwise, in the order the deal goes round ("starting at the left of the dealer button and
    proceeding clockwise"), so the seat to the button's right is the next lower number: the order is
    the DP's seat minus 1, minus 2, ..., down to seat 1, then from the highest seat down to the DP's seat
    plus 1. Example: DP in seat 4, players in 1, 2, 3, 5, 6, 7 -> 3, 2, 1, 7, 6, 5.
    """
    return tuple(sorted(seats, key=lambda seat: (designated_seat - seat) % (MAX_SEAT + 1)))


def bonus_top_cents(wagers: Mapping[str, int], paytable: Callable[[str], Paytable], spec: GameSpec) -> int:
    """The most a seat's bonus wagers can win together: each placed bonus wager's stake times the best
    odds its paytable pays (docs/rules.md "Designated player": "the top payout of each bonus wager it
    placed")."""
    return sum(
        wagers[wager] * max(odds for _length, odds in paytable(wager).odds_by_length)
        for wager in spec.bonus_wagers
        if wagers.get(wager, 0)
    )


def cover_seats(
    game: str,
    designated_seat: int,
    funds_cents: int,
    antes_cents: Mapping[int, int],
    *,
    bonus_tops_cents: Mapping[int, int] | None = None,
    bonus_cap_cents: int | None = None,
) -> Coverage:
    """Bet lock in designated-player mode: which seats the DP's bank covers.

    docs/rules.md: "a seat is in action while the DP's uncommitted bank covers its largest possible win: ante,
    the largest raise its cards allow (unknown at lock, so 3x the ante), and the top payout of each bonus
    wager it placed, where the bonus parts of all seats covered so far count together at most the
    aggregate bonus cap, when one is set. A seat that cannot be covered is dead". Seats are taken in
    :func:`action_order`; a seat needs ``ante x (1 + 3)`` for its main wagers, and the bonus part of
    every seat covered so far plus its own (``bonus_tops_cents``, by seat: :func:`bonus_top_cents`) counts
    at most ``bonus_cap_cents``. A seat that cannot be covered is passed over and the next one is tried.
    The round machine calls this at lock; :func:`settle` calls it again from the round, so both agree.

    Example: bank 20,000, antes 1,000 each, cap 10,000; seat 3 a flush bonus whose top payout is 20,000,
    seat 2 none: seat 3 needs 4,000 + min(20,000, 10,000) = 14,000 (covered); seat 2 needs 4,000 more
    with the bonus part still 10,000: 18,000 in all (covered). Without the cap seat 3 needs 24,000: dead.
    """
    order = action_order(designated_seat, list(antes_cents))
    per_ante = 1 + largest_decision_multiplier(game)
    tops = bonus_tops_cents or {}
    covered: list[int] = []
    uncovered: list[int] = []
    main = 0  # the main wagers' part committed so far
    bonus = 0  # the bonus parts of the seats covered so far, before the cap

    def bonus_part(total: int) -> int:
        return total if bonus_cap_cents is None else min(total, bonus_cap_cents)

    for number in order:
        need_main = antes_cents[number] * per_ante
        with_bonus = bonus + tops.get(number, 0)
        if main + need_main + bonus_part(with_bonus) <= funds_cents:
            main += need_main
            bonus = with_bonus
            covered.append(number)
        else:
            uncovered.append(number)
    return Coverage(order, tuple(covered), tuple(uncovered), main + bonus_part(bonus))


def _dead_seat(seat: Seat, spec: GameSpec, reason: str) -> SeatResult:
    stakes = ((name, seat.wagers[name]) for name in (*spec.wagers, PROGRESSIVE) if seat.wagers.get(name, 0))
    return SeatResult.returned(seat.seat, stakes, reason)


def settle(round: Round) -> Settlement:
    """Settle every wager of ``round`` exactly per docs/rules.md (checked first; see the module docstring)."""
    check_round(round)
    return _settle_checked(round)


def settle_parsed(obj: Mapping[str, object]) -> Settlement:
    """``settle(parse_round(obj))``, the round checked once (parse_round checks it)."""
    return _settle_checked(parse_round(obj))


def _seats_dead(
    round_: Round, spec: GameSpec, order: Sequence[int], seat_by_number: Mapping[int, Seat]
) -> tuple[dict[int, str], int]:
    """The seats dead before any hand is judged (the designated player's cover refused, a misdeal), with
    why, and the cents the designated player committed to the covered seats."""
    banking = round_.banking
    # Bet lock comes before the deal: coverage is decided on the antes alone, and a seat found misdealt
    # afterwards keeps the cover it was given.
    dead_reason: dict[int, str] = {}
    committed = 0
    if banking.mode == DESIGNATED_PLAYER and banking.seat is not None:
        by_seat = sorted(round_.seats, key=lambda seat: seat.seat)
        coverage = cover_seats(
            spec.name,
            banking.seat,
            banking.funds_cents,
            {seat.seat: seat.wagers["ante"] for seat in by_seat},
            bonus_tops_cents={
                seat.seat: bonus_top_cents(seat.wagers, round_.paytable, spec) for seat in by_seat
            },
            bonus_cap_cents=banking.bonus_cap_cents,
        )
        committed = coverage.committed_cents
        for number in coverage.uncovered:
            dead_reason[number] = NOT_COVERED
    for number in order:
        if number not in dead_reason and seat_is_misdealt(seat_by_number[number], spec):
            dead_reason[number] = WRONG_CARD_COUNT
    return dead_reason, committed


def _wager_results(owed: Sequence[Owed]) -> tuple[WagerResult, ...]:
    return tuple(
        WagerResult(
            item.wager, item.stake, item.result, item.net, item.odds, item.shortfall, item.capped_from
        )
        for item in owed
    )


def _dead_round(round_: Round, spec: GameSpec, by_seat: Sequence[Seat]) -> Settlement:
    """A round dead as a whole: every wager returned, no hand judged."""
    return Settlement.of_dead_round(
        spec.name,
        round_.banking.mode,
        tuple(_dead_seat(seat, spec, ROUND_DEAD) for seat in by_seat),
        progressive=_settle_progressive(round_, order=[seat.seat for seat in by_seat], hands={}),
    )


def _judge_live_seats(
    round_: Round, spec: GameSpec, live: Sequence[Seat], dealer: Hand
) -> tuple[dict[int, list[Owed]], dict[int, Hand]]:
    """Each live seat's hand and what its wagers are owed against the dealer's, in action order."""
    owed_by_seat: dict[int, list[Owed]] = {}
    hands: dict[int, Hand] = {}
    qualifies = dealer.qualifies
    for seat in live:
        hand = evaluate((*seat.cards, *round_.community))
        hands[seat.seat] = hand
        if spec.name == CHASE_THE_FLUSH:
            owed = _settle_chase(round_, seat, hand, dealer, qualifies)
        else:
            owed = _settle_hcf_or_top_flush(spec, seat, hand, dealer, qualifies=qualifies)
        owed += _settle_bonuses(round_, spec, seat, (hand, dealer), qualifies=qualifies)
        owed_by_seat[seat.seat] = _in_spot_order(owed, spec.wagers)
    return owed_by_seat, hands


def _settle_checked(round_: Round) -> Settlement:
    spec = game_spec(round_.game)
    banking = round_.banking
    designated = banking.mode == DESIGNATED_PLAYER
    by_seat = sorted(round_.seats, key=lambda seat: seat.seat)

    if round_is_dead(round_, spec):
        return _dead_round(round_, spec, by_seat)

    dealer = evaluate((*round_.dealer, *round_.community))
    qualifies = dealer.qualifies
    order = (
        action_order(banking.seat, [seat.seat for seat in by_seat])
        if designated and banking.seat is not None
        else tuple(seat.seat for seat in by_seat)
    )
    seat_by_number = {seat.seat: seat for seat in round_.seats}

    dead_reason, committed = _seats_dead(round_, spec, order, seat_by_number)

    live = [seat_by_number[number] for number in order if number not in dead_reason]
    owed_by_seat, hands = _judge_live_seats(round_, spec, live, dealer)

    cap_report: BonusCapReport | None = None
    dp_report: DesignatedPlayerReport | None = None
    if designated:
        cap_report = _apply_bonus_cap(banking.bonus_cap_cents, owed_by_seat, order, spec)
        dp_report = _pay_from_funds(banking, owed_by_seat, order, committed, spec)

    rake_lines = _rake_lines(round_, order, dead_reason) if designated else ()
    rake_by_seat = {line.seat: line.amount_cents for line in rake_lines if not line.designated_player}
    # The house's progressive, outside the DP's bank, coverage and cap: paid in the table's settlement
    # order (house: the dealer's right to left, the highest seat first; DP: the action order).
    progressive_order = order if designated else tuple(sorted(order, reverse=True))
    progressive = _settle_progressive(round_, order=progressive_order, hands=hands)

    results: list[SeatResult] = []
    for number in order:
        seat = seat_by_number[number]
        if number in dead_reason:
            results.append(_dead_seat(seat, spec, dead_reason[number]))
            continue
        wagers = _wager_results(owed_by_seat[number]) + _progressive_wager_result(seat, progressive)
        results.append(
            SeatResult(
                seat=number,
                status=FOLDED if seat.folded else LIVE,
                hand=hands[number],
                wagers=wagers,
                rake_cents=rake_by_seat.get(number, 0),
            )
        )
    return Settlement(
        game=spec.name,
        banking_mode=banking.mode,
        dead=False,
        dealer_hand=dealer,
        dealer_qualifies=qualifies,
        seats=tuple(results),
        rake_lines=rake_lines,
        designated_player=dp_report,
        bonus_cap=cap_report,
        progressive=progressive,
    )


def _settle_progressive(
    round_: Round, *, order: Sequence[int], hands: Mapping[int, Hand]
) -> ProgressiveResult | None:
    """The round's progressive: every seat's Progressive wager in ``order``; a seat without a hand in
    ``hands`` is dead, its wager returned (no contribution, no award)."""
    if round_.progressive is None:
        return None
    from controller.rules.progressive import ProgressiveEntry, settle_progressive  # noqa: PLC0415 (a round with a progressive only: its rules load ~4 ms)

    by_number = {seat.seat: seat for seat in round_.seats}
    entries = [
        ProgressiveEntry(
            number,
            hands[number].straight_flush_length if number in hands else 0,
            settled=number in hands,
        )
        for number in order
        if by_number[number].wagers.get(PROGRESSIVE, 0)
    ]
    return settle_progressive(
        round_.progressive.settings, round_.progressive.meter_cents, round_.progressive.reserve_cents, entries
    )


def _progressive_wager_result(seat: Seat, progressive: ProgressiveResult | None) -> tuple[WagerResult, ...]:
    """A live seat's Progressive wager: always collected, an award paid *for* it when a line is reached."""
    stake = seat.wagers.get(PROGRESSIVE, 0)
    if not stake or progressive is None:
        return ()
    award = progressive.award_for_seat(seat.seat)
    if award is None:
        return (WagerResult(PROGRESSIVE, stake, LOSE, -stake),)
    return (
        WagerResult(
            PROGRESSIVE,
            stake,
            WIN,
            award.amount_cents - stake,
            line=award.line,
            award_cents=award.amount_cents,
        ),
    )


def _apply_bonus_cap(
    cap: int | None, owed_by_seat: Mapping[int, list[Owed]], order: Sequence[int], spec: GameSpec
) -> BonusCapReport | None:
    """The optional maximum aggregate bonus payout per round: when the round's bonus wins exceed it, each
    win is reduced in proportion, rounded down to the cent; the unpaid rounding is reported."""
    if cap is None:
        return None
    wins = [
        item
        for number in order
        if number in owed_by_seat
        for item in owed_by_seat[number]
        if item.wager in spec.bonus_wagers and item.result == WIN
    ]
    total = sum(item.net for item in wins)
    if total <= cap:
        return BonusCapReport(
            cap_cents=cap, bonus_wins_cents=total, applied=False, paid_cents=total, rounding_cents=0
        )
    paid = 0
    for item in wins:
        reduced = item.net * cap // total  # integer arithmetic: rounded down, never above the cap
        item.capped_from = item.net
        item.net = reduced
        paid += reduced
    return BonusCapReport(
        cap_cents=cap, bonus_wins_cents=total, applied=True, paid_cents=paid, rounding_cents=cap - paid
    )


def _pay_from_funds(
    banking: Banking,
    owed_by_seat: Mapping[int, list[Owed]],
    order: Sequence[int],
    committed: int,
    spec: GameSpec,
) -> DesignatedPlayerReport:
    """docs/rules.md "Designated player": every losing wager of every seat is collected into the bank
    first; then each seat in action order is paid all its winning wagers (in spot order: ante, raise,
    flush, straight flush) before the next seat, up to the bank (posted funds plus what it collected).
    The cap's cut is applied before (:func:`_apply_bonus_cap`). What cannot be paid is recorded as the
    wager's shortfall, never invented."""
    collected = sum(-item.net for number in order for item in owed_by_seat.get(number, ()) if item.net < 0)
    available = banking.funds_cents + collected
    paid = 0
    shortfall = 0
    for number in order:
        for item in sorted(owed_by_seat.get(number, ()), key=lambda owed: spec.wagers.index(owed.wager)):
            if item.net <= 0:
                continue
            payment = min(item.net, available)
            if payment < item.net:
                item.shortfall = item.net - payment
                shortfall += item.shortfall
                item.net = payment
            available -= payment
            paid += payment
    assert banking.seat is not None
    return DesignatedPlayerReport(
        seat=banking.seat,
        funds_cents=banking.funds_cents,
        action_order=tuple(order),
        committed_cents=committed,
        collected_cents=collected,
        paid_cents=paid,
        shortfall_cents=shortfall,
    )


def bank_by_seat(settlement: Settlement) -> dict[str, object] | None:
    """The designated player's bank as it runs down, seat by seat (docs/rules.md "Designated player"):
    the posted funds, what the losing wagers brought in (collected first), then each seat in action order
    that was in action (dead seats are returned, not paid) with what it was paid and the bank after it.
    None for a house-banked round. A derivation of the settlement, not part of the settle JSON contract
    (`flushtable settle` prints nothing new): the live journal's round_settled carries it
    (``bank_by_seat``, docs/journal.md), and so does recall. The rake is collected on its own, never
    from the bank (docs/rules.md "Rake"), so it is not in the running balance."""
    report = settlement.designated_player
    if report is None:
        return None
    balance = report.funds_cents + report.collected_cents
    seats: list[dict[str, object]] = []
    for seat in settlement.seats:  # in action order (settle builds them so in this mode)
        if seat.status == DEAD:
            continue
        # The Progressive wager is the house's progressive's, never the DP's bank's.
        paid = sum(
            wager.net_cents for wager in seat.wagers if wager.net_cents > 0 and wager.wager != PROGRESSIVE
        )
        short = sum(wager.shortfall_cents for wager in seat.wagers)
        balance -= paid
        entry: dict[str, object] = {"seat": seat.seat, "paid": paid, "bank_after": balance}
        if short:
            entry["shortfall"] = short  # owed and not paid: recorded, never invented
        seats.append(entry)
    return {
        "funds": report.funds_cents,
        "collected": report.collected_cents,
        "after_collecting": report.funds_cents + report.collected_cents,
        "seats": seats,
        "bank_after_paying": balance,
    }


def _rake_lines(round_: Round, order: Sequence[int], dead_reason: Mapping[int, str]) -> tuple[RakeLine, ...]:
    """The house's fee, one line per payer. Dead seats are never raked; a folded seat played the hand
    and is raked; the DP is raked only when at least one seat was in action against it."""
    rake = round_.rake
    if rake is None or rake.amount_cents == 0:
        return ()
    in_action = [number for number in order if number not in dead_reason]
    if not in_action:
        return ()
    lines: list[RakeLine] = []
    if rake.method in ("i", "ii"):
        lines.extend(RakeLine(number, rake.amount_cents) for number in in_action)
    if rake.method in ("i", "iii"):
        assert round_.banking.seat is not None
        lines.append(RakeLine(round_.banking.seat, rake.amount_cents, designated_player=True))
    return tuple(lines)


def settle_round_json(obj: Mapping[str, object]) -> dict[str, object]:
    """Parse, settle and render one round: the whole ``flushtable settle`` contract for one round."""
    return settle_parsed(obj).to_json()


__all__ = [
    "DEAD",
    "FOLDED",
    "LIVE",
    "LOSE",
    "MAX_AMOUNT_CENTS",
    "NOT_COVERED",
    "PUSH",
    "RETURNED",
    "ROUND_DEAD",
    "WIN",
    "WRONG_CARD_COUNT",
    "Banking",
    "BonusCapReport",
    "Coverage",
    "DesignatedPlayerReport",
    "Rake",
    "RakeLine",
    "Round",
    "Seat",
    "SeatResult",
    "Settlement",
    "WagerResult",
    "action_order",
    "bank_by_seat",
    "bonus_top_cents",
    "check_round",
    "cover_seats",
    "parse_round",
    "settle",
    "settle_parsed",
    "settle_round_json",
]
