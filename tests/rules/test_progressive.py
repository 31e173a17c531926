"""The Progressive wager's rule function (controller/rules/progressive.py): the paytable, the parameters'
refusals, and one round's contributions, awards, reset and reserve, exact to the cent.

The properties run many rounds in a row from the base and check the meters' conservation after every
round (docs/rules.md "Progressive wager"):

    base + resets + increments to the meter - meter awards            == meter
    hidden + overflow - resets funded from the reserve                 == reserve
    (the house adds what the reserve lacks: resets == funded + added)

``FLUSHTABLE_LONG_PROPERTIES=1`` runs them with 20x the examples.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import UserError
from controller.rules.progressive import (
    DEFAULT_PROGRESSIVE_PAYTABLE,
    Award,
    ProgressiveEntry,
    ProgressivePaytable,
    ProgressiveResult,
    ProgressiveSettings,
    parse_percent,
    parse_progressive_paytable,
    parse_progressive_round,
    parse_progressive_settings,
    settle_progressive,
)
from tests.rules.builders import PROGRESSIVE_SETTINGS

LONG = os.environ.get("FLUSHTABLE_LONG_PROPERTIES") == "1"
EXAMPLES = 4000 if LONG else 200

GOOD = PROGRESSIVE_SETTINGS
SETTINGS = parse_progressive_settings(GOOD)


def entries(*pairs: tuple[int, int], dead: tuple[int, ...] = ()) -> list[ProgressiveEntry]:
    """``(seat, run length)`` in settlement order; seats in ``dead`` are returned."""
    return [ProgressiveEntry(seat, run, settled=seat not in dead) for seat, run in pairs]


# --- the paytable -------------------------------------------------------------------------------------
def test_the_default_paytable_is_rules_mds() -> None:
    assert DEFAULT_PROGRESSIVE_PAYTABLE.name == "progressive"
    assert DEFAULT_PROGRESSIVE_PAYTABLE.to_json() == {
        "7": {"meter_share_percent": 100},
        "6": {"meter_share_percent": 10},
        "5": 500,
        "4": 50,
        "3": 5,
    }
    assert parse_progressive_paytable("progressive", field="p") is DEFAULT_PROGRESSIVE_PAYTABLE
    assert DEFAULT_PROGRESSIVE_PAYTABLE.award_for(2) is None
    assert DEFAULT_PROGRESSIVE_PAYTABLE.award_for(3) == (3, Award(fixed_units=5))
    assert DEFAULT_PROGRESSIVE_PAYTABLE.award_for(7) == (7, Award(meter_share_bp=10_000))


def test_a_configured_paytable_pays_the_highest_line_reached() -> None:
    table = parse_progressive_paytable(
        {"6": {"meter_share_percent": 100}, "5": {"meter_share_percent": 12.5}, "4": 40}, field="p"
    )
    assert table.award_for(7) == (6, Award(meter_share_bp=10_000))  # above the top line: the top line
    assert table.award_for(5) == (5, Award(meter_share_bp=1250))
    assert table.award_for(3) is None
    assert table.to_json() == {"6": {"meter_share_percent": 100}, "5": {"meter_share_percent": 12.5}, "4": 40}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "p: unknown progressive paytable preset 'nope' (known: progressive)"),
        ({}, "p: a progressive paytable is a preset name or a non-empty object"),
        ({"8": 5}, "p: line '8' is not a run length from 1 to 7"),
        ({"5": 0}, "p.5: a fixed award is a whole number of units from 1 to 1000000"),
        ({"5": 2.5}, "p.5: a fixed award is a whole number of units"),
        ({"5": True}, "p.5: a fixed award is a whole number of units"),
        ({"7": {"meter_share_percent": 0}}, "p.7.meter_share_percent: 0% pays nothing; leave the line out"),
        ({"7": {"meter_share_percent": 101}}, "p.7.meter_share_percent: 101% is over 100%"),
        ({"7": {"meter_share_percent": 10.005}}, "p.7.meter_share_percent: at most two decimals"),
        ({"7": {"share": 10}}, "p.7: an award is a number of units or"),
    ],
)
def test_a_bad_paytable_is_refused_in_one_line(spec: object, message: str) -> None:
    with pytest.raises(UserError) as refused:
        parse_progressive_paytable(spec, field="p")
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)


# --- the parameters ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "basis_points"), [(0, 0), (15, 1500), (4.5, 450), (4.55, 455), (12.25, 1225), (100, 10_000)]
)
def test_a_percentage_is_exact_basis_points(value: float, basis_points: int) -> None:
    assert parse_percent(value, "x") == basis_points


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"unit_cents": 0},
            "progressive.unit_cents: a unit of 0 is no wager; the unit must be at least 1 cent",
        ),
        (
            {"reset_cents": 999_999},
            "progressive.reset_cents: 999999 is below the base (1000000); the meter never restarts below "
            "where it started",
        ),
        ({"increment_percent": 100.5}, "progressive.increment_percent: 100.5% is over 100%"),
        ({"hidden_percent": 101}, "progressive.hidden_percent: 101% is over 100%"),
        (
            {"increment_percent": 90, "hidden_percent": 20},
            "progressive.hidden_percent: increment 90% + hidden 20% is over 100% of the wager",
        ),
        (
            {"limit_cents": 999_999},
            "progressive.limit_cents: 999999 is below the reset (1000000); the meter could not restart under "
            "its own limit",
        ),
        (
            {"increment_percent": 4.5},
            "progressive.increment_percent: 4.5% of the 100-cent unit is 4.5 cents; a wager's contribution "
            "must be whole cents (nothing is rounded)",
        ),
        ({"increment_percent": -1}, "progressive.increment_percent: must not be negative, not -1"),
        ({"increment_percent": "15%"}, "progressive.increment_percent: must be a percentage like 10 or 4.5"),
        ({"unit_cents": 1.5}, "progressive.unit_cents: must be a whole number of cents"),
        ({"base_cents": -5}, "progressive.base_cents: must not be negative, not -5"),
        ({"colour": "red"}, "progressive.colour: unknown field (known: unit_cents, base_cents"),
    ],
)
def test_parameters_that_make_no_sense_are_refused_in_one_line(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(UserError) as refused:
        parse_progressive_settings({**GOOD, **changes})
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)


def test_a_missing_parameter_is_named() -> None:
    for key in ("unit_cents", "base_cents", "reset_cents", "increment_percent", "hidden_percent"):
        obj = {name: value for name, value in GOOD.items() if name != key}
        with pytest.raises(UserError, match=rf"^progressive\.{key}: missing$"):
            parse_progressive_settings(obj)


def test_a_unit_other_than_a_dollar_takes_rates_whose_share_is_whole_cents() -> None:
    # A 5.00 unit: 4.4% is 22 cents, accepted; 4.5% would be 22.5 cents, refused.
    five = parse_progressive_settings({**GOOD, "unit_cents": 500, "increment_percent": 4.4})
    assert five.increment_per_wager_cents == 22
    with pytest.raises(UserError, match=r"is 22\.5 cents"):
        parse_progressive_settings({**GOOD, "unit_cents": 500, "increment_percent": 4.5})


def test_the_rounds_meter_is_checked_against_the_limit() -> None:
    assert parse_progressive_round({**GOOD, "meter_cents": 5_000_000}).meter_cents == 5_000_000
    with pytest.raises(
        UserError, match=r"^progressive\.meter_cents: 5000001 is above the limit \(5000000\); a meter never"
    ):
        parse_progressive_round({**GOOD, "meter_cents": 5_000_001})
    with pytest.raises(UserError, match=r"^progressive\.meter_cents: missing"):
        parse_progressive_round(GOOD)
    assert parse_progressive_round({**GOOD, "meter_cents": 7}).reserve_cents == 0


# --- one round -----------------------------------------------------------------------------------------
def test_contributions_come_before_the_awards_and_fixed_awards_are_the_houses() -> None:
    result = settle_progressive(SETTINGS, 1_234_500, 0, entries((6, 5), (4, 2), (1, 3)))
    assert (result.increment_cents, result.to_meter_cents, result.hidden_cents) == (45, 45, 6)
    assert [(award.seat, award.line, award.amount_cents, award.from_meter) for award in result.awards] == [
        (6, 5, 50_000, False),  # 500 for 1 on the 1.00 unit
        (1, 3, 500, False),
    ]
    assert result.meter_after_cents == 1_234_545  # fixed awards never touch the meter
    assert result.reserve_after_cents == 6
    assert (result.collected_cents, result.paid_cents, result.net_cents) == (300, 50_500, -50_200)


def test_a_share_is_taken_from_the_meter_as_it_stands_when_paid_rounded_down() -> None:
    result = settle_progressive(SETTINGS, 1_000_000, 0, entries((5, 6), (3, 6)))
    first, second = result.awards
    assert (first.meter_before_cents, first.amount_cents, first.meter_after_cents) == (
        1_000_030,
        100_003,
        900_027,
    )
    # 10% of 900,027 is 90,002.7: 90,002 paid, the 0.7 cent stays on the meter.
    assert (second.meter_before_cents, second.amount_cents, second.meter_after_cents) == (
        900_027,
        90_002,
        810_025,
    )
    assert result.reset is None
    assert result.meter_after_cents == 810_025


def test_several_100_percent_winners_share_the_meter_as_it_stands_when_the_first_is_paid() -> None:
    # Seat 6 is paid 10% first (settlement order), then seats 4 and 2 share what is left; seat 1's
    # 10% comes from the re-seeded meter.
    result = settle_progressive(SETTINGS, 2_000_001, 300_000, entries((6, 6), (4, 7), (2, 7), (1, 6)))
    assert [(award.seat, award.amount_cents) for award in result.awards] == [
        (6, 200_006),  # 10% of 2,000,061 (2,000,001 + 4 wagers x 0.15), rounded down
        (4, 900_028),  # 1,800,055 frozen: 900,027 each, the cent left over to the first paid
        (2, 900_027),
        (1, 100_000),  # 10% of the re-seeded 1,000,000
    ]
    assert result.awards[1].shared_by == result.awards[2].shared_by == 2
    assert result.awards[1].meter_before_cents == result.awards[2].meter_before_cents == 1_800_055
    assert result.reset is not None
    assert (result.reset.from_reserve_cents, result.reset.house_added_cents) == (300_008, 699_992)
    assert result.reserve_after_cents == 0
    assert result.meter_after_cents == 900_000


def test_three_winners_share_with_every_cent_left_over_to_the_first_paid() -> None:
    plain = parse_progressive_settings({**GOOD, "increment_percent": 0, "hidden_percent": 0})
    result = settle_progressive(plain, 1_000_000, 5_000_000, entries((3, 7), (2, 7), (1, 7)))
    assert [award.amount_cents for award in result.awards] == [333_334, 333_333, 333_333]
    assert result.reset is not None
    assert result.reset.house_added_cents == 0
    assert result.reserve_after_cents == 4_000_000


def test_past_the_limit_the_increment_overflows_into_the_reserve() -> None:
    result = settle_progressive(SETTINGS, 4_999_990, 0, entries((1, 1), (2, 1), (3, 1)))
    assert (result.increment_cents, result.to_meter_cents, result.overflow_cents) == (45, 10, 35)
    assert result.meter_after_cents == 5_000_000
    assert result.reserve_after_cents == 35 + 6


def test_a_returned_wager_contributes_nothing_and_wins_nothing() -> None:
    result = settle_progressive(SETTINGS, 1_000_000, 0, entries((1, 7), (2, 2), dead=(1,)))
    assert (result.wagers_settled, result.wagers_returned) == (1, 1)
    assert result.awards == ()
    assert result.meter_after_cents == 1_000_015


def test_the_json_shows_every_figure() -> None:
    shown = settle_progressive(SETTINGS, 1_000_000, 10, entries((2, 7))).to_json()
    assert shown["meter_before_cents"] == 1_000_000
    assert shown["meter_after_cents"] == 1_000_000
    assert shown["contributions"] == {
        "wagers": 1,
        "returned_wagers": 0,
        "increment_percent": 15,
        "hidden_percent": 2,
        "increment_cents": 15,
        "to_meter_cents": 15,
        "overflow_cents": 0,
        "hidden_cents": 2,
    }
    assert shown["awards"] == [
        {
            "seat": 2,
            "line": 7,
            "award": {"meter_share_percent": 100},
            "amount_cents": 1_000_015,
            "paid_from": "meter",
            "meter_before_cents": 1_000_015,
            "meter_after_cents": 1_000_000,
        }
    ]
    assert shown["reset"] == {
        "amount_cents": 1_000_000,
        "from_reserve_cents": 12,
        "house_added_cents": 999_988,
    }
    assert shown["reserve"] == {
        "before_cents": 10,
        "hidden_cents": 2,
        "overflow_cents": 0,
        "to_reset_cents": 12,
        "after_cents": 0,
    }


# --- properties over many rounds --------------------------------------------------------------------------
@st.composite
def progressive_settings(draw: st.DrawFn) -> ProgressiveSettings:
    unit = draw(st.sampled_from([1, 25, 100, 500, 2500]))
    # Rates whose share of the unit is whole cents: a multiple of 10,000 / gcd(unit, 10,000) basis points.
    from math import gcd

    step = 10_000 // gcd(unit, 10_000)
    increment = draw(st.integers(0, 10_000 // step)) * step
    hidden = draw(st.integers(0, (10_000 - increment) // step)) * step
    base = draw(st.integers(0, 50_000)) * unit
    reset = base + draw(st.integers(0, 10_000)) * unit
    limit = draw(st.none() | st.integers(reset, reset + 20 * unit))
    lines: dict[int, Award] = {}
    for length in draw(st.sets(st.integers(1, 7), min_size=1)):
        lines[length] = draw(
            st.builds(Award, fixed_units=st.integers(1, 1000))
            | st.builds(Award, meter_share_bp=st.integers(1, 10_000))
            | st.just(Award(meter_share_bp=10_000))
        )
    table = ProgressivePaytable.from_lines("custom", lines)
    return ProgressiveSettings(unit, base, reset, increment, hidden, limit, table)


rounds_of_entries = st.lists(
    st.lists(
        st.tuples(st.integers(1, 7), st.integers(1, 7), st.booleans()), max_size=7, unique_by=lambda e: e[0]
    ),
    min_size=1,
    max_size=25,
)


@dataclass
class Totals:
    """What an auditor adds up from each round's record."""

    increments: int = 0
    meter_awards: int = 0
    resets: int = 0
    hidden: int = 0
    overflow: int = 0
    funded: int = 0
    house_added: int = 0
    history: list[ProgressiveResult] = field(default_factory=list)


def play(settings_: ProgressiveSettings, rounds: list[list[tuple[int, int, bool]]]) -> Totals:
    totals = Totals()
    meter, reserve = settings_.base_cents, 0
    for round_ in rounds:
        result = settle_progressive(
            settings_, meter, reserve, [ProgressiveEntry(seat, run, settled) for seat, run, settled in round_]
        )
        totals.history.append(result)
        totals.increments += result.to_meter_cents
        totals.meter_awards += result.meter_awards_cents
        totals.hidden += result.hidden_cents
        totals.overflow += result.overflow_cents
        if result.reset is not None:
            totals.resets += result.reset.amount_cents
            totals.funded += result.reset.from_reserve_cents
            totals.house_added += result.reset.house_added_cents
        meter, reserve = result.meter_after_cents, result.reserve_after_cents
        # The promises, after every round, to the cent:
        assert settings_.base_cents + totals.resets + totals.increments - totals.meter_awards == meter
        assert totals.hidden - totals.funded + totals.overflow == reserve
        assert totals.resets == totals.funded + totals.house_added
        assert meter >= 0
        assert reserve >= 0
        if settings_.limit_cents is not None:
            assert meter <= settings_.limit_cents
    return totals


@settings(max_examples=EXAMPLES, deadline=None)
@given(progressive_settings(), rounds_of_entries)
def test_the_meters_conserve_money_to_the_cent_over_many_rounds(
    settings_: ProgressiveSettings, rounds: list[list[tuple[int, int, bool]]]
) -> None:
    play(settings_, rounds)


@settings(max_examples=EXAMPLES, deadline=None)
@given(progressive_settings(), rounds_of_entries)
def test_each_round_pays_what_the_paytable_says_in_settlement_order(
    settings_: ProgressiveSettings, rounds: list[list[tuple[int, int, bool]]]
) -> None:
    for round_, result in zip(rounds, play(settings_, rounds).history, strict=True):
        settled = [(seat, run) for seat, run, live in round_ if live]
        increment = len(settled) * settings_.unit_cents * settings_.increment_bp // 10_000
        hidden = len(settled) * settings_.unit_cents * settings_.hidden_bp // 10_000
        assert result.increment_cents == increment
        assert result.hidden_cents == hidden
        assert result.to_meter_cents + result.overflow_cents == increment
        assert result.collected_cents == len(settled) * settings_.unit_cents
        reached = [(seat, settings_.paytable.award_for(run)) for seat, run in settled]
        winners = [(seat, line) for seat, line in reached if line is not None]
        # Every line reached is paid once, in settlement order, and nothing else is paid.
        assert [award.seat for award in result.awards] == [seat for seat, _ in winners]
        jackpot = [award for award in result.awards if award.award.is_jackpot]
        for award, (_seat, (line, kind)) in zip(result.awards, winners, strict=True):
            assert (award.line, award.award) == (line, kind)
            if kind.fixed_units is not None:
                assert award.amount_cents == kind.fixed_units * settings_.unit_cents
                assert not award.from_meter
            elif not kind.is_jackpot:
                assert kind.meter_share_bp is not None
                assert award.meter_before_cents is not None
                assert award.meter_after_cents is not None
                assert award.amount_cents == award.meter_before_cents * kind.meter_share_bp // 10_000
                assert award.meter_after_cents == award.meter_before_cents - award.amount_cents
        if jackpot:
            # The 100% winners share the frozen meter equally, any cents left over to the first paid.
            frozen = jackpot[0].meter_before_cents
            assert frozen is not None
            assert sum(award.amount_cents for award in jackpot) == frozen
            assert {award.amount_cents for award in jackpot[1:]} <= {frozen // len(jackpot)}
            assert jackpot[0].amount_cents == frozen // len(jackpot) + frozen % len(jackpot)
            assert result.reset is not None
            assert result.reset.amount_cents == settings_.reset_cents
        else:
            assert result.reset is None


def test_a_jackpot_with_a_reserve_that_covers_the_reset_costs_the_house_nothing() -> None:
    totals = play(SETTINGS, [[(1, 2, True)] * 1] * 3 + [[(2, 7, True)]])
    assert totals.house_added == 1_000_000 - 4 * 2  # four wagers' hidden 2 cents each were in the reserve
    assert totals.funded == 8
