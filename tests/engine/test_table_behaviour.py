"""Dead hands, past-posting, over-limit raises, walk-aways, the button, holds and clears, voids and the
state recovered from the journal: each from an event script, checked by the journal entries it leaves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from controller.engine import Alert, JournalRecord, RecoveredState, TableConfig
from controller.engine import actions as engine_actions
from controller.engine.state import DESIGNATED_PLAYER, LatchedFault
from controller.journal import entries
from controller.journal.state import TableState
from controller.journal.state_parts import AlertState
from controller.rules.cards import cards_text, parse_card
from controller.rules.settle import settle_round_json
from drivers.events import (
    COMMUNITY_POSITION,
    CardDealt,
    DeckVerified,
    DeviceLost,
    HandComplete,
    SecurityEvent,
    ShowSeatResult,
    ShowText,
    Shuffle,
    ShufflerFault,
)
from tests.engine.table import NOW_S as NOW
from tests.engine.table import Table, assert_names_no_card, recovered_state, stack, the_round
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3, chase_table

SEAT1_CARDS = [parse_card(c) for c in HCF_SEAT1]


def hcf_table(**config: Any) -> Table:
    return Table(TableConfig(**config), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))


def bet_and_lock(table: Table) -> None:
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 1000)
    table.bet(3, "flush", 200)
    table.lock()


def closing(table: Table, kind: str) -> dict[str, Any]:
    """The round's closing entry, checked against the settle engine: settle(round) == settlement."""
    entry = table.payload(kind)
    assert settle_round_json(entry["round"]) == entry["settlement"]
    return entry


def assert_public_texts_name_no_card(table: Table) -> None:
    """Every public reason journaled and every alert names no card (what the deal knew of the cards is
    in the entries' private parts only)."""
    for record in table.journal():
        reason = getattr(record.entry, "reason", None)
        if isinstance(reason, entries.Reason):
            assert_names_no_card(reason.message)
    for alert in table.alerts():
        assert_names_no_card(alert.message)


def assert_every_wager_returned(entry: dict[str, Any]) -> None:
    settlement = entry["settlement"]
    assert isinstance(settlement, dict)
    assert settlement["dead"] is True
    assert settlement["banker_net"] == 0
    for seat in settlement["seats"]:
        assert seat["status"] == "dead"
        assert seat["hand"] is None
        assert {w["result"] for w in seat["wagers"].values()} == {"returned"}


# --- dead hands -----------------------------------------------------------------------------------
def test_seat_dealt_the_wrong_count_by_the_shoes_count_is_dead_and_the_round_goes_on() -> None:
    table = hcf_table()
    table.hand_complete_count[3] = 6  # the shoe counts 6 at seat 3 (it read 7)
    bet_and_lock(table)
    assert table.payload("dead_hand") == {
        "seat": 3,
        "reason": {
            "code": "card_count",
            "message": "wrong card count: the shoe counted 6 cards, 7 due",
            "seat": 3,
        },
    }
    assert ShowSeatResult("display", 3, "dead", 0) in table.outputs
    assert table.engine.view().state == "decisions"
    table.bet(1, "raise", 500)
    table.key("confirm")  # seat 3 is dead: it has nothing to decide
    entry = closing(table, "round_settled")
    seats = {s["seat"]: s for s in entry["settlement"]["seats"]}
    assert seats[3]["status"] == "dead"
    assert seats[3]["wagers"] == {
        "ante": {"stake": 1000, "result": "returned", "net": 0},
        "flush": {"stake": 200, "result": "returned", "net": 0},
    }
    assert entry["round"]["seats"][1]["cards"] == []  # never shown
    assert not table.engine.view().held  # a dead seat does not hold the table


def test_seat_with_a_card_missing_from_the_reads_is_dead() -> None:
    table = hcf_table()
    table.tamper = lambda position, index, card: [] if (position, index) == (3, 6) else None
    bet_and_lock(table)
    assert table.payload("dead_hand") == {
        "seat": 3,
        "reason": {"code": "card_count", "message": "wrong card count: 6 cards read, 7 due", "seat": 3},
    }


def test_seat_with_an_extra_card_is_dead() -> None:
    table = hcf_table()

    def extra(position: int, index: int, card: int) -> list[object] | None:
        if (position, index) == (1, 6):
            return [CardDealt("shuffler", 1, 6, card), CardDealt("shuffler", 1, 7, parse_card("2s"))]
        return None

    table.tamper = extra
    bet_and_lock(table)
    assert table.payload("dead_hand")["seat"] == 1


@pytest.mark.parametrize(
    ("tamper_at", "reason", "private"),
    [
        (
            (0, 6),
            {"code": "card_count", "message": "wrong card count for the banker: 6 cards read, 7 due"},
            {},
        ),
        # The card seen twice (seat 1's As, again at seat 3's third card) is private: never in a public
        # text, kept for the audit in the private part, with where it was first dealt (the deal part's
        # ledger: docs/engine.md "Who checks the deal").
        (
            (3, 2),
            {"code": "card_repeated", "message": "a card seen twice or misread during the deal"},
            {
                "card": parse_card("As"),
                "position": 3,
                "index": 2,
                "first_position": 1,
                "first_index": 0,
                "device_detail": f"card {parse_card('As')} dealt twice (first at position 1 index 0)",
                "message": f"misread at position 3: card {parse_card('As')} dealt twice (first at position 1 "
                "index 0)",
            },
        ),
    ],
)
def test_banker_miscount_or_a_card_seen_twice_kills_the_round(
    tamper_at: tuple[int, int], reason: dict[str, Any], private: dict[str, Any]
) -> None:
    table = hcf_table()

    def tamper(position: int, index: int, card: int) -> list[object] | None:
        if (position, index) != tamper_at:
            return None
        if position == 0:
            return []  # the banker's 7th card never read
        return [CardDealt("shuffler", position, index, SEAT1_CARDS[0])]  # seat 1's As again

    table.tamper = tamper
    bet_and_lock(table)
    assert table.payload("dead_hand") == {"seat": None, "reason": reason, **private}
    entry = closing(table, "round_dead")
    assert entry["reason"] == reason
    assert {key: entry[key] for key in private} == private
    assert entry["round"]["dead"] is True
    assert_every_wager_returned(entry)
    fault = table.payload("fault_raised")
    assert fault["kind"] == "dead_hand"
    assert fault["severity"] == "latching"
    assert fault["reason"] == {**reason, "message": f"round dead: {reason['message']}"}
    assert {key: fault[key] for key in private} == private
    for kind in ("dead_hand", "round_dead", "fault_raised"):
        (record,) = table.journal(kind)
        expected = entries.ReasonDetail(**private) if private else None
        assert record.entry.private_part() == expected  # the card is in the private part only
    assert_public_texts_name_no_card(table)
    assert table.engine.view().state == "held"
    assert table.engine.view().held
    # Cards of a dead round are never shown: no journal entry's public part names one.
    live = table.engine.view().round
    assert live is not None
    hole = {
        *cards_text(live.dealer_cards),
        *(text for play in live.seats.values() for text in cards_text(play.cards)),
    }
    assert hole
    assert not table.public_journal_cards() & hole


def test_wrong_community_count_kills_a_chase_round() -> None:
    table = chase_table()
    table.hand_complete_count[COMMUNITY_POSITION] = 3
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "xtra_bonus", 500)
    table.lock()
    table.key("confirm")  # preflop: check; the flop is dealt
    assert table.payload("dead_hand")["reason"] == {
        "code": "card_count",
        "message": "wrong card count for the community: the shoe counted 3 cards, 2 due",
    }
    assert_every_wager_returned(closing(table, "round_dead"))
    assert table.engine.view().round is not None
    assert the_round(table.engine).closed_dead


def red_light_at(at_position: int, at_index: int) -> Callable[[int, int, int], list[object] | None]:
    """A shoe whose red light comes on instead of the card at (position, index): it deals no more."""
    stopped: list[bool] = []

    def tamper(position: int, index: int, card: int) -> list[object] | None:
        if stopped:
            return []
        if (position, index) != (at_position, at_index):
            return None
        stopped.append(True)
        return [ShufflerFault("shuffler", "red_light", position, "lamp")]

    return tamper


def test_red_light_during_the_deal_kills_the_round_and_holds_the_table_until_cleared() -> None:
    table = hcf_table()
    table.tamper = red_light_at(3, 0)
    bet_and_lock(table)
    entry = closing(table, "round_dead")
    assert entry["reason"] == {"code": "red_light", "message": "shuffler red light during the deal"}
    # The shoe's own words and where it stopped are private (for the audit).
    (dead,) = table.journal("round_dead")
    assert dead.entry.private_part() == entries.ReasonDetail(
        message="red_light at position 3: lamp", position=3, device_detail="lamp"
    )
    assert_every_wager_returned(entry)
    fault = table.payload("fault_raised")
    assert (fault["kind"], fault["severity"]) == ("red_light", "latching")
    assert fault["reason"] == {
        "code": "red_light",
        "message": "round dead: shuffler red light during the deal",
    }
    assert (fault["device_detail"], fault["position"]) == ("lamp", 3)
    assert_public_texts_name_no_card(table)
    assert table.engine.view().state == "held"
    # A held table starts no round.
    refused = table.start()
    assert "the table is held" in table.refusals(refused)[0].reason
    # Clearing needs the fault's id; then the table is idle and plays again.
    fault_id = str(fault["fault_id"])
    assert table.refusals(
        table.call(table.engine.handle, engine_actions.ClearFault("nope", "sup", "checked"), table.now_s)
    )
    table.call(table.engine.handle, engine_actions.ClearFault(fault_id, "sue", "shoe cleaned"), table.now_s)
    assert table.payload("fault_cleared") == {"fault_id": fault_id, "by": "sue", "reason": "shoe cleaned"}
    assert table.engine.view().state == "idle"
    assert not table.engine.view().held
    table.start()
    assert table.engine.view().state == "betting"


def test_fault_after_the_deal_is_an_alert_and_the_round_settles() -> None:
    table = hcf_table()
    bet_and_lock(table)
    table.event(ShufflerFault("shuffler", "red_light", None, "lamp"))
    fault = table.payload("fault_raised")
    assert (fault["kind"], fault["severity"]) == ("shuffler_fault", "alert")
    assert table.engine.view().state == "decisions"
    table.bet(1, "raise", 500)
    table.key("fold_seat", 3)
    table.key("confirm")
    closing(table, "round_settled")
    assert not table.engine.view().held


def test_card_count_fault_with_a_position_kills_that_seat() -> None:
    table = hcf_table()
    table.tamper = lambda position, index, card: (
        [CardDealt("shuffler", 3, 0, card), ShufflerFault("shuffler", "card_count", 3)]
        if (position, index) == (3, 0)
        else None
    )
    bet_and_lock(table)
    assert table.journal("dead_hand")[0].payload["seat"] == 3


# --- past-posting ---------------------------------------------------------------------------------
def test_past_posting_after_the_lock_holds_the_round_for_a_supervisor() -> None:
    table = hcf_table()
    bet_and_lock(table)
    table.bet(3, "flush", 1000, locked=True)  # chips added to a locked bonus after the cards are out
    assert table.payload("past_posting") == {
        "seat": 3,
        "wager": "flush",
        "locked_cents": 200,
        "seen_cents": 1000,
    }
    fault = table.payload("fault_raised")
    assert (fault["kind"], fault["severity"]) == ("past_posting", "latching")
    assert any(isinstance(o, Alert) and o.kind == "past_posting" for o in table.outputs)
    assert table.engine.view().state == "held"
    # Decisions are not taken while held.
    assert table.refusals(table.key("confirm"))
    # The supervisor has the chips put back, clears, and the round resumes where it stood.
    table.bet(3, "flush", 200, locked=True)
    table.call(
        table.engine.handle,
        engine_actions.ClearFault(str(fault["fault_id"]), "sue", "chips restored"),
        table.now_s,
    )
    assert table.engine.view().state == "decisions"
    table.bet(1, "raise", 500)
    table.key("fold_seat", 3)
    table.key("confirm")
    entry = closing(table, "round_settled")
    assert entry["round"]["seats"][1]["wagers"] == {"ante": 1000, "flush": 200}


def test_chips_on_a_seat_not_in_the_round_after_the_lock_are_past_posting() -> None:
    table = hcf_table()
    bet_and_lock(table)
    table.bet(5, "ante", 500, locked=True)
    assert table.payload("past_posting") == {"seat": 5, "wager": "ante", "locked_cents": 0, "seen_cents": 500}


def test_payout_chip_moves_after_the_reveal_are_not_past_posting() -> None:
    table = hcf_table()
    bet_and_lock(table)
    table.bet(1, "raise", 500)
    table.key("fold_seat", 3)
    table.bet(3, "ante", 0, locked=True)  # the dealer takes the folded ante: allowed
    table.key("confirm")
    table.bet(1, "ante", 1000, locked=True)  # paid
    assert table.journal("past_posting") == []


# --- decisions ------------------------------------------------------------------------------------
def test_over_limit_raise_is_refused_and_must_be_corrected_before_the_reveal() -> None:
    table = hcf_table()
    bet_and_lock(table)
    table.bet(3, "raise", 2000)  # seat 3 holds a 2-card flush: at most 1x (1000)
    refused = table.payload("decision_refused")
    # The public reason names the seat and the amount; the limit speaks of the hand: private.
    assert refused == {
        "seat": 3,
        "action": "raise",
        "amount_cents": 2000,
        "reason": {
            "code": "over_limit",
            "message": "seat 3: raise of 20.00 refused (over the limit)",
            "seat": 3,
        },
        "limit_detail": "over the limit: exactly 10.00 with a 2-card flush",
    }
    (record,) = table.journal("decision_refused")
    assert record.entry.private_part() == entries.DecisionRefusedPrivate(
        limit_detail="over the limit: exactly 10.00 with a 2-card flush"
    )
    assert "flush" not in entries.public_dict(record.entry)["reason"]["message"]
    fault = table.payload("fault_raised")
    assert (fault["kind"], fault["severity"]) == ("over_limit_raise", "alert")
    assert fault["reason"] == {
        "code": "over_limit",
        "message": "seat 3: raise of 20.00 refused (over the limit)",
    }
    assert table.journal("fault_raised")[0].entry.private_part() is None
    assert [a.message for a in table.alerts()] == ["seat 3: raise of 20.00 refused (over the limit)"]
    table.bet(1, "raise", 500)
    out = table.key("confirm")
    assert "seat(s) 3: a refused decision wager must be corrected" in table.refusals(out)[0].reason
    table.tick(3600)  # not even a timeout closes the phase over a refused raise
    assert table.engine.view().state == "decisions"
    table.bet(3, "raise", 1000)  # corrected
    table.key("confirm")
    entry = closing(table, "round_settled")
    assert entry["round"]["seats"][1]["wagers"]["raise"] == 1000


def test_walk_away_timeout_folds() -> None:
    table = hcf_table(decision_timeout_s=20.0)
    bet_and_lock(table)
    table.bet(1, "raise", 500)
    table.tick(19.0)
    assert table.engine.view().state == "decisions"
    table.tick(1.0)
    decisions = [
        (e.payload["seat"], e.payload["action"], e.payload["cause"]) for e in table.journal("decision")
    ]
    assert decisions == [(1, "raise", "sensor"), (3, "fold", "timeout")]
    entry = closing(table, "round_settled")
    assert entry["round"]["seats"][1]["folded"] is True


def test_chase_timeout_before_the_river_is_a_check_and_on_the_river_a_fold() -> None:
    table = chase_table()
    table.start()
    table.bet(2, "ante", 500)
    table.bet(2, "xtra_bonus", 500)
    table.lock()
    for _street in range(3):
        table.tick(31.0)
    actions = [
        (e.payload["action"], e.payload["street"], e.payload["cause"]) for e in table.journal("decision")
    ]
    assert actions == [
        ("check", "preflop", "timeout"),
        ("check", "flop", "timeout"),
        ("fold", "river", "timeout"),
    ]
    closing(table, "round_settled")


# --- the button and the designated player ----------------------------------------------------------
def test_designated_player_waive_rotates_the_offer_and_nobody_eligible_blocks_the_round() -> None:
    config = TableConfig(banking_mode=DESIGNATED_PLAYER, seats=(1, 2, 3))
    table = Table(config, stack(HCF_SEAT1))
    table.key("dp_waives")
    assert table.payload("dp_waived") == {"seat": 1}
    assert table.engine.view().dp_offer_seat == 2
    table.key("dp_waives")
    table.key("dp_waives")
    out = table.start()
    assert table.refusals(out)[0].reason == (
        "nobody accepted the designated player's button and the house may not bank"
    )
    assert table.engine.view().state == "idle"
    # A supervisor moves the button: the offer starts again from that seat.
    table.call(table.engine.handle, engine_actions.MoveButton(2, "sue"), table.now_s)
    assert [e.entry for e in table.journal("button_moved")][-1] == entries.ButtonMoved(
        from_seat=None, to_seat=2, reason="moved by a supervisor", by="sue"
    )
    table.call(table.engine.handle, engine_actions.DpAccepts(50_000, "dealer"), table.now_s)
    assert table.engine.view().dp_seat == 2


def test_nobody_accepts_and_the_house_may_bank() -> None:
    config = TableConfig(banking_mode=DESIGNATED_PLAYER, seats=(1, 2), house_may_bank=True)
    table = Table(config, stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.key("dp_waives")
    table.key("dp_waives")
    table.start()
    table.bet(1, "ante", 500)
    table.lock()
    assert table.payload("round_started")["banking"] == {"mode": "house"}


def test_a_house_banked_round_at_a_designated_player_table_pays_the_house_presets() -> None:
    # The table's own paytables are the DP contest tables; the house-banked fallback round must not use
    # them (docs/rules.md: house-banked bonuses pay the player's own hand, 300/100/10/1).
    config = TableConfig(
        banking_mode=DESIGNATED_PLAYER,
        seats=(1, 2),
        house_may_bank=True,
        paytables={"flush": "hcf-flush-dp", "straight_flush": "hcf-straight-flush-dp"},
    )
    table = Table(config, stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.key("dp_waives")
    table.key("dp_waives")
    table.start()
    table.bet(1, "ante", 500)
    table.lock()
    round_input = table.engine._flow._settling.settle_input()
    assert round_input["banking"] == {"mode": "house"}
    assert "paytables" not in round_input


def test_designated_player_accepts_and_the_button_moves_clockwise_each_round() -> None:
    config = TableConfig(banking_mode=DESIGNATED_PLAYER, seats=(2, 4, 6))
    deck = stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER)
    table = Table(config, deck)
    dp_seats = []
    for _round in range(4):
        offered = table.engine.view().dp_offer_seat
        table.call(table.engine.handle, engine_actions.DpAccepts(100_000, "dealer"), table.now_s)
        dp_seats.append(offered)
        table.start()
        # Both other seats play (a seat that took no part in the last hand is empty: never offered).
        players = [seat for seat in (2, 4, 6) if seat != offered]
        for player in players:
            table.bet(player, "ante", 500)
        table.lock()
        for player in players:
            table.key("fold_seat", player)
        table.key("confirm")
        table.key("next")
        for player in players:
            table.bet(player, "ante", 0)
        table.next_card = 0
    assert dp_seats == [2, 4, 6, 2]


def test_dp_seat_with_chips_cannot_lock() -> None:
    config = TableConfig(banking_mode=DESIGNATED_PLAYER, seats=(1, 2))
    table = Table(config, stack(HCF_SEAT1))
    table.call(table.engine.handle, engine_actions.DpAccepts(100_000, "dealer"), table.now_s)
    table.start()
    table.bet(1, "ante", 500)
    out = table.lock()
    assert table.refusals(out)[0].reason == "seat 1 is the designated player's: it places no wagers"


# --- locking ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bets", "reason"),
    [
        ([], "no seat has an ante"),
        ([(1, "flush", 100)], "seat 1: wagers without an ante"),
        ([(1, "ante", 50)], "seat 1: ante 0.50 outside the table's limits 1.00 to 1,000.00"),
        ([(1, "ante", 500), (1, "raise", 500)], "seat 1: chips on the raise spot before the cards are seen"),
        ([(7, "ante", 500)], "seat 7: chips on a seat the table does not have"),
    ],
)
def test_no_more_bets_refused_for_bad_bets(bets: list[tuple[int, str, int]], reason: str) -> None:
    table = hcf_table()
    table.start()
    for seat, wager, amount in bets:
        table.bet(seat, wager, amount)
    out = table.lock()
    assert table.refusals(out)[0].reason == reason
    assert table.engine.view().state == "betting"
    op = [e.entry for e in table.journal("action_refused")]
    assert op == [entries.ActionRefused(action="no_more_bets", by="dealer", reason=reason)]


def test_chase_xtra_bonus_must_equal_the_ante() -> None:
    table = chase_table()
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "xtra_bonus", 300)
    assert table.refusals(table.lock())[0].reason == "seat 1: the X-tra Bonus must equal the ante (5.00)"


def test_the_deal_waits_for_a_verified_deck_and_a_bad_deck_holds() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER), auto_shuffle=False)
    table.start()
    table.bet(1, "ante", 500)
    table.lock()
    assert table.engine.view().state == "bets_locked"
    table.event(DeckVerified("shuffler", 51, (parse_card("As"),), ()))
    fault = table.payload("fault_raised")
    assert (fault["kind"], fault["severity"]) == ("deck_verification", "latching")
    assert table.engine.view().state == "held"
    shuffles = len(table.of_type(Shuffle))
    table.call(
        table.engine.handle,
        engine_actions.ClearFault(str(fault["fault_id"]), "sue", "deck replaced"),
        table.now_s,
    )
    assert table.engine.view().state == "bets_locked"
    assert len(table.of_type(Shuffle)) == shuffles + 1  # a fresh shuffle is asked for
    table.event(DeckVerified("shuffler", 52, (), ()))
    assert table.engine.view().state == "decisions"


# --- void, devices, recovery --------------------------------------------------------------------------
def test_void_round_returns_every_wager() -> None:
    table = hcf_table()
    bet_and_lock(table)
    table.bet(1, "raise", 500)
    table.key("confirm")  # refused: seat 3 has not acted
    table.call(table.engine.handle, engine_actions.VoidRound("dispute at seat 3", "sue"), table.now_s)
    entry = closing(table, "round_voided")
    assert entry["reason"] == "dispute at seat 3"
    assert entry["by"] == "sue"
    assert_every_wager_returned(entry)
    assert table.engine.view().state == "idle"
    assert table.refusals(
        table.call(table.engine.handle, engine_actions.VoidRound("again", "sue"), table.now_s)
    )


def test_shuffler_lost_during_the_deal_holds_the_round() -> None:
    table = hcf_table(seats=(1, 2, 3))
    table.auto_deal = False
    bet_and_lock(table)
    table.event(DeviceLost("shuffler", "heartbeat missed"))
    fault = table.payload("fault_raised")
    assert (fault["kind"], fault["severity"]) == ("device_lost", "latching")
    assert table.engine.view().state == "held"
    table.event(SecurityEvent("sensors", "replay"))
    assert table.journal("security_event")[0].payload == {
        "device": "sensors",
        "reason": "replay",
        "detail": "",
    }


def test_engine_starts_held_from_recovered_latched_faults() -> None:
    recovered = RecoveredState(
        latched_faults=(
            LatchedFault("FT1-000007", "red_light", "round dead", "shuffler", "RT1-20270114-000041"),
        ),
        button_seat=3,
        rounds_started=41,
        faults_raised=7,
    )
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER), recovered)
    assert table.engine.view().state == "held"
    assert table.refusals(table.start())
    table.call(
        table.engine.handle,
        engine_actions.ClearFault("FT1-000007", "sue", "checked after restart"),
        table.now_s,
    )
    assert table.engine.view().state == "idle"
    bet_and_lock(table)
    assert table.payload("round_started")["round_id"] == "RT1-20270115-000042"
    assert recovered_state(table.engine).rounds_started == 42
    assert recovered_state(table.engine).button_seat == 3


def test_card_outside_a_deal_is_refused_and_journaled() -> None:
    # No deal asked of the shoe: its card is a card beyond any count, the shoe's card count fault,
    # which before a round holds the table (as a shoe fault between rounds does); never a card dealt.
    table = hcf_table()
    out = table.event(CardDealt("shuffler", 1, 0, 5))
    assert any(isinstance(o, JournalRecord) and o.kind == "fault_raised" for o in out)
    assert "card_dealt" not in table.kinds()
    fault = table.payload("fault_raised")
    assert (fault["kind"], fault["severity"], fault["card"], fault["index"]) == (
        "shuffler_fault",
        "latching",
        5,
        0,
    )
    table.event(HandComplete("shuffler", 1, 7))
    assert table.engine.view().state == "held"


def test_past_posting_mid_deal_holds_and_the_deal_finishes_under_the_hold() -> None:
    table = hcf_table()
    table.auto_deal = False
    bet_and_lock(table)
    from drivers.events import Deal

    events = table.shoe_events(table.of_type(Deal)[0])
    for event in events[:5]:
        table.event(event)
    table.bet(1, "ante", 5000, locked=True)
    assert table.engine.view().state == "held"
    for event in events[5:]:
        table.event(event)
    assert not [e for e in table.journal("fault_raised") if e.payload["kind"] == "integrity"]
    fault_id = str(table.journal("fault_raised")[0].payload["fault_id"])
    table.bet(1, "ante", 500, locked=True)  # the chips put back as locked: the clear is taken
    table.call(table.engine.handle, engine_actions.ClearFault(fault_id, "sue", "chips restored"), table.now_s)
    assert table.engine.view().state == "decisions"


def test_designated_player_keeps_the_button_after_a_dead_round() -> None:
    config = TableConfig(banking_mode=DESIGNATED_PLAYER, seats=(1, 2, 3))
    table = Table(config, stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.hand_complete_count[0] = 5  # the banker (the DP's hand) miscounted: the round is dead
    table.call(table.engine.handle, engine_actions.DpAccepts(100_000, "dealer"), table.now_s)
    table.start()
    table.bet(2, "ante", 500)
    table.lock()
    assert_every_wager_returned(closing(table, "round_dead"))
    # The round's death latches, and so does the shoe's count that follows it (the round already closed).
    dead, count = table.engine.view().latched.values()
    assert (dead.kind, count.kind, count.detail) == (
        "dead_hand",
        "shuffler_fault",
        "a card count fault at the banker",
    )
    for fault_id in (dead.fault_id, count.fault_id):
        table.call(
            table.engine.handle, engine_actions.ClearFault(fault_id, "sue", "shoe checked"), table.now_s
        )
    bank = table.engine._bank
    assert (bank.dp_seat, bank.dp_funds_cents) == (1, 100_000)  # the misdeal is replayed with the same DP
    assert table.engine.view().state == "idle"
    table.start()
    assert table.engine.view().state == "betting"


def test_under_the_minimum_is_refused_without_a_fault() -> None:
    table = Table(TableConfig(game="top-flush"), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.start()
    table.bet(1, "ante", 500)
    table.lock()
    assert ("display", "Decisions: play or fold") in [(o.device, o.text) for o in table.of_type(ShowText)]
    table.bet(1, "play", 200)
    refused = table.payload("decision_refused")
    assert refused["reason"] == {
        "code": "under_limit",
        "message": "seat 1: play of 2.00 refused (under the limit)",
        "seat": 1,
    }
    # The limit speaks of the hand (a 5-card flush): in the private part only.
    (record,) = table.journal("decision_refused")
    assert record.entry.private_part() == entries.DecisionRefusedPrivate(
        limit_detail="under the limit: 5.00 to 10.00 with a 5-card flush"
    )
    assert [a.message for a in table.alerts()] == ["seat 1: play of 2.00 refused (under the limit)"]
    assert table.journal("fault_raised") == []
    assert [a.kind for a in table.alerts()] == ["decision_refused"]
    table.bet(1, "play", 1000)
    table.key("confirm")
    closing(table, "round_settled")


def journal_table_state() -> TableState:
    """The journal's reducer state (controller.journal.state.TableState) as a journal of 812 entries
    leaves it: 41 rounds, the last settled, a latched past-posting fault, the button at seat 2."""
    state = TableState("T1")
    state.last_seq = 812
    state.rounds_started = 40
    state.last_round_number = 41
    state.last_round_id = "RT1-20270114-000041"
    state.closed_rounds = {"RT1-20270114-000041": "round_settled"}
    state.latched_faults = {
        "FT1-000009": AlertState(
            fault_id="FT1-000009",
            kind="past_posting",
            severity="latching",
            reason=entries.Reason(code="past_posting", message="x"),
            device="sensors",
            round_id=None,
            raised_seq=800,
            raised_utc="2027-01-14T23:00:00Z",
        )
    }
    state.button_seat = 2
    return state


def test_recovered_state_from_the_journals_table_state() -> None:
    recovered = RecoveredState.from_table_state(journal_table_state())
    assert recovered == RecoveredState(
        latched_faults=(LatchedFault("FT1-000009", "past_posting", "x", "sensors"),),
        button_seat=2,
        rounds_started=41,
        faults_raised=812,
        button_moves_on=True,
    )
    engine = Table(TableConfig(banking_mode=DESIGNATED_PLAYER), stack(HCF_SEAT1), recovered).engine
    assert engine.view().state == "held"
    assert engine.view().dp_offer_seat == 3  # the last DP's round settled
    out = engine.handle(engine_actions.ClearFault("FT1-000009", "sue", "restart checked"), NOW)
    assert engine.view().state == "idle"
    assert [o.kind for o in out if isinstance(o, JournalRecord)] == ["fault_cleared", "state_changed"]
    # New fault ids continue after the journal's last sequence number: never an id seen before.
    out = engine.handle(ShufflerFault("shuffler", "jam"), NOW)
    assert [
        o.payload["fault_id"] for o in out if isinstance(o, JournalRecord) and o.kind == "fault_raised"
    ] == ["FT1-000813"]


def test_betting_held_by_a_fault_can_be_voided() -> None:
    table = hcf_table()
    table.start()
    table.bet(1, "ante", 500)
    table.event(ShufflerFault("shuffler", "jam"))
    assert table.engine.view().state == "held"
    table.call(
        table.engine.handle, engine_actions.VoidRound("shoe jammed before the lock", "sue"), table.now_s
    )
    assert table.journal("round_voided") == []  # nothing was locked: no round to close
    assert table.engine.view().state == "held"  # the jam still latches the table
    fault_id = str(table.payload("fault_raised")["fault_id"])
    table.call(table.engine.handle, engine_actions.ClearFault(fault_id, "sue", "unjammed"), table.now_s)
    assert table.engine.view().state == "idle"


# --- the shuffler driver's fault reports (drivers/shuffler.py turns shoe anomalies into faults) --------
@pytest.mark.parametrize(
    ("fault", "code", "reason_start"),
    [
        ("misread", "card_misread", "a card seen twice or misread during the deal"),
        ("jam", "shoe_fault", "the shoe stopped mid-deal, a misdeal"),
        ("door_open", "shoe_fault", "the shoe stopped mid-deal, a misdeal"),
    ],
)
def test_deal_stopping_faults_kill_the_round(fault: str, code: str, reason_start: str) -> None:
    table = hcf_table()

    def stop(position: int, index: int, card: int) -> list[object] | None:
        if (position, index) == (3, 4):
            return [ShufflerFault("shuffler", fault, 3, "x")]  # type: ignore[arg-type]
        return None

    table.tamper = stop
    bet_and_lock(table)
    entry = closing(table, "round_dead")
    assert entry["reason"]["code"] == code
    assert entry["reason"]["message"].startswith(reason_start)
    # The shoe's own words (they may name a card) and where it stopped: private.
    assert (entry["device_detail"], entry["position"]) == ("x", 3)
    assert entry["message"] == f"{fault} at position 3: x"
    assert_public_texts_name_no_card(table)
    assert_every_wager_returned(entry)
    assert table.engine.view().held


def test_the_drivers_card_count_after_a_miscounted_hand_is_judged_once() -> None:
    table = hcf_table()
    table.hand_complete_count[3] = 6
    table.auto_deal = False
    bet_and_lock(table)
    from drivers.events import Deal

    for event in table.shoe_events(table.of_type(Deal)[0]):
        table.event(event)
        if isinstance(event, HandComplete) and event.position == 3:
            table.event(ShufflerFault("shuffler", "card_count", 3, "dealt 6 cards, 7 requested"))
    assert [e.payload["seat"] for e in table.journal("dead_hand")] == [3]
    assert table.engine.view().state == "decisions"
    assert not table.engine.view().held


def test_chase_jam_between_streets_holds_and_red_light_kills() -> None:
    table = chase_table()
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "xtra_bonus", 500)
    table.lock()
    assert table.engine.view().state == "preflop"
    table.event(ShufflerFault("shuffler", "jam", None))
    assert table.engine.view().state == "held"
    assert table.journal("round_dead") == []
    table.event(ShufflerFault("shuffler", "red_light", None))  # still before the round's last card
    assert_every_wager_returned(closing(table, "round_dead"))


def test_a_past_posting_clear_is_refused_until_the_spot_reads_the_locked_wager() -> None:
    table = hcf_table()
    bet_and_lock(table)
    table.bet(3, "flush", 1000, locked=True)  # past posting: the round holds 200 on seat 3's flush
    fault_id = str(table.payload("fault_raised")["fault_id"])
    clear = engine_actions.ClearFault(fault_id, "sue", "looked at it")
    refused = table.refusals(table.call(table.engine.handle, clear, table.now_s))
    assert [r.reason for r in refused] == [
        "seat 3 flush reads 10.00, the round holds 2.00: put the locked wager back as it was, "
        "or accept the difference with a reason"
    ]
    assert table.engine.view().state == "held"
    table.bet(3, "flush", 500, locked=True)  # still not as locked
    assert table.refusals(table.call(table.engine.handle, clear, table.now_s))
    table.bet(3, "flush", 200, locked=True)
    assert not table.refusals(table.call(table.engine.handle, clear, table.now_s))
    assert table.engine.view().state == "decisions"


def test_a_supervisor_accepts_a_past_posted_difference_with_a_reason_journaled() -> None:
    table = hcf_table()
    bet_and_lock(table)
    table.bet(3, "flush", 1000, locked=True)
    fault_id = str(table.payload("fault_raised")["fault_id"])
    accept = engine_actions.AcceptDifference(fault_id, "sue", "the player's 8.00 stays out of the round")
    assert not table.refusals(table.call(table.engine.handle, accept, table.now_s))
    assert table.engine.view().state == "decisions"
    accepted = [e.entry for e in table.journal("difference_accepted")]
    assert accepted == [
        entries.DifferenceAccepted(
            fault_id=fault_id,
            by="sue",
            reason="the player's 8.00 stays out of the round",
            spot="seat 3 flush reads 10.00, the round holds 2.00",
        )
    ]
    assert table.journal("difference_accepted")[-1].round_id is not None  # in the round's recall
    cleared = table.payload("fault_cleared")
    assert (cleared["fault_id"], cleared["by"]) == (fault_id, "sue")
    # Nothing to accept once the spot reads as locked: a plain clear does.
    table.bet(1, "ante", 9000, locked=True)
    second = str(table.journal("fault_raised")[-1].payload["fault_id"])
    table.bet(1, "ante", 500, locked=True)  # back as locked
    again = engine_actions.AcceptDifference(second, "sue", "nothing")
    assert table.refusals(table.call(table.engine.handle, again, table.now_s))
