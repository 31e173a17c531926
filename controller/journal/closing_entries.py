"""The entries that close a round, as classes, for the readers that fold typed entries (the floor's
gaming day, the daemon's run summary). Not in controller/journal/entries/, where a kind's class is listed
once (the registry); the meters' one fold (controller/journal/state_parts.py ``Meters.count``) reads
them by kind, so that recall's views fold alike."""

from __future__ import annotations

from controller.journal import entries as e

ClosingEntry = e.RoundSettled | e.RoundDead | e.RoundVoided
CLOSING_ENTRIES = (e.RoundSettled, e.RoundDead, e.RoundVoided)
