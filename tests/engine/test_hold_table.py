"""A supervisor's hold (HoldTable): a latched ``supervisor_hold`` fault under the supervisor's name that
stops the round where it stands, refused without a reason or while one stands; cleared by ClearFault
(the round resumes), or the round voided while held (the hold stands until cleared)."""

from __future__ import annotations

from controller.engine import TableConfig
from controller.engine import actions as a
from tests.engine.table import Table, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3


def _betting_table() -> Table:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 500)
    table.lock()
    return table


def test_a_hold_latches_a_supervisor_fault_and_stops_the_round_where_it_stands() -> None:
    table = _betting_table()
    outs = table.call(table.engine.handle, a.HoldTable("seat 3 disputes the deal", "sam"), table.now_s)
    (raised,) = [r for r in table.journal("fault_raised") if r.payload["kind"] == "supervisor_hold"]
    assert raised.payload["severity"] == "latching"
    assert raised.payload["by"] == "sam"
    assert raised.payload["reason"] == {
        "code": "operator",
        "message": "held by sam: seat 3 disputes the deal",
    }
    assert raised.source == "operator:sam"
    assert table.engine.view().state.startswith("held")
    assert table.refusals(outs) == []
    # One supervisor's hold at a time; a reason and a name are required.
    again = table.call(table.engine.handle, a.HoldTable("again", "max"), table.now_s)
    assert [r.reason for r in table.refusals(again)] == [
        f"the table is already held by a supervisor ({raised.payload['fault_id']})"
    ]
    # Cleared: the round resumes where it stood.
    table.call(
        table.engine.handle, a.ClearFault(str(raised.payload["fault_id"]), "sam", "looked: fine"), table.now_s
    )
    assert not table.engine.view().state.startswith("held")


def test_a_hold_needs_a_reason_and_a_held_round_can_be_voided() -> None:
    table = _betting_table()
    empty = table.call(table.engine.handle, a.HoldTable("  ", "sam"), table.now_s)
    assert [r.reason for r in table.refusals(empty)] == ["a supervisor's name and a reason are required"]
    table.call(table.engine.handle, a.HoldTable("dispute", "sam"), table.now_s)
    voided = table.call(table.engine.handle, a.VoidRound("cards exposed", "sam"), table.now_s)
    assert table.refusals(voided) == []
    assert [r.payload["by"] for r in table.journal("round_voided")] == ["sam"]
    assert table.engine.view().state.startswith("held")  # the hold stands until a supervisor clears it
    started = table.start()
    assert [r.action for r in table.refusals(started)] == ["start_round"]


def test_an_outside_watcher_cannot_raise_a_supervisor_hold() -> None:
    table = _betting_table()
    outs = table.call(
        table.engine.handle, a.RaiseAlert("supervisor_hold", "not mine", "integrity"), table.now_s
    )
    assert "unknown alert kind 'supervisor_hold'" in table.refusals(outs)[0].reason
