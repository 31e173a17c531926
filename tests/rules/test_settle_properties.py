"""Properties of every settlement, over random rounds of every game and banking mode:

- money is conserved: the players' nets + the banker's net + the rake (+ the progressive's take) = 0;
- no banker pays beyond its funds: a designated player never loses more than it posted;
- every wager's result agrees with its net; dead hands return everything and are never raked;
- the aggregate bonus cap is never exceeded.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules.games import (
    CHASE_THE_FLUSH,
    DESIGNATED_PLAYER,
    GAMES,
    HIGH_CARD_FLUSH,
    STREETS,
    decision_limits,
)
from controller.rules.hands import evaluate
from controller.rules.settle import (
    MAX_SEAT,
    Banking,
    Rake,
    Round,
    Seat,
    Settlement,
    bank_by_seat,
    settle,
    settle_round_json,
)


@st.composite
def rounds(draw: st.DrawFn, *, designated_only: bool = False) -> Round:
    game = HIGH_CARD_FLUSH if designated_only else draw(st.sampled_from(sorted(GAMES)))
    spec = GAMES[game]
    designated = designated_only or (game == HIGH_CARD_FLUSH and draw(st.booleans()))
    players = draw(st.integers(1, spec.max_players))
    wanted = players + 1 if designated else players
    numbers = draw(st.lists(st.integers(1, MAX_SEAT), min_size=wanted, max_size=wanted, unique=True))
    dp_seat, seat_numbers = (numbers[0], numbers[1:]) if designated else (0, numbers)
    deck = draw(st.permutations(range(52)))
    position = 0

    def take(count: int) -> tuple[int, ...]:
        nonlocal position
        cards = tuple(deck[position : position + count])
        position += count
        return cards

    # Now and then a misdeal: the banker or the community one card short (the round is dead).
    dealer = take(spec.hole_cards - draw(st.sampled_from([0] * 19 + [1])))
    community = (
        take(spec.community_cards - draw(st.sampled_from([0] * 19 + [1]))) if spec.community_cards else ()
    )
    ante_scale = draw(st.sampled_from([1, 100, 10_000]))
    seats: list[Seat] = []
    for number in seat_numbers:
        cards = take(spec.hole_cards - draw(st.sampled_from([0] * 14 + [1])))  # a seat a card short: dead
        ante = draw(st.integers(1, 50)) * ante_scale
        wagers = {"ante": ante}
        if game == CHASE_THE_FLUSH:
            wagers["xtra_bonus"] = ante
        for bonus in spec.optional_wagers:
            wagers[bonus] = draw(st.integers(0, 20)) * ante_scale
        folded = draw(st.booleans())
        street = None
        if not folded:
            hand = evaluate((*cards, *community))
            if game == CHASE_THE_FLUSH:
                street = draw(st.sampled_from(STREETS))
            low, high = decision_limits(game, hand, ante, street)
            wagers[spec.decision_wager] = draw(st.integers(low, high))
        seats.append(Seat(number, cards, wagers, folded=folded, street=street))
    banking = Banking()
    rake = None
    if designated:
        cap_units = draw(st.none() | st.integers(1, 20))  # a cap of 0 is refused
        cap = None if cap_units is None else cap_units * draw(st.sampled_from([10, 100, 1000])) * ante_scale
        funds = draw(st.integers(0, 30)) * draw(st.sampled_from([10, 100, 1000])) * ante_scale
        banking = Banking(DESIGNATED_PLAYER, dp_seat, funds, cap)
        if draw(st.booleans()):
            rake = Rake(draw(st.sampled_from(["i", "ii", "iii"])), draw(st.integers(0, 5 * ante_scale)))
    return Round(
        game=game,
        dealer=dealer,
        seats=tuple(seats),
        banking=banking,
        community=community,
        rake=rake,
        dead=draw(st.sampled_from([False] * 29 + [True])),
    )


def check(round_: Round, settlement: Settlement) -> None:
    seat_nets = sum(seat.net_cents for seat in settlement.seats)
    # The house's progressive banks the Progressive wager on its own (0 in a round without one).
    assert (
        seat_nets + settlement.banker_net_cents + settlement.rake_cents + settlement.progressive_net_cents
        == 0
    )

    for seat in settlement.seats:
        for wager in seat.wagers:
            assert wager.stake_cents > 0
            if wager.result == "win" and wager.wager == "progressive":
                # Paid *for* the wager: the award less the stake (a share of a small meter may be less).
                assert wager.award_cents is not None
                assert wager.net_cents == wager.award_cents - wager.stake_cents
            elif wager.result == "win":
                assert wager.net_cents >= 0
            elif wager.result == "lose":
                assert wager.net_cents == -wager.stake_cents
            else:
                assert wager.result in ("push", "returned")
                assert wager.net_cents == 0
        if seat.status == "dead":
            assert seat.hand is None
            assert seat.rake_cents == 0
            assert {wager.result for wager in seat.wagers} <= {"returned"}
    if settlement.dead:
        assert settlement.dealer_hand is None
        assert settlement.rake_cents == 0
        assert all(seat.status == "dead" for seat in settlement.seats)

    if round_.banking.mode == DESIGNATED_PLAYER:
        # The DP's loss on the wagers never exceeds what it posted.
        dp_wager_net = settlement.banker_net_cents + settlement.banker_rake_cents
        assert -dp_wager_net <= round_.banking.funds_cents
        report = settlement.designated_player
        if report is not None:
            assert report.paid_cents <= report.funds_cents + report.collected_cents
            assert report.committed_cents <= report.funds_cents
            # Coverage counts each seat's largest possible win, bonus top payouts included (the cap
            # bounding their sum): a covered seat's wins never exceed the bank, so nothing is short.
            assert report.shortfall_cents == 0
            assert report.paid_cents <= report.committed_cents
        cap = round_.banking.bonus_cap_cents
        if cap is not None and not settlement.dead:
            bonus_paid = sum(
                wager.net_cents
                for seat in settlement.seats
                for wager in seat.wagers
                if wager.wager in GAMES[round_.game].bonus_wagers and wager.result == "win"
            )
            assert bonus_paid <= cap
    else:
        assert all(wager.shortfall_cents == 0 for seat in settlement.seats for wager in seat.wagers)
        assert settlement.rake_cents == 0


@settings(max_examples=600, deadline=None)
@given(rounds())
def test_every_settlement_conserves_money_and_no_banker_pays_beyond_its_funds(round_: Round) -> None:
    check(round_, settle(round_))


@settings(max_examples=400, deadline=None)
@given(rounds(designated_only=True))
def test_designated_player_rounds_conserve_money_within_the_dps_funds(round_: Round) -> None:
    settlement = settle(round_)
    check(round_, settlement)
    report = settlement.designated_player
    running = bank_by_seat(settlement)
    if report is not None and running is not None:
        # The bank seat by seat: never below zero, ending where the report's totals say.
        balances = [int(step["bank_after"]) for step in running["seats"]]  # type: ignore[attr-defined]
        assert all(balance >= 0 for balance in balances)
        assert balances == sorted(balances, reverse=True)
        assert running["bank_after_paying"] == report.funds_cents + report.collected_cents - report.paid_cents


def to_json_input(round_: Round) -> dict[str, Any]:
    from controller.rules.cards import cards_text

    obj: dict[str, Any] = {
        "game": round_.game,
        "dealer": cards_text(round_.dealer),
        "seats": [
            {
                "seat": seat.seat,
                "cards": cards_text(seat.cards),
                "wagers": dict(seat.wagers),
                "folded": seat.folded,
                **({"street": seat.street} if seat.street else {}),
            }
            for seat in round_.seats
        ],
        "dead": round_.dead,
    }
    if round_.community:
        obj["community"] = cards_text(round_.community)
    if round_.game == CHASE_THE_FLUSH and "community" not in obj:
        obj["community"] = []
    banking = round_.banking
    if banking.mode == DESIGNATED_PLAYER:
        obj["banking"] = {"mode": banking.mode, "seat": banking.seat, "funds": banking.funds_cents}
        if banking.bonus_cap_cents is not None:
            obj["banking"]["bonus_cap"] = banking.bonus_cap_cents
    if round_.rake is not None:
        obj["rake"] = {"method": round_.rake.method, "amount": round_.rake.amount_cents}
    return obj


@settings(max_examples=200, deadline=None)
@given(rounds())
def test_the_json_contract_settles_a_round_exactly_as_the_api_does(round_: Round) -> None:
    assert settle_round_json(to_json_input(round_)) == settle(round_).to_json()
