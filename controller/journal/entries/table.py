"""The table's own entries: opened and closed, the release verified, the round machine's states, the
button and the designated player, the dealer's keys."""

from __future__ import annotations

import msgspec

from controller.journal.entries.base import (
    Entry,
)


class TableOpened(Entry, frozen=True, tag="table_opened"):
    game: str
    banking_mode: str
    config_digest: str
    by: str


class TableClosed(Entry, frozen=True, tag="table_closed"):
    by: str
    reason: str  # a person's words, or the daemon's ("shutdown")


class SoftwareVerified(Entry, frozen=True, tag="software_verified"):
    """At start, before the table opens: the signed release everything that runs was checked against
    (controller/software/). Written only when the start verified a release."""

    release: str
    release_digest: str  # SHA-256 of the signed manifest's canonical bytes
    development: bool  # a development release (`make run`), never a live table's
    key_id: str  # the first 16 hex digits of the SHA-256 of the public key that verified it
    files: int
    dependencies: int


class SoftwareChecked(Entry, frozen=True, tag="software_checked"):
    """A seeded verification answered (`flushtable verify-software`, the floor's request): the seed is
    the verifier's, the aggregate is HMAC-SHA256 over every product file that runs here."""

    seed: str  # hex
    aggregate: str  # hex
    files: int
    requested_by: str  # the floor's requester, or "cli"


class StateChanged(Entry, frozen=True, tag="state_changed"):
    machine: str
    from_state: str = msgspec.field(name="from")
    to: str
    trigger: str


class ButtonMoved(Entry, frozen=True, tag="button_moved"):
    from_seat: int | None
    to_seat: int
    reason: str
    by: str
    funds_cents: int | None = None


class DpWaived(Entry, frozen=True, tag="dp_waived"):
    seat: int


class DealerKey(Entry, frozen=True, tag="dealer_key"):
    key: str
    seat: int | None
