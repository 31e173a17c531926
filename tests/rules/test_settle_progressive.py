"""The Progressive wager through the settlement (controller/rules/settle.py) and `flushtable settle`:
Top Flush and High Card Flush in both banking modes, refused on Chase the Flush; the house banks it
(never the designated player); the round's meter is an input and the output shows the awards, the meter
before and after, the contributions, the reset and the reserve's movement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import UserError
from controller.rules.progressive import PROGRESSIVE_GAMES, parse_progressive_round
from controller.rules.settle import Round, bank_by_seat, settle, settle_round_json
from table_names import records
from tests.rules.builders import PROGRESSIVE_ROUND, Json, dp, round_json, seat, seat_of, settled, wagers_of
from tests.rules.test_settle_cli import run_cli
from tests.rules.test_settle_properties import check, rounds, to_json_input

PROGRESSIVE: Json = PROGRESSIVE_ROUND
DEALER_QUALIFIES = "8s 7s 2s 3d 5d 9d Jh"  # a 9-high 3-card diamond flush: qualifies
SEVEN_CARD_SF = "2h 3h 4h 5h 6h 7h 8h"
SIX_CARD_SF = "2c 3c 4c 5c 6c 7c Ad"
ROYAL_SIX = "9s Ts Js Qs Ks As Kd"
NOTHING = "Ah Kd 9h 4c 2h 6c Qd"  # no run of 3 in a suit


def progressive_round(game: str, dealer: str, *seats: Json, **extra: Any) -> Json:
    return round_json(game, dealer, *seats, progressive=dict(PROGRESSIVE), **extra)


def total_is_zero(result: Json) -> bool:
    """Players + banker + rake + the progressive's take = 0: every cent is somebody's."""
    progressive = result.get("progressive") or {"net_cents": 0}
    players = sum(entry["net"] for entry in result["seats"])
    return bool(players + result["banker_net"] + result["rake"] + progressive["net_cents"] == 0)


def test_top_flush_pays_the_progressive_in_settlement_order_highest_seat_first() -> None:
    result = settled(
        progressive_round(
            "top-flush",
            DEALER_QUALIFIES,
            seat(1, SEVEN_CARD_SF, ante=500, play=2000, progressive=100),
            seat(2, SIX_CARD_SF, ante=500, play=2000, progressive=100),
            seat(3, ROYAL_SIX, ante=500, play=2000, progressive=100),
        )
    )
    progressive = result["progressive"]
    # Contributions first: 3 wagers x 15 cents to the meter, 3 x 2 cents to the reserve.
    assert progressive["meter_before_cents"] == 1_234_567
    assert progressive["contributions"]["to_meter_cents"] == 45
    assert progressive["contributions"]["hidden_cents"] == 6
    # The dealer's right to left: seat 3's 10%, seat 2's 10% of what is left, then seat 1 takes the rest.
    assert [(award["seat"], award["amount_cents"]) for award in progressive["awards"]] == [
        (3, 123_461),
        (2, 111_115),
        (1, 1_000_036),
    ]
    assert progressive["reset"] == {
        "amount_cents": 1_000_000,
        "from_reserve_cents": 200_006,
        "house_added_cents": 799_994,
    }
    assert progressive["meter_after_cents"] == 1_000_000
    assert progressive["reserve"]["after_cents"] == 0
    # Paid *for* the wager: the stake is collected, the net is the award less the stake.
    assert seat_of(result, 1)["wagers"]["progressive"] == {
        "stake": 100,
        "result": "win",
        "net": 999_936,
        "line": 7,
        "award": 1_000_036,
    }
    # The banker's net is the table game's only; the progressive's take is its own line.
    assert result["banker_net"] == -3 * 2500
    assert progressive["net_cents"] == 300 - 1_234_612
    assert total_is_zero(result)


def test_the_progressive_pays_on_the_players_own_cards_even_after_a_fold() -> None:
    result = settled(
        progressive_round(
            "top-flush",
            DEALER_QUALIFIES,
            seat(2, "Tc Jc Qc Kc 3h 4h 6h", ante=500, folded=True, progressive=100),
            seat(4, NOTHING, ante=500, play=500, progressive=100),
        )
    )
    assert wagers_of(result, 2)["progressive"] == ("win", 50 * 100 - 100)  # 4-card run: 50 for 1
    assert wagers_of(result, 4)["progressive"] == ("lose", -100)
    assert total_is_zero(result)


def test_high_card_flush_house_banked_takes_the_progressive() -> None:
    result = settled(
        progressive_round(
            "high-card-flush",
            DEALER_QUALIFIES,
            seat(1, "Tc Jc Qc Kc Ac 2h 3h", ante=500, raise_=1000, progressive=100),
        )
    )
    assert wagers_of(result, 1)["progressive"] == ("win", 500 * 100 - 100)  # 5-card run: 500 for 1
    assert result["progressive"]["awards"][0]["paid_from"] == "house"
    assert total_is_zero(result)


def test_at_a_designated_player_table_the_house_banks_the_progressive_never_the_dp() -> None:
    seats = (
        seat(3, "Tc Jc Qc Kc Ac 3h 4h", ante=500, raise_=1000, progressive=100),
        seat(5, NOTHING, ante=500, folded=True, progressive=100),
    )
    base = round_json("high-card-flush", DEALER_QUALIFIES, *seats, banking=dp(1, 6000))
    without = round_json(
        "high-card-flush",
        DEALER_QUALIFIES,
        *(
            {**entry, "wagers": {k: v for k, v in entry["wagers"].items() if k != "progressive"}}
            for entry in seats
        ),
        banking=dp(1, 6000),
    )
    base["progressive"] = dict(PROGRESSIVE)
    with_progressive, plain = settled(base), settled(without)
    # Coverage, the DP's bank and the DP's net are the same as without the wager: it is outside them.
    assert with_progressive["designated_player"] == plain["designated_player"]
    assert with_progressive["banker_net"] == plain["banker_net"]
    assert wagers_of(with_progressive, 3)["progressive"] == ("win", 500 * 100 - 100)
    assert wagers_of(with_progressive, 5)["progressive"] == ("lose", -100)  # the fold's stake: the house's
    assert with_progressive["progressive"]["collected_cents"] == 200
    assert total_is_zero(with_progressive)


def test_a_dead_seats_progressive_is_returned_and_contributes_nothing() -> None:
    result = settled(
        progressive_round(
            "top-flush",
            DEALER_QUALIFIES,
            seat(1, "3h 4h 5h 6h 7h 8h", ante=500, play=500, progressive=100),  # six cards: dead
            seat(2, NOTHING, ante=500, play=500, progressive=100),
        )
    )
    assert wagers_of(result, 1)["progressive"] == ("returned", 0)
    contributions = result["progressive"]["contributions"]
    assert (contributions["wagers"], contributions["returned_wagers"], contributions["to_meter_cents"]) == (
        1,
        1,
        15,
    )
    assert result["progressive"]["awards"] == []
    assert total_is_zero(result)


def test_a_dead_round_returns_every_progressive_wager_and_leaves_the_meters_alone() -> None:
    result = settled(
        progressive_round(
            "top-flush",
            DEALER_QUALIFIES,
            seat(1, SEVEN_CARD_SF, ante=500, play=500, progressive=100),
            dead=True,
        )
    )
    assert wagers_of(result, 1)["progressive"] == ("returned", 0)
    progressive = result["progressive"]
    assert progressive["meter_after_cents"] == progressive["meter_before_cents"] == 1_234_567
    assert progressive["reserve"]["after_cents"] == 200_000
    assert progressive["net_cents"] == 0
    assert total_is_zero(result)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"game": "chase-the-flush"},
            "progressive: Chase the Flush has no Progressive wager",
        ),
        (
            {"wagers": 150},
            "seats[0].wagers.progressive: must be exactly the unit (100), not 150 (the Progressive wager "
            "is a fixed amount)",
        ),
        ({"wagers": 200}, "seats[0].wagers.progressive: must be exactly the unit (100), not 200"),
        ({"no_progressive": True}, "seats[0].wagers.progressive: the round has no progressive"),
        ({"progressive": {"reset_cents": 10}}, "progressive.reset_cents: 10 is below the base (1000000)"),
        ({"progressive": {"increment_percent": 150}}, "progressive.increment_percent: 150% is over 100%"),
        (
            {"progressive": {"limit_cents": 999_999}},
            "progressive.limit_cents: 999999 is below the reset (1000000)",
        ),
        ({"progressive": {"unit_cents": 0}}, "progressive.unit_cents: a unit of 0 is no wager"),
        ({"progressive": {"meter_cents": -1}}, "progressive.meter_cents: must not be negative, not -1"),
        ({"progressive": {"meter_cents": 6_000_000}}, "progressive.meter_cents: 6000000 is above the limit"),
        (
            {"progressive": {"paytable": "jackpot"}},
            "progressive.paytable: unknown progressive paytable preset",
        ),
        ({"progressive_null": True}, "progressive: must be an object, not null"),
    ],
)
def test_bad_progressive_input_is_refused_in_one_line(change: Json, message: str) -> None:
    obj = progressive_round(
        "top-flush", DEALER_QUALIFIES, seat(1, NOTHING, ante=500, play=500, progressive=100)
    )
    if change.get("game") == "chase-the-flush":
        obj = progressive_round(
            "chase-the-flush",
            "Jh Kd 4s",
            seat(1, "Ah Qh 7h", street="preflop", ante=500, xtra_bonus=500, all_in=1500),
            community="9h 5h 2c 3d",
        )
    if "wagers" in change:
        obj["seats"][0]["wagers"]["progressive"] = change["wagers"]
    if change.get("no_progressive"):
        del obj["progressive"]
    if change.get("progressive_null"):
        obj["progressive"] = None
    if obj.get("progressive"):
        obj["progressive"].update(change.get("progressive", {}))
    with pytest.raises(UserError) as refused:
        settled(obj)
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)


def test_chase_the_flush_refuses_a_progressive_wager_on_a_seat() -> None:
    obj = round_json(
        "chase-the-flush",
        "Jh Kd 4s",
        seat(1, "Ah Qh 7h", street="preflop", ante=500, xtra_bonus=500, all_in=1500, progressive=100),
        community="9h 5h 2c 3d",
    )
    with pytest.raises(
        UserError, match=r"^seats\[0\]\.wagers\.progressive: Chase the Flush has no Progressive wager$"
    ):
        settled(obj)


def test_a_round_with_a_progressive_but_no_progressive_wagers_changes_only_by_the_meter_line() -> None:
    obj = progressive_round("top-flush", DEALER_QUALIFIES, seat(1, NOTHING, ante=500, play=500))
    result = settled(obj)
    del obj["progressive"]
    plain = settled(obj)
    assert result["progressive"]["meter_after_cents"] == 1_234_567
    assert {key: value for key, value in result.items() if key != "progressive"} == plain


# --- properties: every random round, with progressive wagers -----------------------------------------
@st.composite
def progressive_rounds(draw: st.DrawFn) -> Round:
    round_ = draw(rounds().filter(lambda r: r.game in PROGRESSIVE_GAMES))
    meter = draw(st.integers(0, 5_000_000))
    spec = parse_progressive_round(
        {**PROGRESSIVE, "meter_cents": meter, "reserve_cents": draw(st.integers(0, 10**7))}
    )
    seats = tuple(
        records.replace(entry, wagers={**entry.wagers, "progressive": 100}) if draw(st.booleans()) else entry
        for entry in round_.seats
    )
    return records.replace(round_, seats=seats, progressive=spec)


def progressive_input(round_: Round) -> Json:
    obj = to_json_input(round_)
    assert round_.progressive is not None
    given = round_.progressive.settings.to_json()
    obj["progressive"] = {
        **{k: v for k, v in given.items() if k != "paytable_name"},
        "paytable": given["paytable_name"] if given["paytable_name"] != "custom" else given["paytable"],
        "meter_cents": round_.progressive.meter_cents,
        "reserve_cents": round_.progressive.reserve_cents,
    }
    return obj


@settings(max_examples=300, deadline=None)
@given(progressive_rounds())
def test_every_round_with_progressive_wagers_conserves_money(round_: Round) -> None:
    settlement = settle(round_)
    check(round_, settlement)
    shown = settlement.to_json()
    assert total_is_zero(shown)
    progressive = settlement.progressive
    assert progressive is not None
    # The players' progressive nets are exactly minus the progressive's take.
    players = sum(w.net_cents for s in settlement.seats for w in s.wagers if w.wager == "progressive")
    assert players == -progressive.net_cents
    # The meters, to the cent.
    reset = 0 if progressive.reset is None else progressive.reset.amount_cents
    funded = 0 if progressive.reset is None else progressive.reset.from_reserve_cents
    assert (
        progressive.meter_before_cents + progressive.to_meter_cents - progressive.meter_awards_cents + reset
        == progressive.meter_after_cents
    )
    assert (
        progressive.reserve_before_cents + progressive.hidden_cents + progressive.overflow_cents - funded
        == progressive.reserve_after_cents
    )
    # The DP's bank, seat by seat, never carries the house's progressive.
    report, running = settlement.designated_player, bank_by_seat(settlement)
    if report is not None and running is not None:
        assert all(int(step["bank_after"]) >= 0 for step in running["seats"])  # type: ignore[attr-defined]
        assert running["bank_after_paying"] == report.funds_cents + report.collected_cents - report.paid_cents
    # A dead seat's or dead round's wager is returned and counted as returned, never as a contribution.
    returned = sum(
        1 for s in settlement.seats for w in s.wagers if w.wager == "progressive" and w.result == "returned"
    )
    assert progressive.wagers_returned == returned


@settings(max_examples=100, deadline=None)
@given(progressive_rounds())
def test_the_json_contract_settles_a_progressive_round_exactly_as_the_api_does(round_: Round) -> None:
    assert settle_round_json(progressive_input(round_)) == settle(round_).to_json()


# --- the command ------------------------------------------------------------------------------------------
def test_flushtable_settle_prints_the_progressive(tmp_path: Path) -> None:
    path = tmp_path / "round.json"
    path.write_text(
        json.dumps(
            progressive_round(
                "top-flush", DEALER_QUALIFIES, seat(1, SEVEN_CARD_SF, ante=500, play=2000, progressive=100)
            )
        )
    )
    done = run_cli(["settle", str(path)])
    assert done.returncode == 0, done.stderr
    progressive = json.loads(done.stdout)["progressive"]
    assert progressive["awards"][0]["amount_cents"] == 1_234_582
    assert progressive["meter_after_cents"] == 1_000_000
    text = run_cli(["settle", "--text", str(path)])
    assert text.returncode == 0, text.stderr
    assert "             progressive                   1.00  win                 +12,344.82" in text.stdout
    assert (
        "  Progressive: meter 12,345.67; 1 wagers add 0.15 to the meter, 0.02 to the reserve" in text.stdout
    )
    assert "    seat 1 7-card run: 12,345.82 from the meter (meter 12,345.82 -> 10,000.00)" in text.stdout
    assert "    reset to 10,000.00: 2,000.02 from the reserve, 7,999.98 added by the house" in text.stdout
    assert "    meter after 10,000.00; reserve 2,000.00 -> 0.00; progressive net -12,344.82" in text.stdout


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            {"reset_cents": 1},
            "flushtable settle: progressive.reset_cents: 1 is below the base (1000000); "
            "the meter never restarts below where it started",
        ),
        ({"hidden_percent": 100.01}, "flushtable settle: progressive.hidden_percent: 100.01% is over 100%"),
        (
            {"limit_cents": 10},
            "flushtable settle: progressive.limit_cents: 10 is below the reset (1000000); "
            "the meter could not restart under its own limit",
        ),
        (
            {"unit_cents": 0},
            "flushtable settle: progressive.unit_cents: a unit of 0 is no wager; "
            "the unit must be at least 1 cent",
        ),
    ],
)
def test_flushtable_settle_refuses_bad_parameters_with_one_line_and_status_2(change: Json, line: str) -> None:
    obj = progressive_round(
        "top-flush", DEALER_QUALIFIES, seat(1, NOTHING, ante=500, play=500, progressive=100)
    )
    obj["progressive"].update(change)
    done = run_cli(["settle"], stdin=json.dumps(obj))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == line + "\n"


def test_flushtable_settle_refuses_a_wrong_amount_on_the_spot() -> None:
    obj = progressive_round(
        "top-flush", DEALER_QUALIFIES, seat(1, NOTHING, ante=500, play=500, progressive=500)
    )
    done = run_cli(["settle"], stdin=json.dumps(obj))
    assert done.returncode == 2
    assert done.stderr == (
        "flushtable settle: seats[0].wagers.progressive: must be exactly the unit (100), not 500 "
        "(the Progressive wager is a fixed amount)\n"
    )


def test_the_dps_bank_seat_by_seat_leaves_the_progressive_out() -> None:
    from controller.rules.settle import parse_round

    obj = round_json(
        "high-card-flush",
        DEALER_QUALIFIES,
        seat(3, "Tc Jc Qc Kc Ac 3h 4h", ante=500, raise_=1000, progressive=100),
        banking=dp(1, 6000),
        progressive=dict(PROGRESSIVE),
    )
    running = bank_by_seat(settle(parse_round(obj)))
    assert running is not None
    # Seat 3 wins its ante and raise from the DP (1,500); its 500.00 progressive award is the house's.
    assert running["seats"] == [{"seat": 3, "paid": 1500, "bank_after": 4500}]
