"""Names of entry kinds that readers test for, the entries that close a round, and round ids.

The kinds themselves, with their fields, are the classes of controller/journal/entries.py."""

from __future__ import annotations

import re
from datetime import date

ROUND_STARTED = "round_started"
ROUND_SETTLED = "round_settled"
ROUND_DEAD = "round_dead"
ROUND_VOIDED = "round_voided"
CLOSING_KINDS: frozenset[str] = frozenset({ROUND_SETTLED, ROUND_DEAD, ROUND_VOIDED})
"""A round is closed by exactly one of these."""

STATUS_BY_CLOSING_KIND: dict[str, str] = {ROUND_SETTLED: "settled", ROUND_DEAD: "dead", ROUND_VOIDED: "void"}

FAULT_RAISED = "fault_raised"
FAULT_ACKNOWLEDGED = "fault_acknowledged"
FAULT_CLEARED = "fault_cleared"

FAULT_KINDS: frozenset[str] = frozenset(
    {
        "dead_hand",
        "red_light",
        "past_posting",
        "over_limit_raise",
        "device_lost",
        "journal_error",
        "security_event",
        "shuffler_fault",
        "deck_verification",
        "integrity",
    }
)
FAULT_SEVERITIES: frozenset[str] = frozenset({"alert", "latching"})

_ROUND_ID = re.compile(r"^R(?P<table>.+)-(?P<day>\d{8})-(?P<n>\d{6,})$")


def format_round_id(table_id: str, day: date, number: int) -> str:
    """``R{table_id}-{YYYYMMDD}-{n:06d}``: n counts the rounds in the journal, so ids are unique."""
    return f"R{table_id}-{day:%Y%m%d}-{number:06d}"


def round_number(round_id: str) -> int | None:
    """The n of a round id, or None when it is not one."""
    match = _ROUND_ID.match(round_id)
    return int(match["n"]) if match else None
