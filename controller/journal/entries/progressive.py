"""The progressive's entries (controller/progressive/, docs/rules.md "Progressive: the controller"),
and the linked progressive's answers at the table."""

from __future__ import annotations

from typing import Any, Literal

from controller.journal.entries.base import (
    Entry,
)


class ProgressiveRefusedAtLock(Entry, frozen=True, tag="lock_refused_progressive"):
    """The round's Progressive wagers refused at the lock (the meter could not take them)."""

    by: str
    reason: str


class LinkedClaimAnswered(Entry, frozen=True, tag="linked_claim_answered"):
    """A linked table's record that the floor answered the round's progressive claim (the round's own
    entry: a restart asks again every claim of its journal without one)."""

    by: str
    answer: str


class LinkedConfirmationSent(Entry, frozen=True, tag="linked_confirmation_sent"):
    """A supervisor's confirmation that a linked award was paid, sent to the floor (which records it)."""

    by: str
    message: str
    award_id: str | None = None  # None: an earlier release's record, whose words name it


# Every entry names its meter (``meter_id``: the table's id stand-alone, the link's name when linked),
# and the table and round it is about: the same entries are the stand-alone store's records and the
# events the meter model folds (controller/progressive/model.py), so a restart restores the meter from
# them exactly. They are public: a claim is made after the round's reveal, and a hit names no card.


class ProgressiveParametersChanged(Entry, frozen=True, tag="progressive_parameters_changed"):
    """The meter's parameters set (the first one opens the meter at its base) or changed by a manager
    between rounds. ``after``: ``ProgressiveParameters.to_json``; ``before`` None at the opening."""

    meter_id: str
    by: str
    after: dict[str, Any]
    before: dict[str, Any] | None = None
    reason: str = ""


class ProgressiveContribution(Entry, frozen=True, tag="progressive_contribution"):
    """One round's settled Progressive wagers at one table: the in-meter (``wagers`` x ``unit_cents``),
    what went to the meter and to the reserve (hidden). What passed the limit is the progressive_overflow
    written with it. Keyed by (table, round): a round contributes once."""

    meter_id: str
    table_id: str
    round_id: str
    wagers: int
    unit_cents: int
    in_meter_cents: int
    increment_cents: int
    to_meter_cents: int
    hidden_cents: int
    meter_after_cents: int
    reserve_after_cents: int


class ProgressiveOverflow(Entry, frozen=True, tag="progressive_overflow"):
    """The part of a contribution's increment past the meter's limit: to the overflow meter, which
    feeds the reserve."""

    meter_id: str
    table_id: str
    round_id: str
    overflow_cents: int
    reserve_after_cents: int


class ProgressiveAwardClaimed(Entry, frozen=True, tag="progressive_award_claimed"):
    """A hit recorded by the controller: its amount frozen at once (the jackpot lock); a meter award's
    meter before and after (the re-seed is the progressive_reset written with it). ``claim_number``:
    the order the controller recorded it in (awards are paid in that order). ``needs_confirmation``: a
    meter award or one over the sign-off amount waits for a supervisor (progressive_award_paid)."""

    meter_id: str
    award_id: str
    claim_number: int
    table_id: str
    round_id: str
    seat: int
    line: int
    award: int | dict[str, int | float]  # units paid for one, or {"meter_share_percent": N}
    amount_cents: int
    paid_from: Literal["meter", "house"]
    needs_confirmation: bool
    meter_before_cents: int | None = None
    meter_after_cents: int | None = None
    shared_by: int = 1


class ProgressiveAwardPaid(Entry, frozen=True, tag="progressive_award_paid"):
    """An award paid: a fixed one in its round (by the engine), any other once a supervisor confirmed."""

    meter_id: str
    award_id: str
    table_id: str
    round_id: str
    seat: int
    amount_cents: int
    by: str


class ProgressiveReset(Entry, frozen=True, tag="progressive_reset"):
    """The meter re-seeded at once after the 100% level was claimed: the reserve gave what it held,
    the house added the rest (recorded)."""

    meter_id: str
    table_id: str
    round_id: str
    amount_cents: int
    from_reserve_cents: int
    house_added_cents: int
    reserve_after_cents: int


class ProgressiveReserve(Entry, frozen=True, tag="progressive_reserve"):
    """A manager's movement of the reserve outside play: ``amount_cents`` added by the house (positive)
    or taken back by it (negative, never below 0), with the reason."""

    meter_id: str
    amount_cents: int
    reason: str
    by: str
    reserve_after_cents: int
