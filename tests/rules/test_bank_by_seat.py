"""controller.rules.settle.bank_by_seat: the designated player's bank as it runs down, seat by seat, in
settlement order (the live journal's round_settled ``bank_by_seat``; not part of the settle output).

Live, coverage means a covered seat is never paid short (docs/rules.md "Paying winners up to the DP's
bank"; the property test checks shortfall 0), so the shortfall case is a settlement built by hand here:
the derivation must still show it as recorded, the bank never below zero."""

from __future__ import annotations

from controller.rules.settle import (
    DEAD,
    LIVE,
    LOSE,
    RETURNED,
    WIN,
    DesignatedPlayerReport,
    SeatResult,
    Settlement,
    WagerResult,
    bank_by_seat,
)


def seat(number: int, *wagers: WagerResult, status: str = LIVE) -> SeatResult:
    return SeatResult(seat=number, status=status, hand=None, wagers=wagers)


def test_the_bank_runs_down_seat_by_seat_and_a_shortfall_is_recorded_never_invented() -> None:
    settlement = Settlement(
        game="high-card-flush",
        banking_mode="designated-player",
        dead=False,
        dealer_hand=None,
        dealer_qualifies=True,
        seats=(  # action order 3, 2, 7, 5 (DP in seat 4)
            seat(3, WagerResult("ante", 500, WIN, 500), WagerResult("flush", 100, WIN, 700, odds=7)),
            seat(2, WagerResult("ante", 500, LOSE, -500)),
            seat(7, WagerResult("ante", 500, RETURNED, 0), status=DEAD),
            seat(5, WagerResult("ante", 1000, WIN, 300, shortfall_cents=700)),
        ),
        designated_player=DesignatedPlayerReport(
            seat=4,
            funds_cents=1000,
            action_order=(3, 2, 7, 5),
            committed_cents=1000,
            collected_cents=500,
            paid_cents=1500,
            shortfall_cents=700,
        ),
    )
    assert bank_by_seat(settlement) == {
        "funds": 1000,
        "collected": 500,
        "after_collecting": 1500,
        "seats": [
            {"seat": 3, "paid": 1200, "bank_after": 300},
            {"seat": 2, "paid": 0, "bank_after": 300},  # a loser: collected before anyone was paid
            {"seat": 5, "paid": 300, "bank_after": 0, "shortfall": 700},
        ],
        "bank_after_paying": 0,
    }


def test_a_house_banked_round_has_no_bank_to_run_down() -> None:
    settlement = Settlement(
        game="high-card-flush",
        banking_mode="house",
        dead=False,
        dealer_hand=None,
        dealer_qualifies=True,
        seats=(seat(1, WagerResult("ante", 500, WIN, 500)),),
    )
    assert bank_by_seat(settlement) is None
