"""Scripted full rounds of each game through the engine, with a stacked deck: the commands it sends,
the journal entries it writes, and a settlement equal to settle() of the round it journaled."""

from __future__ import annotations

from typing import Any

from controller.engine import Refused, TableConfig
from controller.engine import actions as engine_actions
from controller.engine.state import DESIGNATED_PLAYER
from controller.journal import entries
from controller.rules.cards import cards_text
from controller.rules.settle import settle_round_json
from drivers.events import (
    Deal,
    LockBets,
    SetSpotLamp,
    ShowButton,
    ShowSeatResult,
    Shuffle,
    UnlockBets,
)
from tests.engine.table import Table, stack

# High Card Flush: seat 1 a 5-card spade flush, seat 3 nothing, the dealer a 4-card club flush.
HCF_SEAT1 = ["As", "Ks", "Qs", "Js", "9s", "2c", "3d"]
HCF_SEAT3 = ["2h", "5h", "7c", "8d", "Tc", "4s", "6d"]
HCF_DEALER = ["Ah", "Kh", "Qh", "3c", "4c", "5c", "6c"]


def assert_settled_consistently(table: Table) -> dict[str, Any]:
    """The round journaled settles, through the settle engine, to exactly the settlement journaled."""
    entry = table.payload("round_settled")
    assert settle_round_json(entry["round"]) == entry["settlement"]
    return entry


def hcf_round(table: Table) -> None:
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "flush", 100)
    table.bet(3, "ante", 1000)
    table.lock()
    table.bet(1, "raise", 1000)  # 2x the ante: allowed with a 5-card flush
    table.key("fold_seat", 3)
    table.key("confirm")


def test_high_card_flush_house_round() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    hcf_round(table)
    commands = [o for o in table.outputs if not hasattr(o, "kind") and not isinstance(o, Refused)]
    assert UnlockBets("sensors") in commands
    assert Shuffle("shuffler") in commands
    assert LockBets("sensors") in commands
    assert table.of_type(Deal) == [Deal("shuffler", ((1, 7), (3, 7), (0, 7)))]
    assert table.engine.view().state == "paying"
    entry = assert_settled_consistently(table)
    assert entry["round"] == {
        "game": "high-card-flush",
        "banking": {"mode": "house"},
        "dealer": HCF_DEALER,
        "seats": [
            {
                "seat": 1,
                "cards": HCF_SEAT1,
                "wagers": {"ante": 500, "flush": 100, "raise": 1000},
                "folded": False,
            },
            {"seat": 3, "cards": HCF_SEAT3, "wagers": {"ante": 1000}, "folded": True},
        ],
    }
    settlement = entry["settlement"]
    assert isinstance(settlement, dict)
    assert settlement["banker_net"] == -1500  # seat 1 wins 500 + 1000 + 10 x 100, seat 3 loses 1000
    assert ShowSeatResult("display", 1, "win", 2500) in table.outputs
    assert ShowSeatResult("display", 3, "folded", -1000) in table.outputs
    assert SetSpotLamp("sensors", 1, 2, "win") in table.outputs
    decisions = [e.payload for e in table.journal("decision")]
    assert [(d["seat"], d["action"], d["amount_cents"], d["cause"]) for d in decisions] == [
        (3, "fold", 0, "dealer_key"),
        (1, "raise", 1000, "sensor"),
    ]
    kinds = table.kinds()
    order = ["round_started", "bets_locked", "card_dealt", "hand_complete", "decision", "round_settled"]
    assert [kinds.index(kind) for kind in order] == sorted(kinds.index(kind) for kind in order)
    round_ids = {e.round_id for e in table.journal() if e.kind not in ("bet_changed", "deck_verified")}
    assert round_ids - {None} == {"RT1-20270115-000001"}
    # The dealer pays, presses next: the round is complete and the table idle for the next one.
    table.key("next")
    assert table.engine.view().state == "idle"
    states = [(e.payload["from"], e.payload["to"]) for e in table.journal("state_changed")]
    assert states == [
        ("idle", "betting"),
        ("betting", "bets_locked"),
        ("bets_locked", "dealing"),
        ("dealing", "decisions"),
        ("decisions", "reveal"),
        ("reveal", "settling"),
        ("settling", "paying"),
        ("paying", "complete"),
        ("complete", "idle"),
    ]


def test_high_card_flush_designated_player_round_with_coverage_and_rake() -> None:
    config = TableConfig(
        banking_mode=DESIGNATED_PLAYER, rake={"method": "ii", "amount": 50}, bonus_cap_cents=4000
    )
    # Deal order: seats 3 and 5 (seat 2 is not covered), then the DP's seat 1 as the banker's position 0.
    seat3 = ["Ac", "Kc", "Jc", "9c", "5d", "7d", "2d"]
    seat5 = ["Ad", "Kd", "9d", "3h", "5h", "7h", "9h"]
    dp = ["As", "Ks", "Qs", "2c", "3c", "4c", "6c"]
    table = Table(config, stack(seat3, seat5, dp))
    refused = table.start()
    assert table.refusals(refused)[0].reason == "the button is offered to seat 1: accept or waive first"
    table.call(table.engine.handle, engine_actions.DpAccepts(20_000, "dealer"), table.now_s)
    assert ShowButton("display", 1) in table.outputs
    assert table.payload("button_moved")["to_seat"] == 1
    table.start()
    table.bet(2, "ante", 2000)
    table.bet(3, "ante", 3000)
    table.bet(3, "straight_flush", 500)
    table.bet(5, "ante", 1000)
    table.lock()
    # Action order from the DP in seat 1: 7, 6, 5, 4, 3, 2 -> seats 5 (needs 4,000), 3 (12,000 and its
    # straight-flush bonus's top payout 500 x 1,000, bounded by the 4,000 cap: 16,000), then seat 2
    # (8,000) is beyond the 20,000 posted: dead, its wager returned, and it is not dealt.
    assert table.payload("dead_hand") == {
        "seat": 2,
        "reason": {
            "code": "not_covered",
            "message": "not covered by the designated player's funds",
            "seat": 2,
        },
    }
    assert ShowSeatResult("display", 2, "dead", 0) in table.outputs
    assert table.payload("round_started")["banking"] == {
        "mode": "designated-player",
        "seat": 1,
        "funds": 20_000,
        "bonus_cap": 4000,
    }
    assert table.of_type(Deal) == [Deal("shuffler", ((3, 7), (5, 7), (0, 7)))]
    table.bet(3, "raise", 3000)  # 4-card flush: exactly 1x
    table.bet(5, "raise", 1000)
    table.key("confirm")
    entry = assert_settled_consistently(table)
    settlement = entry["settlement"]
    assert isinstance(settlement, dict)
    seats = {s["seat"]: s for s in settlement["seats"]}
    assert seats[2]["status"] == "dead"
    assert seats[2]["reason"] == "not covered by the designated player's funds"
    assert seats[2]["hand"] is None
    assert entry["round"]["seats"][0] == {"seat": 2, "cards": [], "wagers": {"ante": 2000}, "folded": False}
    assert settlement["rake"] == 100  # method ii: the two seats in action, not the DP, not the dead seat
    # The button moves on: the next round's offer goes to the seat after the DP.
    table.key("next")
    bank = table.engine._bank
    assert (bank.dp_seat, bank.dp_funds_cents, bank.dp_offer_seat, bank.dp_waived, bank.house_banks) == (
        None,
        0,
        2,
        set(),
        False,
    )


def test_top_flush_round() -> None:
    seat1 = ["As", "Ks", "Qs", "Js", "9s", "7s", "3d"]  # 6-card flush: play up to 4x
    seat2 = ["Ah", "Kh", "2c", "4d", "5c", "7d", "9c"]
    dealer = ["Ad", "Kd", "Qd", "2h", "4h", "6s", "8c"]
    table = Table(TableConfig(game="top-flush"), stack(seat1, seat2, dealer))
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "top_flush_bonus", 500)
    table.bet(1, "straight_flush_jackpot", 100)
    table.bet(2, "ante", 500)
    table.lock()
    table.bet(1, "play", 2000)
    table.bet(2, "play", 500)
    table.key("confirm")
    entry = assert_settled_consistently(table)
    round_obj = entry["round"]
    assert isinstance(round_obj, dict)
    assert round_obj["seats"][0]["wagers"]["play"] == 2000
    settlement = entry["settlement"]
    assert isinstance(settlement, dict)
    seat1 = settlement["seats"][0]
    assert seat1["wagers"]["top_flush_bonus"] == {"stake": 500, "result": "win", "net": 50_000, "odds": 100}


def chase_table() -> Table:
    # Deal order: seats 1..4 three hole cards each, the dealer's three, the flop (2), the turn and river (2).
    holes = [["As", "Ks", "2d"], ["Ah", "3h", "4c"], ["7c", "8d", "9h"], ["Ad", "Kd", "Qd"]]
    dealer = ["2c", "3c", "Tc"]
    flop = ["Qs", "Jd"]
    turn_river = ["5s", "6h"]
    return Table(
        TableConfig(game="chase-the-flush", seats=(1, 2, 3, 4, 5, 6, 7)),
        stack(*holes, dealer, flop, turn_river),
    )


def test_chase_the_flush_round_over_three_streets() -> None:
    table = chase_table()
    table.start()
    for seat in (1, 2, 3, 4):
        table.bet(seat, "ante", 500)
        table.bet(seat, "xtra_bonus", 500)
    table.bet(1, "same_suit_bonus", 100)
    table.lock()
    assert table.of_type(Deal) == [Deal("shuffler", ((1, 3), (2, 3), (3, 3), (4, 3), (0, 3)))]
    assert table.engine.view().state == "preflop"
    live = table.engine.view().round
    assert live is not None
    assert live.community == []
    table.bet(1, "all_in", 1500)  # preflop: 3x
    table.key("confirm")  # seats 2, 3, 4 check
    assert table.of_type(Deal)[-1] == Deal("shuffler", ((15, 2),))
    assert table.engine.view().state == "flop"
    assert cards_text(live.community) == ["Qs", "Jd"]
    table.bet(4, "all_in", 1000)  # flop: 2x
    table.key("confirm")
    assert table.engine.view().state == "river"
    refused = table.key("confirm")  # seats 2 and 3 must act on the river: all in or fold
    assert "seat(s) 2, 3 have not acted" in table.refusals(refused)[0].reason
    table.bet(2, "all_in", 500)
    table.key("fold_seat", 3)
    table.key("confirm")
    entry = assert_settled_consistently(table)
    actions = [
        (e.payload["seat"], e.payload["action"], e.payload["street"]) for e in table.journal("decision")
    ]
    assert actions == [
        (1, "all_in", "preflop"),
        (2, "check", "preflop"),
        (3, "check", "preflop"),
        (4, "check", "preflop"),
        (2, "check", "flop"),
        (3, "check", "flop"),
        (4, "all_in", "flop"),
        (3, "fold", "river"),
        (2, "all_in", "river"),
    ]
    round_obj = entry["round"]
    assert isinstance(round_obj, dict)
    assert round_obj["community"] == ["Qs", "Jd", "5s", "6h"]
    assert [s.get("street") for s in round_obj["seats"]] == ["preflop", "river", None, "flop"]


def test_chase_fold_before_the_river_is_refused() -> None:
    table = chase_table()
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "xtra_bonus", 500)
    table.lock()
    refused = table.key("fold_seat", 1)
    assert table.refusals(refused)[0].reason == "seat 1: before the river a player checks or goes all in"


def test_one_queue_operator_actions_as_data_play_the_same_round() -> None:
    from controller.engine import actions as a

    by_method = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    hcf_round(by_method)
    by_data = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    by_data.event(a.StartRound())
    by_data.bet(1, "ante", 500)
    by_data.bet(1, "flush", 100)
    by_data.bet(3, "ante", 1000)
    by_data.event(a.NoMoreBets())
    by_data.bet(1, "raise", 1000)
    by_data.event(a.FoldSeat(3))
    by_data.event(a.ConfirmDecisions())
    assert by_data.payload("round_settled") == by_method.payload("round_settled")
    by_data.event(a.PayoutsDone())
    assert by_data.engine.view().state == "idle"
    by_data.event(a.Tick())
    assert (
        by_data.refusals(by_data.event(a.ClearFault("F1", "sue", "x")))[0].reason == "no latched fault 'F1'"
    )


def test_hole_cards_are_private_until_the_reveal() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 1000)
    table.lock()
    # What may be shown is the journal's public parts: no card before the reveal; the round holds them.
    assert not table.public_journal_cards() & {*HCF_SEAT1, *HCF_SEAT3, *HCF_DEALER}
    live = table.engine.view().round
    assert live is not None
    assert cards_text(live.seats[1].cards) == HCF_SEAT1
    assert cards_text(live.dealer_cards) == HCF_DEALER
    table.bet(1, "raise", 1000)
    table.bet(3, "raise", 1000)
    table.key("confirm")
    assert table.engine.view().state == "paying"
    # The reveal: the cards are shown from the settlement's part that is private until it is committed.
    (settled,) = table.journal("round_settled")
    private = entries.private_dict(settled.entry)
    assert private is not None
    assert private["round"]["dealer"] == HCF_DEALER
    assert private["round"]["seats"][0]["cards"] == HCF_SEAT1
