"""The dealer's kill requests are numbered in their round (kill_seat_request ``request_number``), and a
journal written before they were still reads: its requests are numbered by the reducer in their order,
as the engine numbers them, and their sentences read without a number. The entries come from the real
engine (tests/engine/test_kill_request.py's table); the older ones are those same entries' stored text
without the field, which is what a program from before the field wrote (the contract's other fields
are unchanged)."""

from __future__ import annotations

import dataclasses

from controller.engine import actions as a
from controller.journal import entries as e
from controller.journal.chain import canonical_json
from controller.journal.sentence import entry_sentence
from controller.journal.state import TableState
from tests.engine.test_kill_request import dealt_table, round_of
from tests.journal.test_state import Stamped, stamped


def asked_rejected_asked_again() -> tuple[str, str, list[Stamped]]:
    """One round: seat 3 asked for, rejected, asked for again (the second request still waiting)."""
    table = dealt_table()
    round_id = round_of(table)
    table.key("kill_seat", 3)
    table.call(table.engine.handle, a.RejectKillSeat(3, round_id, 1, "not exposed", "sam"), table.now_s)
    table.key("kill_seat", 3)
    table_id = table.engine.view().config.table_id
    return table_id, round_id, stamped(table.journal(), table_id)


def written_before_numbers(record: Stamped) -> Stamped:
    """The entry as stored by a program from before request numbers: its payload text without the field."""
    if not isinstance(record.entry, e.KillSeatRequest):
        return record
    public = e.public_dict(record.entry)
    del public["request_number"]
    return dataclasses.replace(record, entry=e.decode(record.entry.kind, canonical_json(public), None))


def test_the_waiting_request_carries_its_number_in_the_round() -> None:
    table_id, round_id, records = asked_rejected_asked_again()
    state = TableState(table_id).apply_all(records)
    request = state.rounds[round_id].kill_request
    assert request is not None
    assert (request["seat"], request["round_id"], request["request_number"]) == (3, round_id, 2)
    assert [r.entry.request_number for r in records if isinstance(r.entry, e.KillSeatRequest)] == [1, 1, 2]


def test_a_journal_from_before_request_numbers_reads_and_numbers_its_requests_in_order() -> None:
    table_id, round_id, records = asked_rejected_asked_again()
    older = [written_before_numbers(record) for record in records]
    kill_entries = [r.entry for r in older if isinstance(r.entry, e.KillSeatRequest)]
    assert [entry.request_number for entry in kill_entries] == [None, None, None]
    state = TableState(table_id).apply_all(older)
    request = state.rounds[round_id].kill_request
    assert request is not None
    assert request["request_number"] == 2  # the round's second request, as the engine numbered it
    # Their sentences read as they did; the numbered ones name the request.
    old_sentence = entry_sentence({"kind": "kill_seat_request", "payload": e.public_dict(kill_entries[1])})
    assert old_sentence == "sam rejected the dealer's request to kill seat 3's hand: not exposed"
    new_entry = next(r.entry for r in reversed(records) if isinstance(r.entry, e.KillSeatRequest))
    new_sentence = entry_sentence({"kind": "kill_seat_request", "payload": e.public_dict(new_entry)})
    assert new_sentence == "The dealer asks a supervisor to kill seat 3's hand (request 2)"
