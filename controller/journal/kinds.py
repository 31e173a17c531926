"""Names of entry kinds that readers test for and the entries that close a round (round ids, fault kinds
and the other shared names: controller/names.py).

The kinds themselves, with their fields, are the classes of controller/journal/entries/."""

from __future__ import annotations

ENTRY_SCHEMA_VERSION = 2
"""The version every kind is written at today (1 was the untyped journal of dicts). Here, below the
typed entries (controller/journal/entries/ re-exports it), so a reader of today's rows knows their
version without loading the classes (issue 28)."""


def newer_entry_words(kind: str, version: int) -> str:
    """The refusal of an entry written by a newer release than this one: the replay's words
    (controller/journal/upcast.py) and the views' (controller/journal/rows.py ``stored_view``), one text
    so the two readers refuse a row alike."""
    return (
        f"journal: {kind}: entry version {version}, written by a newer release than this one "
        f"(reads up to {ENTRY_SCHEMA_VERSION})"
    )


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

METER_KINDS: tuple[str, ...] = (
    ROUND_STARTED,
    ROUND_SETTLED,
    ROUND_DEAD,
    ROUND_VOIDED,
    FAULT_RAISED,
    FAULT_CLEARED,
)
"""The kinds that move a meter: the one meters fold (controller/journal/state_parts.py ``Meters.count``)
counts these and no other; the reducer's fold, a range's, the stored totals read only them."""

CLOCK_STEPPED = "clock_stepped"
"""The journal's own entry when the wall clock went back behind its last time (store.Journal)."""
PROGRESSIVE_PARAMETERS_CHANGED = "progressive_parameters_changed"
PROGRESSIVE_CONTRIBUTION = "progressive_contribution"
PROGRESSIVE_OVERFLOW = "progressive_overflow"
PROGRESSIVE_AWARD_CLAIMED = "progressive_award_claimed"
PROGRESSIVE_AWARD_PAID = "progressive_award_paid"
PROGRESSIVE_RESET = "progressive_reset"
PROGRESSIVE_RESERVE = "progressive_reserve"
PROGRESSIVE_KINDS: frozenset[str] = frozenset(
    {
        PROGRESSIVE_PARAMETERS_CHANGED,
        PROGRESSIVE_CONTRIBUTION,
        PROGRESSIVE_OVERFLOW,
        PROGRESSIVE_AWARD_CLAIMED,
        PROGRESSIVE_AWARD_PAID,
        PROGRESSIVE_RESET,
        PROGRESSIVE_RESERVE,
    }
)
"""The progressive controller's entries (controller/progressive/): its stand-alone store's records."""

SOFTWARE_VERIFIED = "software_verified"
SOFTWARE_CHECKED = "software_checked"

SEAT_KILLED = "seat_killed"
DIFFERENCE_ACCEPTED = "difference_accepted"
LEGACY_OPERATOR_ACTION = "operator_action"
"""The one kind releases up to 9254278 wrote for every operator action: read as today's kinds
(controller/journal/upcast.py), so a reader of stored rows asks for it beside them."""
