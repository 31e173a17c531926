"""The public settlement API other modules build on: parse_round, settle, Settlement.to_json."""

from __future__ import annotations

import pytest

from controller.errors import UserError
from controller.rules.settle import parse_round, settle, settle_round_json


def hcf_round() -> dict[str, object]:
    return {
        "game": "high-card-flush",
        "dealer": ["As", "Ks", "2s", "3d", "4d", "5c", "7h"],
        "seats": [
            {
                "seat": 1,
                "cards": ["Ah", "Kh", "Qh", "Jh", "2c", "3c", "4c"],
                "wagers": {"ante": 500, "raise": 500, "flush": 100, "straight_flush": 100},
            }
        ],
    }


def test_settle_round_json_matches_parse_then_settle() -> None:
    obj = hcf_round()
    assert settle_round_json(obj) == settle(parse_round(obj)).to_json()


def test_a_4_card_flush_beats_a_qualifying_3_card_flush_and_bonuses_pay_on_the_hand() -> None:
    out = settle_round_json(hcf_round())
    seat = out["seats"][0]  # type: ignore[index]
    assert seat["status"] == "live"
    assert seat["wagers"]["ante"] == {"stake": 500, "result": "win", "net": 500}
    assert seat["wagers"]["raise"] == {"stake": 500, "result": "win", "net": 500}
    assert seat["wagers"]["flush"] == {"stake": 100, "result": "win", "net": 100, "odds": 1}
    assert seat["wagers"]["straight_flush"] == {"stake": 100, "result": "win", "net": 6000, "odds": 60}
    assert seat["net"] == 7100
    assert out["banker_net"] == -7100
    assert out["rake"] == 0


def test_parse_round_names_the_bad_field() -> None:
    obj = hcf_round()
    obj["seats"][0]["wagers"]["raise"] = 1500  # type: ignore[index]
    with pytest.raises(UserError, match=r"^seats\[0\]\.wagers\.raise: 1500 is outside its limit"):
        parse_round(obj)
