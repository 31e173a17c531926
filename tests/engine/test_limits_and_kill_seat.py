"""Posted limits on every wager (docs/rules.md "Paytables and limits") and a supervisor killing one seat's
hand (docs/rules.md "Dead hands and walk-aways"), through ``TableEngine.handle`` with a scripted shoe
(tests/engine/table.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.engine import TableConfig, TableEngine
from controller.engine import actions as a
from controller.engine.bets import BANK_SPOT
from controller.journal import entries
from controller.money import money
from controller.rules.settle import parse_round, settle
from drivers.events import BetChanged, Deal, DpBankKeyed, ShowSeatResult, ShowText
from tests.engine.table import NOW_S, Table, recovered_state, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3

# One over-limit bonus per game: (config, the bets of seat 1, the bonus over its maximum, its maximum).
GAMES: list[tuple[dict[str, Any], dict[str, int], str, int]] = [
    ({}, {"ante": 500, "flush": 2500}, "flush", 2000),
    ({"game": "top-flush"}, {"ante": 500, "top_flush_bonus": 2500}, "top_flush_bonus", 2000),
    (
        {"game": "chase-the-flush", "seats": (1, 2, 3, 4, 5, 6, 7)},
        {"ante": 500, "xtra_bonus": 500, "same_suit_bonus": 2500},
        "same_suit_bonus",
        2000,
    ),
]
FIRST_DECISION = {"high-card-flush": "decisions", "top-flush": "decisions", "chase-the-flush": "preflop"}


def betting_table(config: dict[str, Any], bonus: str, maximum: int, bets: dict[str, int]) -> Table:
    table = Table(TableConfig(max_bonus_cents={bonus: maximum}, **config), stack())
    table.start()
    for wager, amount in bets.items():
        table.bet(1, wager, amount)
    table.bet(2, "ante", 500)
    if table.config.game == "chase-the-flush":
        table.bet(2, "xtra_bonus", 500)
    return table


@pytest.mark.parametrize(("config", "bets", "bonus", "maximum"), GAMES)
def test_an_over_limit_bonus_is_refused_at_the_lock_until_corrected(
    config: dict[str, Any], bets: dict[str, int], bonus: str, maximum: int
) -> None:
    table = betting_table(config, bonus, maximum, bets)
    outs = table.lock()
    (refused,) = table.refusals(outs)
    assert refused.reason == f"seat 1 {bonus}: 25.00 is over the table's maximum {money(maximum)}"
    assert ShowText("display", f"Refused: {refused.reason}") in outs  # the dealer sees which spot
    assert table.engine.view().state == "betting"  # nothing taken into action: the round waits
    assert table.engine.view().round is None
    assert not table.of_type(Deal)
    journaled = [e.payload for e in table.journal("action_refused")]
    assert journaled[-1]["reason"] == refused.reason
    # Corrected to the maximum: the lock goes through with the corrected wager.
    table.bet(1, bonus, maximum)
    table.lock()
    assert table.engine.view().state == FIRST_DECISION[table.config.game]
    locked = table.journal("bets_locked")[-1].payload["wagers"]
    assert locked["1"][bonus] == maximum


@pytest.mark.parametrize(("config", "bets", "bonus", "maximum"), GAMES)
def test_an_over_limit_seat_excluded_by_a_supervisor_leaves_the_round_to_the_others(
    config: dict[str, Any], bets: dict[str, int], bonus: str, maximum: int
) -> None:
    table = betting_table(config, bonus, maximum, bets)
    assert table.refusals(table.lock())
    outs = table.call(table.engine.handle, a.KillSeat(1, "over the bonus limit", "sam"), table.now_s)
    assert ShowSeatResult("display", 1, "dead", 0) in outs
    action = table.journal("seat_killed")[-1]
    assert action.source == "operator:sam"
    assert action.entry == entries.SeatKilled(seat=1, by="sam", reason="over the bonus limit", excluded=True)
    table.lock()
    assert table.engine.view().state == FIRST_DECISION[table.config.game]
    assert table.payload("round_started")["seats"] == [2]
    assert table.of_type(Deal)[0].positions[0] == (2, table.engine.view().spec.hole_cards)
    table.bet(1, bonus, 0)  # the dealer gives the excluded seat's chips back: not past-posting
    assert not table.journal("past_posting")


def test_the_bonus_limit_defaults_to_the_ante_maximum() -> None:
    table = Table(TableConfig(max_ante_cents=10_000), stack())
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "straight_flush", 10_001)
    (refused,) = table.refusals(table.lock())
    assert refused.reason == "seat 1 straight_flush: 100.01 is over the table's maximum 100.00"


def test_set_limits_sets_bonus_maxima_between_rounds_only() -> None:
    table = Table(TableConfig(config_digest="d1"), stack())
    outs = table.call(table.engine.handle, a.SetBonusLimit("flush", 1000, "maria"), table.now_s)
    entry = table.journal("limits_set")[-1].payload
    assert entry["after"] == {
        "min_ante_cents": 100,
        "max_ante_cents": 100_000,
        "max_bonus_cents": {"flush": 1000, "straight_flush": 100_000},
        "own_max_bonus_cents": {"flush": 1000},
    }
    assert not table.refusals(outs)
    table.start()
    outs = table.call(table.engine.handle, a.SetBonusLimit("flush", 5, "maria"), table.now_s)
    assert table.refusals(outs)[0].reason == "betting is open (betting): only between rounds"
    table.bet(1, "ante", 500)
    table.bet(1, "flush", 1001)
    assert table.refusals(table.lock())[0].reason == "seat 1 flush: 10.01 is over the table's maximum 10.00"
    # After a restart on the same configuration file the manager's maxima stand.
    engine = TableEngine(TableConfig(config_digest="d1"), recovered_state(table.engine))
    assert engine.view().config.max_bonus_for("flush") == 1000


@pytest.mark.parametrize(
    ("wager", "cents", "reason"),
    [
        ("raise", 100, "max_bonus_cents.raise: not a bonus wager of high-card-flush"),
        ("flush", 0, "max_bonus_cents.flush: must be a whole number of cents from 1"),
        ("flush", 1.5, "max_bonus_cents.flush: must be a whole number of cents from 1"),
    ],
)
def test_set_bonus_limit_refuses_a_bad_maximum(wager: str, cents: Any, reason: str) -> None:
    engine = TableEngine(TableConfig())
    outs = engine.handle(a.SetBonusLimit(wager, cents, "maria"), NOW_S)
    assert next(r.reason for r in outs if hasattr(r, "reason")).startswith(reason)
    assert engine.view().config.max_bonus_cents == {}


# --- kill one seat -----------------------------------------------------------------------------------
def test_a_supervisor_kills_one_seat_mid_round_and_the_rest_settles() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "flush", 100)
    table.bet(3, "ante", 1000)
    table.bet(3, "straight_flush", 200)
    table.lock()
    assert table.engine.view().state == "decisions"
    outs = table.call(table.engine.handle, a.KillSeat(3, "hand exposed", "sam"), table.now_s)
    assert ShowSeatResult("display", 3, "dead", 0) in outs
    assert table.payload("dead_hand") == {
        "seat": 3,
        "reason": {"code": "operator", "message": "killed by a supervisor: hand exposed", "seat": 3},
    }
    assert table.journal("seat_killed")[-1].entry == entries.SeatKilled(
        seat=3, by="sam", reason="hand exposed"
    )
    table.bet(3, "ante", 0)  # the dealer returns its chips: not past-posting
    assert not table.journal("past_posting")
    table.bet(1, "raise", 1000)
    table.key("confirm")  # seat 3 need not act: it is dead
    entry = table.payload("round_settled")
    round_obj, settlement = entry["round"], entry["settlement"]
    assert settle(parse_round(round_obj)).to_json() == settlement
    seat3 = settlement["seats"][1]
    assert (seat3["seat"], seat3["status"]) == (3, "dead")
    assert {w: r["result"] for w, r in seat3["wagers"].items()} == {
        "ante": "returned",
        "straight_flush": "returned",
    }
    assert settlement["seats"][0]["status"] == "live"
    assert settlement["banker_net"] == -2500  # seat 1 alone wins 500 + 1000 + 10 x 100; seat 3 returned


def test_kill_seat_refusals() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))

    def kill(seat: int, reason: str = "fouled", by: str = "sam") -> str:
        outs = table.call(table.engine.handle, a.KillSeat(seat, reason, by), table.now_s)
        return table.refusals(outs)[0].reason

    assert kill(1) == "a seat is killed only before the decisions close (idle)"
    table.start()
    assert kill(1, reason=" ") == "reason: a reason is required"
    assert kill(9) == "seat 9 is not a seat of this table"
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 500)
    table.lock()
    assert kill(2) == "seat 2 is not in this round"
    table.key("fold_seat", 3)
    assert kill(3) == "seat 3 has folded"
    table.bet(1, "raise", 500)
    table.key("confirm")
    assert table.engine.view().state == "paying"
    assert kill(1) == "a seat is killed only before the decisions close (paying)"


def test_a_bank_below_the_minimum_is_refused_with_the_reason_on_the_display() -> None:
    table = Table(TableConfig(banking_mode="designated-player", min_bank_cents=20_000), stack())
    outs = table.call(table.engine.handle, a.DpAccepts(1, "dealer"), table.now_s)
    reason = "a bank of 0.01 is below the table's minimum bank 200.00"
    assert table.refusals(outs)[0].reason == reason
    assert ShowText("display", f"Refused: {reason}") in outs
    assert table.engine.view().dp_seat is None
    table.call(table.engine.handle, a.DpAccepts(20_000, "dealer"), table.now_s)
    assert table.engine.view().dp_seat == 1


# --- coverage at the lock counts the bonus wagers' top payouts ------------------------------------------
def test_a_seat_is_dead_at_the_lock_when_its_bonus_top_payout_is_not_covered() -> None:
    seat3 = ["Ac", "Kc", "Jc", "9c", "5d", "7d", "2d"]
    dp = ["As", "Ks", "Qs", "2c", "3c", "4c", "6c"]
    table = Table(TableConfig(banking_mode="designated-player"), stack(seat3, dp))
    table.call(table.engine.handle, a.DpAccepts(20_000, "dealer"), table.now_s)
    table.start()
    table.bet(2, "ante", 1000)
    table.bet(2, "flush", 100)  # top payout 200 to 1: 20,000 on top of 4,000 for ante and raise
    table.bet(3, "ante", 1000)
    table.lock()
    # Action order from seat 1: 7 .. 2 -> seat 3 (4,000) covered, seat 2 (24,000 more) dead.
    assert table.payload("dead_hand")["seat"] == 2
    assert table.of_type(Deal) == [Deal("shuffler", ((3, 7), (0, 7)))]
    table.bet(3, "raise", 1000)
    table.key("confirm")
    entry = table.payload("round_settled")
    assert settle(parse_round(entry["round"])).to_json() == entry["settlement"]
    seat2 = next(s for s in entry["settlement"]["seats"] if s["seat"] == 2)
    assert seat2["reason"] == "not covered by the designated player's funds"
    assert {w: r["result"] for w, r in seat2["wagers"].items()} == {"ante": "returned", "flush": "returned"}


# --- deal order -----------------------------------------------------------------------------------------
def test_a_designated_player_round_is_dealt_from_the_buttons_left_clockwise_the_dp_last() -> None:
    table = Table(TableConfig(banking_mode="designated-player", seats=(1, 2, 3, 4, 5, 6, 7)), stack())
    table.call(table.engine.handle, a.MoveButton(4, "sam"), table.now_s)
    table.call(table.engine.handle, a.DpAccepts(1_000_000, "dealer"), table.now_s)
    table.start()
    for seat in (1, 2, 3, 5, 6):
        table.bet(seat, "ante", 500)
    table.lock()
    (deal,) = table.of_type(Deal)
    assert [position for position, _count in deal.positions] == [5, 6, 1, 2, 3, 0]


def test_a_house_table_is_dealt_from_the_dealers_left() -> None:
    table = Table(TableConfig(), stack())
    table.call(table.engine.handle, a.MoveButton(4, "sam"), table.now_s)
    table.start()
    for seat in (1, 3, 5, 6):
        table.bet(seat, "ante", 500)
    table.lock()
    (deal,) = table.of_type(Deal)
    assert [position for position, _count in deal.positions] == [1, 3, 5, 6, 0]


# --- the offer's timeout --------------------------------------------------------------------------------
def test_an_unanswered_offer_times_out_into_a_waive_and_moves_on() -> None:
    table = Table(TableConfig(banking_mode="designated-player", dp_offer_timeout_s=20.0), stack())
    table.tick(1)  # the offer to seat 1 starts its clock
    table.tick(19)
    assert not table.journal("dp_waived")
    outs = table.tick(1)
    waived = table.journal("dp_waived")
    assert [(w.payload, w.source) for w in waived] == [({"seat": 1}, "engine")]
    assert ShowText("display", "Seat 1: no answer, the button is waived") in outs
    assert table.engine.view().dp_offer_seat == 2
    table.tick(19)
    assert len(table.journal("dp_waived")) == 1  # seat 2 has its own 20 s
    table.call(table.engine.handle, a.DpAccepts(50_000, "dealer", 2), table.now_s)
    table.tick(100)
    assert len(table.journal("dp_waived")) == 1  # accepted: nothing times out


def test_the_offer_does_not_time_out_while_the_table_is_closed() -> None:
    table = Table(TableConfig(banking_mode="designated-player", dp_offer_timeout_s=20.0), stack())
    table.call(table.engine.handle, a.CloseTable("maria", "end of shift"), table.now_s)
    table.tick(1)
    table.tick(1000)
    assert not table.journal("dp_waived")


# --- accepting and waiving at the table -----------------------------------------------------------------
def dp_table(**config: Any) -> Table:
    return Table(TableConfig(banking_mode="designated-player", min_bank_cents=10_000, **config), stack())


def test_the_offered_player_accepts_with_the_chips_on_its_bank_spot() -> None:
    table = dp_table()
    table.event(BetChanged("sensors", 1, BANK_SPOT, 30_000, 3, False))
    assert table.journal("bet_changed")[-1].payload["wager"] == "bank"
    table.key("dp_accepts")
    moved = table.payload("button_moved")
    assert (moved["to_seat"], moved["reason"]) == (1, "accepted, funds 300.00")
    table.start()
    table.bet(2, "ante", 500)
    table.lock()
    assert table.payload("round_started")["banking"]["funds"] == 30_000


def test_accept_by_key_with_an_empty_bank_spot_is_refused_on_the_display() -> None:
    table = dp_table()
    outs = table.key("dp_accepts")
    reason = "seat 1 has no chips on its bank spot: place the bank there or key the amount"
    assert table.refusals(outs)[0].reason == reason
    assert ShowText("display", f"Refused: {reason}") in outs
    table.event(BetChanged("sensors", 1, BANK_SPOT, 5_000, 1, False))
    outs = table.key("dp_accepts")  # below the table's minimum bank
    assert table.refusals(outs)[0].reason == "a bank of 50.00 is below the table's minimum bank 100.00"
    assert not table.journal("button_moved")


def test_a_keyed_bank_is_accepted_and_a_keyed_zero_or_another_seat_refused() -> None:
    table = dp_table()
    outs = table.event(DpBankKeyed("display", 1, 0))
    assert table.refusals(outs)[0].reason == "a keyed bank of 0: key the amount the player posts"
    outs = table.event(DpBankKeyed("display", 3, 50_000))
    assert table.refusals(outs)[0].reason == "the button is offered to seat 1, not seat 3"
    table.key("dp_waives")
    assert table.payload("dp_waived") == {"seat": 1}
    table.event(DpBankKeyed("display", 2, 50_000))
    moved = table.payload("button_moved")
    assert (moved["to_seat"], moved["reason"]) == (2, "accepted, funds 500.00")
    keys = [(e.payload["key"], e.payload["seat"]) for e in table.journal("dealer_key")]
    assert keys == [("dp_accepts", 1), ("dp_accepts", 3), ("dp_waives", None), ("dp_accepts", 2)]


def test_an_empty_seat_is_never_offered_the_button() -> None:
    """A seat that took no part in the last hand (and has no chips on its bank spot) is empty."""
    seat3 = ["Ac", "Kc", "Jc", "9c", "5d", "7d", "2d"]
    seat5 = ["Ad", "Kd", "9d", "3h", "5h", "7h", "9h"]
    dp = ["As", "Ks", "Qs", "2c", "3c", "4c", "6c"]
    table = Table(TableConfig(banking_mode="designated-player"), stack(seat3, seat5, dp))
    table.call(table.engine.handle, a.DpAccepts(100_000, "dealer"), table.now_s)
    table.start()
    table.bet(3, "ante", 500)
    table.bet(5, "ante", 500)
    table.lock()
    table.bet(3, "raise", 500)
    table.bet(5, "raise", 500)
    table.key("confirm")
    table.key("next")
    # Seats 2, 4 and 6 played no part: the button goes from seat 1 to seat 3.
    assert table.engine.view().dp_offer_seat == 3
    table.key("dp_waives")
    assert table.engine.view().dp_offer_seat == 5
    table.event(BetChanged("sensors", 6, BANK_SPOT, 50_000, 5, False))  # chips on seat 6's bank spot
    table.key("dp_waives")
    assert table.engine.view().dp_offer_seat == 6
