"""Recall's text reads a round's events as their typed entries (controller/journal/render.py
``event_entry``, by the one typed decoder): what the entry's class says is printed, and an event whose
payload is not its kind's shape is not read at all, rather than printed as ``seat None: None by None``."""

from __future__ import annotations

from typing import Any

from controller.journal import entries as e
from controller.journal.render import event_entry, render_record

TIME = "2026-12-01T10:00:00.000000Z"


def shown(entry: e.Entry) -> dict[str, Any]:
    """An event as recall shows it: the entry's public part as its class writes it."""
    return {"time_utc": TIME, "kind": entry.kind, "payload": e.public_dict(entry), "private": None}


def test_kill_requests_and_the_void_are_read_as_their_classes_and_a_misshapen_one_is_not_read() -> None:
    asked = e.KillSeatRequest(seat=3, status="requested", by="dealer", request_number=1)
    rejected = e.KillSeatRequest(
        seat=3, status="rejected", by="sue", requested_by="dealer", reason="hand fine", request_number=1
    )
    voided = e.RoundVoided(round={"game": "high-card-flush"}, settlement={}, reason="cards exposed", by="sam")
    misshapen = {"time_utc": TIME, "kind": "kill_seat_request", "payload": {"seat": "three"}, "private": None}
    record = {
        "round_id": "SIM1-7",
        "status": "voided",
        "round": {"game": "high-card-flush", "banking": {"mode": "house"}},
        "settlement": {},
        "events": [shown(asked), misshapen, shown(rejected), shown(voided)],
    }
    text = render_record(record)
    assert "three" not in text
    assert text.splitlines()[-3:] == [
        "  Kill request 1, seat 3: requested by dealer",
        "  Kill request 1, seat 3: rejected by sue: hand fine",
        "  Round voided by sam: cards exposed",
    ]
    assert event_entry(misshapen) is None
    assert event_entry(shown(voided)) == voided
