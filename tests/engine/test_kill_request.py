"""Kill one seat by the dealer's key with a supervisor's confirmation (issue 13, Build item 5): the
display's kill_seat key only asks; a supervisor confirms (the KillSeat it stands for, by the supervisor,
with the dealer's request recorded) or rejects; the request lapses when the decisions close or the round
ends; refusals journaled. The real engine fed by tests/engine/table.py (a shoe, sensors and keys)."""

from __future__ import annotations

from typing import Any

from controller.engine import TableConfig
from controller.engine import actions as a
from controller.journal import entries
from controller.rules.settle import parse_round, settle
from drivers.events import ShowSeatResult, ShowText
from tests.engine.table import Table, stack, the_round
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3


def dealt_table() -> Table:
    """Seats 1 and 3 in the round, the cards dealt, the decisions open."""
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "flush", 100)
    table.bet(3, "ante", 1000)
    table.bet(3, "straight_flush", 200)
    table.lock()
    assert table.engine.view().state == "decisions"
    return table


def round_of(table: Table) -> str:
    """The round id the panel's banner shows with the request (the round in play)."""
    assert table.engine.view().round is not None
    return the_round(table.engine).round_id


def requests(table: Table) -> list[dict[str, Any]]:
    return [dict(record.payload) for record in table.journal("kill_seat_request")]


def shown(table: Table, outs: list[Any]) -> list[str]:
    return [out.text for out in table.of_type(ShowText, outs)]


def refused_detail(table: Table) -> str:
    return "refused: " + str(table.journal("action_refused")[-1].payload["reason"])


def test_the_dealers_key_asks_and_a_supervisors_confirm_kills_the_seat_and_the_rest_settles() -> None:
    table = dealt_table()
    outs = table.key("kill_seat", 3)
    # The key kills nothing: it is journaled as a request and the display says it waits.
    assert shown(table, outs) == ["Kill seat 3: waiting for a supervisor"]
    assert requests(table) == [
        {
            "seat": 3,
            "status": "requested",
            "by": "dealer",
            "requested_by": None,
            "reason": None,
            "request_number": 1,
        }
    ]
    assert [r.source for r in table.journal("kill_seat_request")] == ["operator:dealer"]
    assert table.engine.view().round is not None
    assert the_round(table.engine).seats[3].status == "live"
    assert not table.journal("dead_hand")

    outs = table.call(
        table.engine.handle, a.ConfirmKillSeat(3, round_of(table), 1, "hand exposed", "sam"), table.now_s
    )
    assert ShowSeatResult("display", 3, "dead", 0) in outs
    assert table.payload("dead_hand") == {
        "seat": 3,
        "reason": {
            "code": "operator",
            "message": "killed by a supervisor at the dealer's request: hand exposed",
            "seat": 3,
        },
    }
    kill = table.journal("seat_killed")[-1]
    assert (kill.entry, kill.source) == (
        entries.SeatKilled(seat=3, by="sam", reason="hand exposed", requested_by="dealer"),
        "operator:sam",
    )
    assert requests(table)[-1] == {
        "seat": 3,
        "status": "confirmed",
        "by": "sam",
        "requested_by": "dealer",
        "reason": "hand exposed",
        "request_number": 1,
    }
    table.bet(3, "ante", 0)  # the dealer returns its chips: not past-posting
    table.bet(1, "raise", 1000)
    table.key("confirm")
    entry = table.payload("round_settled")
    assert settle(parse_round(entry["round"])).to_json() == entry["settlement"]
    seats = {seat["seat"]: seat for seat in entry["settlement"]["seats"]}
    assert seats[3]["status"] == "dead"
    assert {w: r["result"] for w, r in seats[3]["wagers"].items()} == {
        "ante": "returned",
        "straight_flush": "returned",
    }
    assert seats[1]["status"] == "live"
    assert entry["settlement"]["banker_net"] == -2500  # seat 1 alone: 500 + 1000 + 10 x 100
    # Nothing lapsed: the request was answered.
    assert [r["status"] for r in requests(table)] == ["requested", "confirmed"]


def test_a_rejected_request_is_journaled_the_display_cleared_and_the_hand_plays_on() -> None:
    table = dealt_table()
    table.key("kill_seat", 1)
    outs = table.call(
        table.engine.handle,
        a.RejectKillSeat(1, round_of(table), 1, "the card was not seen", "sam"),
        table.now_s,
    )
    assert shown(table, outs) == ["Kill seat 1 rejected: play on"]
    assert requests(table)[-1] == {
        "seat": 1,
        "status": "rejected",
        "by": "sam",
        "requested_by": "dealer",
        "reason": "the card was not seen",
        "request_number": 1,
    }
    assert not table.journal("dead_hand")
    # A confirm after the rejection has nothing to confirm.
    outs = table.call(
        table.engine.handle, a.ConfirmKillSeat(1, round_of(table), 1, "exposed", "sam"), table.now_s
    )
    assert table.refusals(outs)[0].reason == "no kill request is waiting for a supervisor"
    assert refused_detail(table) == "refused: no kill request is waiting for a supervisor"
    table.bet(1, "raise", 500)
    table.bet(3, "raise", 1000)
    table.key("confirm")
    settled = table.payload("round_settled")["settlement"]
    assert [seat["status"] for seat in settled["seats"]] == ["live", "live"]


def test_a_request_no_supervisor_answers_lapses_when_the_decisions_close() -> None:
    table = dealt_table()
    table.key("kill_seat", 3)
    table.bet(1, "raise", 500)
    table.bet(3, "raise", 1000)
    outs = table.key("confirm")
    lapsed = requests(table)[-1]
    assert lapsed == {
        "seat": 3,
        "status": "lapsed",
        "by": "engine",
        "requested_by": "dealer",
        "reason": "the decisions closed before a supervisor answered (reveal)",
        "request_number": 1,
    }
    assert "Kill seat 3: request lapsed" in shown(table, outs)
    # Journaled in the round, before the reveal.
    kinds = table.kinds()
    lapsed_at = kinds.index("kill_seat_request", kinds.index("kill_seat_request") + 1)
    assert lapsed_at < kinds.index("round_settled")
    assert table.journal("kill_seat_request")[-1].round_id == table.journal("round_settled")[0].round_id
    # Too late now: a confirm finds nothing waiting, and the seat was paid as a live hand.
    outs = table.call(
        table.engine.handle, a.ConfirmKillSeat(3, round_of(table), 1, "exposed", "sam"), table.now_s
    )
    assert table.refusals(outs)[0].reason == "no kill request is waiting for a supervisor"
    settled = table.payload("round_settled")["settlement"]
    assert [seat["status"] for seat in settled["seats"]] == ["live", "live"]


def test_a_request_lapses_when_the_round_is_voided() -> None:
    table = dealt_table()
    table.key("kill_seat", 1)
    table.call(table.engine.handle, a.VoidRound("dispute", "sam"), table.now_s)
    assert [r["status"] for r in requests(table)] == ["requested", "lapsed"]
    assert requests(table)[-1]["reason"] == "the round ended before a supervisor answered (complete)"
    # The lapse is the voided round's: written after the machine left the round, it keeps the round's
    # id, so the round's recall shows what became of the request.
    voided_round = table.journal("round_voided")[0].round_id
    assert voided_round is not None
    assert [r.round_id for r in table.journal("kill_seat_request")] == [voided_round, voided_round]


def test_a_late_confirm_of_a_lapsed_request_never_kills_the_next_rounds_seat() -> None:
    """A supervisor opens Confirm for seat 3 in round R1 and types a reason; R1's decisions close and
    the request lapses; in R2 the dealer asks to kill seat 3 again. The late Confirm names R1: refused
    (journaled), seat 3 of R2 plays on and R2's request still waits for its own answer."""
    table = dealt_table()
    first_round = round_of(table)
    table.key("kill_seat", 3)
    table.bet(1, "raise", 500)
    table.bet(3, "raise", 1000)
    table.key("confirm")
    assert requests(table)[-1]["status"] == "lapsed"
    for seat, wager in (
        (1, "ante"),
        (1, "flush"),
        (1, "raise"),
        (3, "ante"),
        (3, "straight_flush"),
        (3, "raise"),
    ):
        table.bet(seat, wager, 0)  # paid and taken down
    table.key("next")
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 1000)
    table.lock()
    second_round = round_of(table)
    assert second_round != first_round
    table.key("kill_seat", 3)
    outs = table.call(
        table.engine.handle, a.ConfirmKillSeat(3, first_round, 1, "hand exposed", "sam"), table.now_s
    )
    why = f"the waiting kill request is for round {second_round}, not round {first_round}"
    assert table.refusals(outs)[0].reason.startswith(why)
    assert refused_detail(table).startswith(f"refused: {why}")
    assert table.journal("action_refused")[-1].payload["by"] == "sam"
    assert not table.journal("dead_hand")
    assert table.engine.view().round is not None
    assert the_round(table.engine).seats[3].status == "live"
    assert [r["status"] for r in requests(table)] == ["requested", "lapsed", "requested"]
    # A late Reject is refused the same way; R2's request is answered only by an answer naming R2.
    outs = table.call(table.engine.handle, a.RejectKillSeat(3, first_round, 1, "no", "sam"), table.now_s)
    assert table.refusals(outs)[0].reason.startswith(why)
    outs = table.call(
        table.engine.handle, a.ConfirmKillSeat(3, second_round, 1, "exposed", "sam"), table.now_s
    )
    assert not table.refusals(outs)
    assert the_round(table.engine).seats[3].status == "dead"


def test_a_late_answer_to_a_rejected_request_never_answers_the_same_seats_next_request() -> None:
    """In one round the dealer asks to kill seat 3 (request 1); a supervisor rejects it; the dealer asks
    for seat 3 again (request 2). A Confirm from a panel page still showing request 1 (same round, same
    seat) names request 1: refused and journaled, seat 3 plays on, and request 2 still waits; only an
    answer naming request 2 answers it."""
    table = dealt_table()
    this_round = round_of(table)
    table.key("kill_seat", 3)
    table.call(table.engine.handle, a.RejectKillSeat(3, this_round, 1, "not exposed", "sam"), table.now_s)
    outs = table.key("kill_seat", 3)
    assert shown(table, outs) == ["Kill seat 3: waiting for a supervisor"]
    assert [(r["status"], r["request_number"]) for r in requests(table)] == [
        ("requested", 1),
        ("rejected", 1),
        ("requested", 2),
    ]

    why = (
        "the waiting kill request is request 2 of this round, not request 1: "
        "that request is no longer waiting"
    )
    outs = table.call(table.engine.handle, a.ConfirmKillSeat(3, this_round, 1, "exposed", "kim"), table.now_s)
    assert [refusal.reason for refusal in table.refusals(outs)] == [why]
    refusal = table.journal("action_refused")[-1]
    assert (refusal.entry, refusal.source) == (
        entries.ActionRefused(action="confirm_kill_seat", by="kim", reason=why),
        "operator:kim",
    )
    assert not table.journal("dead_hand")
    assert table.engine.view().round is not None
    assert the_round(table.engine).seats[3].status == "live"
    # A late Reject of request 1 is refused the same way and does not clear request 2.
    outs = table.call(table.engine.handle, a.RejectKillSeat(3, this_round, 1, "no", "kim"), table.now_s)
    assert [refusal.reason for refusal in table.refusals(outs)] == [why]
    # A number no request of this round has yet is refused too (never taken for the waiting one).
    outs = table.call(table.engine.handle, a.ConfirmKillSeat(3, this_round, 3, "exposed", "kim"), table.now_s)
    assert table.refusals(outs)[0].reason.startswith(
        "the waiting kill request is request 2 of this round, not request 3"
    )
    assert [r["status"] for r in requests(table)] == ["requested", "rejected", "requested"]

    outs = table.call(table.engine.handle, a.ConfirmKillSeat(3, this_round, 2, "exposed", "sam"), table.now_s)
    assert not table.refusals(outs)
    assert the_round(table.engine).seats[3].status == "dead"
    assert requests(table)[-1] == {
        "seat": 3,
        "status": "confirmed",
        "by": "sam",
        "requested_by": "dealer",
        "reason": "exposed",
        "request_number": 2,
    }


def test_request_numbers_count_within_their_round_and_name_the_lapse() -> None:
    """Request numbers start at 1 in each round, and the lapse names the request that lapsed."""
    table = dealt_table()
    table.key("kill_seat", 1)
    table.call(table.engine.handle, a.RejectKillSeat(1, round_of(table), 1, "no", "sam"), table.now_s)
    table.key("kill_seat", 3)
    table.call(table.engine.handle, a.VoidRound("dispute", "sam"), table.now_s)
    assert [(r["seat"], r["status"], r["request_number"]) for r in requests(table)] == [
        (1, "requested", 1),
        (1, "rejected", 1),
        (3, "requested", 2),
        (3, "lapsed", 2),
    ]
    for spot in ((1, "ante"), (1, "flush"), (3, "ante"), (3, "straight_flush")):
        table.bet(*spot, 0)
    for fault_id in list(table.engine.view().latched):
        table.call(table.engine.handle, a.ClearFault(fault_id, "sam", "looked at"), table.now_s)
    table.key("next")
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 1000)
    table.lock()
    table.key("kill_seat", 3)
    assert requests(table)[-1]["request_number"] == 1


def test_requests_refused_and_journaled() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))

    def ask(seat: int) -> tuple[str, list[str]]:
        outs = table.key("kill_seat", seat)
        return table.refusals(outs)[0].reason, shown(table, outs)

    closed = "a seat is killed only after the lock and before the decisions close"
    assert ask(1) == (f"{closed} (idle)", [f"Refused: {closed} (idle)"])
    table.start()
    assert ask(1)[0] == f"{closed} (betting)"  # no hand yet: the panel's Kill one seat excludes a seat
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 500)
    table.bet(3, "flush", 100)
    table.lock()
    assert ask(2)[0] == "seat 2 is not in this round"
    assert refused_detail(table) == "refused: seat 2 is not in this round"
    table.call(table.engine.handle, a.KillSeat(3, "fouled", "sam"), table.now_s)
    assert ask(3)[0] == "seat 3 is already dead"
    table.key("kill_seat", 1)
    assert ask(1)[0] == "seat 1's kill request is already waiting for a supervisor"
    # A confirm must name the seat the dealer asked for.
    outs = table.call(
        table.engine.handle, a.ConfirmKillSeat(3, round_of(table), 1, "fouled", "sam"), table.now_s
    )
    assert table.refusals(outs)[0].reason == "the waiting kill request is for seat 1, not seat 3"
    outs = table.call(table.engine.handle, a.RejectKillSeat(1, round_of(table), 1, "no", "sam"), table.now_s)
    assert not table.refusals(outs)
    table.key("fold_seat", 1)
    assert ask(1)[0] == "seat 1 has folded"
    # Every refusal of the key is journaled with the dealer as its author.
    refusals = [
        r.payload["by"] for r in table.journal("action_refused") if r.payload["action"] == "kill_seat_request"
    ]
    assert refusals == ["dealer"] * 6
    assert [r["status"] for r in requests(table)] == ["requested", "rejected"]


def test_the_panels_own_kill_answers_a_waiting_request_for_that_seat() -> None:
    table = dealt_table()
    table.key("kill_seat", 3)
    table.call(table.engine.handle, a.KillSeat(3, "fouled hand", "sam"), table.now_s)
    assert requests(table)[-1]["status"] == "confirmed"
    assert table.payload("dead_hand")["reason"]["message"] == "killed by a supervisor: fouled hand"


def test_a_key_with_no_seat_is_refused() -> None:
    table = dealt_table()
    outs = table.key("kill_seat", None)
    assert table.refusals(outs)[0].reason == "no seat given"
    assert not requests(table)
