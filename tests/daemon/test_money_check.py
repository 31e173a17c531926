"""The daemon tests' money check (tests/daemon/harness.py ``check_money_balances``) reads the Progressive
wager's take: players + banker + rake + the progressive's net = 0, the progressive's own books (collected,
each award booked once to the seat that won it, the meter and the reserve to the cent). A settlement made
by the real rules (``settle_round_json``, the worked example of docs/settle.md: a fixed award from the
house, a 10% and the 100% award from the meter, a reset) passes; the same settlement with a progressive
payout mis-booked fails it, one way each."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from controller.rules.settle import settle_round_json
from tests.daemon.harness import check_money_balances
from tests.rules.builders import PROGRESSIVE_ROUND

ROUND: dict[str, Any] = {
    "game": "top-flush",
    "progressive": dict(PROGRESSIVE_ROUND),
    "dealer": ["8s", "7s", "2s", "3d", "5d", "9d", "Jh"],
    "seats": [
        {"seat": 1, "cards": ["2h", "3h", "4h", "5h", "6h", "7h", "8h"],
         "wagers": {"ante": 500, "play": 2000, "progressive": 100}},
        {"seat": 2, "cards": ["Tc", "Jc", "Qc", "Kc", "Ac", "9c", "Qd"],
         "wagers": {"ante": 500, "play": 2000, "progressive": 100}},
        {"seat": 3, "cards": ["4c", "5c", "6c", "Ad", "Kd", "Ts", "3s"],
         "wagers": {"ante": 500, "progressive": 100}, "folded": True},
    ],
}  # fmt: skip

Json = dict[str, Any]


def _seat(settlement: Json, number: int) -> Json:
    return next(seat for seat in settlement["seats"] if seat["seat"] == number)


def _award_booked_to_the_banker(settlement: Json) -> None:
    # The progressive's take carried by the banker instead: players + banker + rake alone balance.
    settlement["banker_net"] += settlement["progressive"]["net_cents"]
    settlement["progressive"]["paid_cents"] = settlement["progressive"]["collected_cents"]
    settlement["progressive"]["net_cents"] = 0


def _award_paid_twice(settlement: Json) -> None:
    # Seat 3's fixed award paid to the seat again, the house's books told the same.
    award = settlement["progressive"]["awards"][0]["amount_cents"]
    _seat(settlement, 3)["wagers"]["progressive"]["net"] += award
    _seat(settlement, 3)["net"] += award
    settlement["progressive"]["paid_cents"] += award
    settlement["progressive"]["net_cents"] -= award


def _award_to_the_wrong_seat(settlement: Json) -> None:
    settlement["progressive"]["awards"][0]["seat"] = 2


def _meter_award_left_on_the_meter(settlement: Json) -> None:
    settlement["progressive"]["meter_after_cents"] += 1


def _reserve_skimmed(settlement: Json) -> None:
    settlement["progressive"]["reserve"]["after_cents"] -= 1
    settlement["progressive"]["net_cents"] += 1
    settlement["banker_net"] -= 1


MIS_BOOKED: dict[str, Callable[[Json], None]] = {
    "award booked to the banker": _award_booked_to_the_banker,
    "award paid twice": _award_paid_twice,
    "award booked to the wrong seat": _award_to_the_wrong_seat,
    "meter award left on the meter": _meter_award_left_on_the_meter,
    "reserve skimmed": _reserve_skimmed,
}


def test_a_real_progressive_settlement_balances() -> None:
    settlement: Json = settle_round_json(ROUND)
    assert settlement["progressive"]["net_cents"] == -1_234_812  # docs/settle.md's worked example
    check_money_balances(settlement, "R1")


@pytest.mark.parametrize("mistake", sorted(MIS_BOOKED))
def test_a_mis_booked_progressive_payout_fails_the_check(mistake: str) -> None:
    settlement: Json = copy.deepcopy(settle_round_json(ROUND))
    MIS_BOOKED[mistake](settlement)
    with pytest.raises(AssertionError):
        check_money_balances(settlement, "R1")
