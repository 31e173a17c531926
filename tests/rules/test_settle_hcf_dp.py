"""High Card Flush Poker with a designated player (docs/rules.md "Designated player"): the DP's seven cards
play the banker's hand; contested bonuses; coverage at bet lock; settlement order up to the DP's funds;
house rake methods i-iii; the aggregate bonus cap."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import UserError
from controller.rules.settle import Coverage, action_order, cover_seats
from tests.rules.builders import conserves, dp, round_json, seat, seat_of, settled, wagers_of

# The DP's queen-4-2 of spades qualifies; its longest straight-flush run is 1 (the queen).
WEAK_DP = "2s 4s 3d 6d 8c Tc Qs"
RICH = 10**9


def hcf_dp(dealer: str, *seats: dict[str, Any], funds: int = RICH, **extra: Any) -> dict[str, Any]:
    banking = dp(4, funds, **extra.pop("banking_extra", {}))
    result = settled(round_json("high-card-flush", dealer, *seats, banking=banking, **extra))
    assert conserves(result)
    return result


# --- action order ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("designated", "seats", "order"),
    [
        (4, [1, 2, 3, 5, 6, 7], (3, 2, 1, 7, 6, 5)),
        (1, [2, 3, 4, 5, 6, 7], (7, 6, 5, 4, 3, 2)),
        (7, [1, 2, 3, 4, 5, 6], (6, 5, 4, 3, 2, 1)),
        (4, [6, 2], (2, 6)),
    ],
)
def test_seats_go_into_action_from_the_buttons_right_counter_clockwise(
    designated: int, seats: list[int], order: tuple[int, ...]
) -> None:
    assert action_order(designated, seats) == order


# --- the main game against the DP ------------------------------------------------------------------------
def test_the_dps_hand_is_the_bankers_and_the_main_game_is_as_house_banked() -> None:
    result = hcf_dp(
        WEAK_DP,
        seat(3, "Ah Kh 9h 4h 2c 7c Qd", ante=500, raise_=500),  # 4-card flush beats Q-4-2
        seat(5, "Jh 9d 7h 5h Ac Kd 5c", ante=500, raise_=500),  # J-7-5 loses to Q-4-2
    )
    assert result["dealer"]["qualifies"] is True
    assert wagers_of(result, 3) == {"ante": ("win", 500), "raise": ("win", 500)}
    assert wagers_of(result, 5) == {"ante": ("lose", -500), "raise": ("lose", -500)}
    assert result["banker_net"] == 0
    assert result["designated_player"]["action_order"] == [3, 5]


def test_dp_does_not_qualify_ante_wins_raise_pushes_and_bonuses_are_still_contested() -> None:
    # The DP's 8-7-2 of spades does not qualify; its longest run is 7-8 of spades (2 cards).
    result = hcf_dp(
        "8s 7s 2s 3d 5d Tc Jh",
        seat(1, "2h 3h 4h Ac Kd 9c 6s", ante=500, raise_=500, straight_flush=100, flush=100),
    )
    assert result["dealer"]["qualifies"] is False
    assert wagers_of(result, 1) == {
        "ante": ("win", 500),
        "raise": ("push", 0),
        "flush": ("lose", -100),  # a 3-card flush cannot win the flush wager
        "straight_flush": ("win", 800),  # run of 3 beats the DP's run of 2: 8 to 1
    }


def test_fold_forfeits_the_ante_and_the_bonus_wagers() -> None:
    result = hcf_dp(
        WEAK_DP,
        seat(1, "2h 3h 4h 5h 6h 9c Jd", folded=True, ante=500, flush=100, straight_flush=100),
    )
    assert seat_of(result, 1)["status"] == "folded"
    assert wagers_of(result, 1) == {
        "ante": ("lose", -500),
        "flush": ("lose", -100),
        "straight_flush": ("lose", -100),
    }


# --- contested bonuses -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("dp_cards", "player_cards", "expected"),
    [
        # Longer flush wins, paid by the player's length (4 cards: 2 to 1).
        (WEAK_DP, "Ah Kh 9h 4h 2c 7c Qd", ("win", 200)),
        # The DP's 5-card flush beats the player's 4-card.
        ("As Ks 9s 5s 2s 3d 4c", "Ah Kh 9h 4h 2c 7c Qd", ("lose", -100)),
        # Equal lengths: higher ranks card by card win (A-K-9-5 over A-K-9-4), lower lose.
        ("As Ks 9s 4s 2d 3d 7c", "Ah Kh 9h 5h 2c 6c Qd", ("win", 200)),
        ("As Ks 9s 6s 2d 3d 7c", "Ah Kh 9h 5h 2c 6c Qd", ("lose", -100)),
        # A 3-card flush never wins the flush wager, even against a lower DP.
        ("8s 7s 2s 3d 5d Tc Jh", "Ah Kh 9h 2c 6c Qd 4d", ("lose", -100)),
    ],
)
def test_the_flush_wager_is_a_contest_against_the_dps_flush(
    dp_cards: str, player_cards: str, expected: tuple[str, int]
) -> None:
    ante = 500
    result = hcf_dp(dp_cards, seat(1, player_cards, ante=ante, raise_=ante, flush=100))
    assert wagers_of(result, 1)["flush"] == expected


@pytest.mark.parametrize(
    ("dp_cards", "player_cards", "expected"),
    [
        # Longer run wins, paid by the player's run length (3: 8 to 1).
        (WEAK_DP, "2h 3h 4h Ac Kd 9c 6s", ("win", 800)),
        # Equal length: higher top card wins (5-6-7 over 2-3-4), equal top pushes, lower loses.
        ("2s 3s 4s 9d Jd Kc Th", "5h 6h 7h Ac Kd 9c 8d", ("win", 800)),
        ("5s 6s 7s 9d Jd Kc Th", "5h 6h 7h Ac Kd 9c 8d", ("push", 0)),
        ("8s 9s Ts 2d Jd Kc 3h", "5h 6h 7h Ac Kd 9c 8d", ("lose", -100)),
        # The DP's longer run beats the player's.
        ("5s 6s 7s 8s 2d Jd Kc", "5h 6h 7h Ac Kd 9c 8d", ("lose", -100)),
        # A run of 2 never wins, even against a run of 1.
        (WEAK_DP, "2h 3h 9h Ac Kd 9c 6s", ("lose", -100)),
    ],
)
def test_the_straight_flush_wager_is_a_contest_against_the_dps_run(
    dp_cards: str, player_cards: str, expected: tuple[str, int]
) -> None:
    player = seat(1, player_cards, ante=500, raise_=500, straight_flush=100)
    result = hcf_dp(dp_cards, player)
    assert wagers_of(result, 1)["straight_flush"] == expected


def test_identical_hands_push_every_bonus_even_a_longer_run() -> None:
    # Player: A-K-9-4 of hearts with a 3-card run 5-6-7 of clubs. DP: A-K-9-4 of spades, no run.
    result = hcf_dp(
        "As Ks 9s 4s 2d Jd Tc",
        seat(1, "Ah Kh 9h 4h 5c 6c 7c", ante=500, raise_=500, flush=100, straight_flush=100),
    )
    assert wagers_of(result, 1) == {
        "ante": ("push", 0),
        "raise": ("push", 0),
        "flush": ("push", 0),
        "straight_flush": ("push", 0),
    }


# --- coverage at bet lock --------------------------------------------------------------------------------
def test_seats_are_covered_in_action_order_while_the_dps_funds_cover_ante_plus_largest_raise() -> None:
    # DP in seat 4 with 3,000: seat 3 (ante 500: needs 500 + 3 x 500 = 2,000) is covered, leaving 1,000;
    # seat 2 (needs 2,000) cannot be covered and is dead; seat 1 (ante 200: needs 800) is covered.
    result = hcf_dp(
        WEAK_DP,
        seat(1, "Js Ts 9s 5d 7d 8h Jc", ante=200, raise_=200),
        seat(2, "9c 6c 5c Kd 2d 3h 6s", ante=500, raise_=500, flush=100),
        seat(3, "Ah Kh 9h 4h 2c 7c Qd", ante=500, raise_=500),
        funds=3000,
    )
    report = result["designated_player"]
    assert report["action_order"] == [3, 2, 1]
    assert report["committed"] == 2800
    dead = seat_of(result, 2)
    assert dead["status"] == "dead"
    assert dead["reason"] == "not covered by the designated player's funds"
    assert dead["hand"] is None  # a dead hand's cards are never shown
    assert wagers_of(result, 2) == {
        "ante": ("returned", 0),
        "raise": ("returned", 0),
        "flush": ("returned", 0),
    }
    assert wagers_of(result, 3) == {"ante": ("win", 500), "raise": ("win", 500)}
    assert wagers_of(result, 1) == {"ante": ("lose", -200), "raise": ("lose", -200)}


def test_a_misdealt_seat_keeps_the_cover_it_was_given_at_lock() -> None:
    # Lock comes before the deal: seat 3 (first in order) takes all 2,000; seat 1 is not covered, even
    # though seat 3 then turns out to hold six cards.
    result = hcf_dp(
        WEAK_DP,
        seat(1, "Js Ts 9s 5d 7d 8h Jc", ante=500, raise_=500),
        seat(3, "Ah Kh 9h 4h 2c 7c", ante=500),
        funds=2000,
    )
    assert seat_of(result, 3)["reason"] == "wrong card count"
    assert seat_of(result, 1)["reason"] == "not covered by the designated player's funds"
    assert result["designated_player"]["committed"] == 2000


def test_cover_seats_takes_seats_in_action_order_and_passes_over_those_it_cannot_cover() -> None:
    coverage = cover_seats("high-card-flush", 4, 3200, {1: 200, 2: 500, 3: 500, 5: 100})
    assert coverage == Coverage(
        action_order=(3, 2, 1, 5), covered=(3, 1, 5), uncovered=(2,), committed_cents=2000 + 800 + 400
    )
    assert cover_seats("high-card-flush", 4, 0, {3: 1}).uncovered == (3,)
    assert cover_seats("high-card-flush", 4, 4, {3: 1}).covered == (3,)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 7),
    st.integers(0, 100_000),
    st.dictionaries(st.integers(1, 7), st.integers(1, 10_000), min_size=1, max_size=6),
)
def test_cover_seats_never_commits_beyond_the_funds(
    designated: int, funds: int, antes: dict[int, int]
) -> None:
    antes.pop(designated, None)
    if not antes:
        return
    coverage = cover_seats("high-card-flush", designated, funds, antes)
    assert sorted(coverage.covered + coverage.uncovered) == sorted(antes)
    assert coverage.committed_cents == sum(4 * antes[seat] for seat in coverage.covered) <= funds
    # Every seat passed over could not have been covered with what was left when its turn came.
    left = funds
    for seat_number in coverage.action_order:
        need = 4 * antes[seat_number]
        assert (seat_number in coverage.covered) == (need <= left)
        if need <= left:
            left -= need


# --- settlement order up to the DP's funds ---------------------------------------------------------------
def test_coverage_counts_a_seats_bonus_top_payout_and_an_uncovered_seat_is_dead() -> None:
    # docs/rules.md "Designated player": seat 3 (first in action order) needs ante 500 + raise 1,500 + the
    # straight flush's top payout 100 x 1,000 = 102,000; the bank of 4,000 cannot cover it: dead, every
    # wager returned, unraked. Seat 5 needs 2,000: covered, and loses 1,000 to the bank.
    result = hcf_dp(
        WEAK_DP,
        seat(3, "2h 3h 4h 5h 9c Jd Kc", ante=500, raise_=500, straight_flush=100),
        seat(5, "7h 9h Jh Ac Kd 5c 7d", ante=500, raise_=500),
        funds=4000,
        rake={"method": "ii", "amount": 50},
    )
    assert seat_of(result, 3)["status"] == "dead"
    assert wagers_of(result, 3) == {
        "ante": ("returned", 0),
        "raise": ("returned", 0),
        "straight_flush": ("returned", 0),
    }
    assert seat_of(result, 3)["rake"] == 0
    assert wagers_of(result, 5) == {"ante": ("lose", -500), "raise": ("lose", -500)}
    assert result["designated_player"] == {
        "seat": 4,
        "funds": 4000,
        "action_order": [3, 5],
        "committed": 2000,
        "collected": 1000,
        "paid": 0,
        "shortfall": 0,
    }


def test_the_aggregate_cap_bounds_the_bonus_part_of_coverage_and_winners_are_paid_seat_by_seat() -> None:
    # With a cap of 2,000 seat 3 needs 2,000 + min(100,000, 2,000) = 4,000 and seat 5 2,000 more (the
    # bonus part stays 2,000): both covered by 8,000. Seat 3's 6,000 straight-flush win is cut to the cap
    # before any payment; then seat 3 is paid all its wins (ante, raise, straight flush: 3,000) before
    # seat 5 (ante, raise: 1,000). Nothing is short: coverage reserved every covered seat's largest win.
    result = hcf_dp(
        WEAK_DP,
        seat(3, "2h 3h 4h 5h 9c Jd Kc", ante=500, raise_=500, straight_flush=100),
        seat(5, "Ac Jc 7c 5c 7d 9d Kd", ante=500, raise_=500),
        funds=8000,
        banking_extra={"bonus_cap": 2000},
    )
    assert wagers_of(result, 3) == {
        "ante": ("win", 500),
        "raise": ("win", 500),
        "straight_flush": ("win", 2000),
    }
    assert seat_of(result, 3)["wagers"]["straight_flush"]["capped_from"] == 6000
    assert wagers_of(result, 5) == {"ante": ("win", 500), "raise": ("win", 500)}
    assert result["designated_player"]["committed"] == 6000
    assert result["designated_player"]["paid"] == 4000
    assert result["designated_player"]["shortfall"] == 0
    assert result["banker_net"] == -4000


def test_a_cap_of_zero_is_refused_as_the_configuration_refuses_it() -> None:
    with pytest.raises(UserError) as raised:
        hcf_dp(WEAK_DP, seat(3, "2h 3h 4h 5h 9c Jd Kc", ante=500), banking_extra={"bonus_cap": 0})
    assert str(raised.value) == (
        "banking.bonus_cap: must be at least 1 cent (0 would allow or pay nothing; leave it out for none)"
    )


# --- house rake ------------------------------------------------------------------------------------------
RAKE_SEATS = (
    seat(3, "Ah Kh 9h 4h 2c 7c Qd", ante=500, raise_=500),  # live
    seat(5, "Jh 9d 7h 5h Ac Kd 5c", folded=True, ante=500),  # folded: it played the hand, it is raked
    seat(6, "Js Ts 9s 5d 7d 8h", ante=500, raise_=500),  # six cards: dead, never raked
)


@pytest.mark.parametrize(
    ("method", "lines"),
    [
        ("i", [(3, "player"), (5, "player"), (4, "designated player")]),
        ("ii", [(3, "player"), (5, "player")]),
        ("iii", [(4, "designated player")]),
    ],
)
def test_rake_methods_take_a_fixed_amount_per_hand_shown_as_its_own_line(
    method: str, lines: list[tuple[int, str]]
) -> None:
    result = hcf_dp(WEAK_DP, *RAKE_SEATS, rake={"method": method, "amount": 100})
    assert [(line["seat"], line["payer"]) for line in result["rake_lines"]] == lines
    assert all(line["amount"] == 100 for line in result["rake_lines"])
    assert result["rake"] == 100 * len(lines)
    seat_rakes = {entry["seat"]: entry["rake"] for entry in result["seats"]}
    player_lines = {seat_number for seat_number, payer in lines if payer == "player"}
    assert seat_rakes == {3: 100 if 3 in player_lines else 0, 5: 100 if 5 in player_lines else 0, 6: 0}
    assert seat_of(result, 6)["status"] == "dead"
    # The wagers settle the same whatever the rake: seat 3 +1,000, seat 5 -500.
    assert seat_of(result, 3)["net"] == 1000 - seat_rakes[3]
    assert seat_of(result, 5)["net"] == -500 - seat_rakes[5]
    dp_rake = 100 if (4, "designated player") in lines else 0
    assert result["banker_net"] == -500 - dp_rake


def test_no_rake_unless_the_round_sets_one_and_never_on_a_dead_round() -> None:
    assert hcf_dp(WEAK_DP, *RAKE_SEATS)["rake"] == 0
    dead = hcf_dp(WEAK_DP, *RAKE_SEATS, rake={"method": "i", "amount": 100}, dead=True)
    assert dead["dead"] is True
    assert dead["rake"] == 0
    assert dead["rake_lines"] == []
    assert all(entry["net"] == 0 for entry in dead["seats"])


def test_no_rake_when_no_seat_is_in_action() -> None:
    result = hcf_dp(WEAK_DP, seat(3, "Ah Kh 9h 4h 2c 7c", ante=500), rake={"method": "i", "amount": 100})
    assert result["rake"] == 0
    assert result["banker_net"] == 0


def test_rake_is_refused_on_a_house_banked_table() -> None:
    obj = round_json(
        "high-card-flush",
        WEAK_DP,
        seat(3, "Ah Kh 9h 4h 2c 7c Qd", ante=500, raise_=500),
        rake={"method": "i", "amount": 100},
    )
    with pytest.raises(UserError, match=r"^rake: a rake is taken only in the designated-player mode"):
        settled(obj)


# --- the aggregate bonus cap -----------------------------------------------------------------------------
CAP_SEATS = (
    seat(3, "2h 3h 4h 5h 9c Jd Kc", ante=500, raise_=500, straight_flush=100),  # 6,000 (60 to 1)
    seat(5, "Ac Jc 7c 5c 7d 9d Kd", ante=500, raise_=500, flush=100),  # 200 (2 to 1)
)


def test_bonus_wins_above_the_cap_are_reduced_in_proportion_rounded_down_with_the_rounding_shown() -> None:
    result = hcf_dp(WEAK_DP, *CAP_SEATS, banking_extra={"bonus_cap": 1000})
    # 6,000 x 1,000 / 6,200 = 967.7 -> 967; 200 x 1,000 / 6,200 = 32.3 -> 32; paid 999, rounding 1.
    assert seat_of(result, 3)["wagers"]["straight_flush"] == {
        "stake": 100,
        "result": "win",
        "net": 967,
        "odds": 60,
        "capped_from": 6000,
    }
    assert seat_of(result, 5)["wagers"]["flush"] == {
        "stake": 100,
        "result": "win",
        "net": 32,
        "odds": 2,
        "capped_from": 200,
    }
    assert result["bonus_cap"] == {
        "cap": 1000,
        "bonus_wins": 6200,
        "applied": True,
        "paid": 999,
        "rounding": 1,
    }
    # The main game is not capped.
    assert wagers_of(result, 3)["ante"] == ("win", 500)


def test_bonus_wins_within_the_cap_are_paid_in_full() -> None:
    result = hcf_dp(WEAK_DP, *CAP_SEATS, banking_extra={"bonus_cap": 6200})
    assert wagers_of(result, 3)["straight_flush"] == ("win", 6000)
    assert result["bonus_cap"] == {
        "cap": 6200,
        "bonus_wins": 6200,
        "applied": False,
        "paid": 6200,
        "rounding": 0,
    }


# --- refused designated-player input ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("banking", "message"),
    [
        ({"mode": "designated-player", "funds": 100}, r"^banking\.seat: missing"),
        ({"mode": "designated-player", "seat": 4}, r"^banking\.funds: missing"),
        (
            {"mode": "designated-player", "seat": 9, "funds": 100},
            r"^banking\.seat: must be a seat number 1\.\.7",
        ),
        (
            {"mode": "designated-player", "seat": 4, "funds": -1},
            r"^banking\.funds: must not be negative",
        ),
        (
            {"mode": "designated-player", "seat": 4, "funds": 1.5},
            r"^banking\.funds: must be a whole number",
        ),
        (
            {"mode": "designated-player", "seat": 3, "funds": 100},
            r"^seats\[0\]\.seat: seat 3 is the designated player's",
        ),
        ({"mode": "house", "seat": 3}, r"^banking\.seat: only the designated-player mode takes 'seat'"),
        ({"mode": "banked"}, r"^banking\.mode: must be 'house' or 'designated-player'"),
    ],
)
def test_bad_designated_player_banking_is_refused(banking: dict[str, Any], message: str) -> None:
    obj = round_json(
        "high-card-flush", WEAK_DP, seat(3, "Ah Kh 9h 4h 2c 7c Qd", ante=500, raise_=500), banking=banking
    )
    with pytest.raises(UserError, match=message):
        settled(obj)


def test_chase_the_flush_has_no_designated_player() -> None:
    obj = round_json(
        "chase-the-flush",
        "2s 3s 4c",
        seat(1, "Ah Qh 7h", street="preflop", ante=500, xtra_bonus=500, all_in=1500),
        community="9h 5h 2c 3d",
        banking={"mode": "designated-player", "seat": 4, "funds": 100},
    )
    with pytest.raises(UserError, match=r"^banking\.mode: chase-the-flush is house-banked only"):
        settled(obj)
