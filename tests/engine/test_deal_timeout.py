"""A shoe that stops reporting mid-deal: after ``deal_timeout_s`` of silence the deal is incomplete, a
misdeal — the banker (dealt last) is short of cards, so the whole round is dead
(docs/rules.md "Dead hands and walk-aways"), every wager returned, and the table held for a supervisor."""

from __future__ import annotations

from typing import Any

import pytest

from controller.engine import TableConfig
from controller.rules.settle import settle_round_json
from drivers.events import Deal, DealStateReported, DeviceLost, HandComplete, ShowSeatResult
from tests.engine.table import Table, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3, chase_table


def locked_table(**config: Any) -> tuple[Table, list[object]]:
    table = Table(TableConfig(**config), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER), auto_deal=False)
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 1000)
    table.bet(3, "flush", 200)
    table.lock()
    (deal,) = table.of_type(Deal)
    return table, table.shoe_events(deal)


def test_the_shoe_going_silent_mid_deal_kills_the_round_and_holds_the_table() -> None:
    table, events = locked_table(deal_timeout_s=20.0)
    for event in events[:10]:  # seat 1's seven cards and hand complete, then two of seat 3's
        table.event(event)
    assert table.engine.view().state == "dealing"
    table.tick(19.0)
    assert table.engine.view().state == "dealing"
    assert not table.journal("round_dead")
    table.tick(1.0)  # 20 s since the shoe's last report
    assert table.payload("dead_hand") == {
        "seat": None,
        "reason": {
            "code": "card_count",
            "message": "the shoe stopped reporting mid-deal: nothing for 20 s, seat 3, the banker not "
            "complete (a misdeal)",
        },
    }
    fault = table.payload("fault_raised")
    assert (fault["kind"], fault["severity"]) == ("dead_hand", "latching")
    dead = table.payload("round_dead")
    assert settle_round_json(dead["round"]) == dead["settlement"]
    assert dead["round"]["dealer"] == []
    assert all(s["cards"] == [] for s in dead["round"]["seats"])
    stakes = {
        s["seat"]: {n: (w["stake"], w["result"]) for n, w in s["wagers"].items()}
        for s in dead["settlement"]["seats"]
    }
    assert stakes == {
        1: {"ante": (500, "returned")},
        3: {"ante": (1000, "returned"), "flush": (200, "returned")},
    }
    assert table.engine.view().state == "held"
    assert table.engine.view().held
    assert ShowSeatResult("display", 1, "dead", 0) in table.outputs
    assert table.refusals(table.start())
    # The shoe wakes up and finishes: journaled, never judged (the round is closed).
    for event in events[10:]:
        table.event(event)
    assert len(table.journal("round_dead")) == 1
    assert [f.payload["kind"] for f in table.journal("fault_raised")] == ["dead_hand"]


def test_every_report_from_the_shoe_restarts_the_deal_clock() -> None:
    table, events = locked_table(deal_timeout_s=5.0)
    for event in events:  # a slow shoe: 4 s between reports, never 5 s of silence
        table.tick(4.0)
        table.event(event)
    assert table.engine.view().state == "decisions"
    table.tick(60.0)  # the decision timeout, not the deal's: the seats walk away
    assert not table.journal("round_dead")
    assert table.journal("round_settled")


def test_held_mid_deal_and_the_shoe_goes_silent_the_round_dies() -> None:
    table, events = locked_table()
    for event in events[:5]:
        table.event(event)
    table.bet(1, "ante", 5000, locked=True)  # past-posting: held mid-deal
    assert table.engine.view().state == "held"
    table.tick(31.0)
    assert table.journal("round_dead")
    assert table.engine.view().state == "held"
    kinds = sorted(str(f.payload["kind"]) for f in table.journal("fault_raised"))
    assert kinds == ["dead_hand", "past_posting"]


def test_chase_the_flush_community_deal_timing_out_kills_the_round() -> None:
    table = chase_table()
    table.start()
    for seat in (1, 2):
        table.bet(seat, "ante", 500)
        table.bet(seat, "xtra_bonus", 500)
    table.lock()
    table.bet(1, "all_in", 1500)
    table.auto_deal = False
    table.key("confirm")  # the flop is asked for; the shoe never answers
    assert table.engine.view().state == "dealing_flop"
    table.tick(30.0)
    dead = table.payload("round_dead")
    assert dead["reason"]["code"] == "card_count"
    assert "the community not complete" in dead["reason"]["message"]
    seat1 = next(s for s in dead["settlement"]["seats"] if s["seat"] == 1)
    assert seat1["wagers"]["all_in"] == {"stake": 1500, "result": "returned", "net": 0}
    assert table.engine.view().state == "held"


def test_only_a_seat_left_incomplete_makes_that_seat_dead_and_the_round_goes_on() -> None:
    table, events = locked_table()
    # The shoe deals everything but never reports seat 3's hand complete (the banker's is reported).
    missing = next(i for i, e in enumerate(events) if isinstance(e, HandComplete) and e.position == 3)
    for event in events[:missing] + events[missing + 1 :]:
        table.event(event)
    assert table.engine.view().state == "dealing"
    table.tick(30.0)
    assert table.payload("dead_hand") == {
        "seat": 3,
        "reason": {
            "code": "card_count",
            "message": "wrong card count: the shoe stopped reporting mid-deal: nothing for 30 s, its hand "
            "not complete",
            "seat": 3,
        },
    }
    assert not table.journal("round_dead")
    assert table.engine.view().state == "decisions"
    assert not table.engine.view().held
    table.bet(1, "raise", 500)
    table.key("confirm")
    settled = table.payload("round_settled")
    seat3 = next(s for s in settled["settlement"]["seats"] if s["seat"] == 3)
    assert seat3["status"] == "dead"
    assert {w["result"] for w in seat3["wagers"].values()} == {"returned"}


def test_deal_timeout_must_be_positive() -> None:
    from controller.errors import UserError

    with pytest.raises(UserError, match="deal_timeout_s: must be positive"):
        TableConfig(deal_timeout_s=0)


# --- the shoe's answer after a reconnect (drivers ask every v2 device: DealStateReported) ---------------
def test_a_shoe_back_without_the_deal_kills_the_round_at_once_not_at_the_deal_timeout() -> None:
    table, events = locked_table(deal_timeout_s=30.0)
    for event in events[:10]:
        table.event(event)
    table.event(DeviceLost("shuffler", "port_closed"))
    table.tick(0.5)
    table.event(DealStateReported("shuffler", "none", (), 0))  # it lost power: no deal, no cards
    dead = table.payload("round_dead")  # now, 0.5 s after the loss, not 30 s later
    assert dead["reason"]["code"] == "card_count"
    assert dead["reason"]["message"] == (
        "the shoe came back without this deal (it reports none, 0 cards reported), seat 3, the banker "
        "not complete (a misdeal)"
    )
    assert table.engine.view().state == "held"


def test_a_shoe_back_still_dealing_this_deal_goes_on_and_completes() -> None:
    table, events = locked_table(deal_timeout_s=30.0)
    (deal,) = table.of_type(Deal)
    for event in events[:10]:
        table.event(event)
    table.event(DealStateReported("shuffler", "dealing", deal.positions, 9))
    assert not table.journal("round_dead")
    for event in events[10:]:
        table.event(event)
    assert table.engine.view().state == "decisions"  # the deal completed


def test_a_shoe_reporting_another_deal_or_a_stopped_one_ends_this_one() -> None:
    for report in (
        DealStateReported("shuffler", "dealing", ((1, 7), (0, 7)), 3),
        DealStateReported("shuffler", "stopped", ((1, 7), (3, 7), (0, 7)), 9),
    ):
        table, events = locked_table(deal_timeout_s=30.0)
        for event in events[:10]:
            table.event(event)
        table.event(report)
        assert table.journal("round_dead"), report


def test_a_deal_state_report_outside_a_deal_changes_nothing() -> None:
    table, events = locked_table()
    for event in events:
        table.event(event)
    assert table.engine.view().state == "decisions"
    table.event(DealStateReported("shuffler", "complete", ((1, 7), (3, 7), (0, 7)), 21))
    table.event(DealStateReported("shuffler", "none", (), 0))  # the deal is over: nothing to resume
    assert table.engine.view().state == "decisions"
    assert not table.journal("round_dead")
