"""Regulatory controls: the clock measured and stepped, the configuration checked, and the two-person
changes (docs/operations.md "Regulatory controls")."""

from __future__ import annotations

from typing import Any

from controller.journal.entries.base import (
    Entry,
)


class ClockOffset(Entry, frozen=True, tag="clock_offset"):
    """The table's clock measured against the floor's time source (at start and every check interval).
    ``offset_us``: the source's time minus the table's (positive: the table is behind); None when the
    source could not be read (``error`` says why)."""

    source: str  # "sntp://host:port"
    offset_us: int | None
    delay_us: int | None  # the round trip the measurement took, less the source's own time
    bound_us: int  # past this |offset| the alert is raised
    within_bound: bool
    table_time_utc: str  # the table's clock when the answer came
    error: str | None = None


class ClockStepped(Entry, frozen=True, tag="clock_stepped"):
    """The wall clock went back behind the journal's last time: the journal keeps its last time for its
    entries (times never go backwards) until the wall clock passes it again. Written once per step,
    in the same commit as the first entry that held the journal's time."""

    wall_clock_utc: str  # what the wall clock said
    journal_time_utc: str  # the time the journal kept
    step_back_us: int


class ConfigChecked(Entry, frozen=True, tag="config_checked"):
    """At every start: the configuration's digests and what changed since the last start. A change with
    no approved ``config_file`` change behind it raises a ``config_changed`` alert."""

    source: str  # the file's name, or "<default>"
    file_sha256: str | None  # the file's bytes (None: the embedded default)
    config_digest: str  # the effective configuration (table_opened's config_digest)
    previous_file_sha256: str | None  # the last start's (None: the first start of this journal)
    previous_config_digest: str | None
    settings: dict[str, Any]  # the effective configuration flattened ("limits.max_ante_cents": 10000)
    changed: list[str]  # "limits.max_ante_cents: 10000 -> 20000", one per setting that changed
    approved_change: str | None = None  # the change_id of the approved config_file change it matches
    unapproved: bool = False  # changed on disk without an approved change: the alert was raised


class ChangeProposed(Entry, frozen=True, tag="change_proposed"):
    """A manager proposes a change of a money setting; it takes effect only when a second, different
    manager approves it, between rounds, before ``lapses_utc``."""

    change_id: str
    change_kind: str  # a kind of controller/changes.py's registry: limits, bonus_limit, paytable, ...
    params: dict[str, Any]
    summary: str  # the change in words
    by: str
    reason: str
    lapses_utc: str


class ChangeApproved(Entry, frozen=True, tag="change_approved"):
    """A second manager approved: the change is applied in the same commit (the engine's own record
    of the setting beside this one), or at the next start for a ``config_file`` change."""

    change_id: str
    change_kind: str
    proposed_by: str
    by: str
    summary: str


class ChangeLapsed(Entry, frozen=True, tag="change_lapsed"):
    """Nobody approved in time: the proposal never applies."""

    change_id: str
    change_kind: str
    proposed_by: str
    lapses_utc: str


class ChangeRefused(Entry, frozen=True, tag="change_refused"):
    """A proposal rejected by a manager (``closed``: it never applies), or an approval or proposal the
    table refused (self-approval, lapsed, a round in play, a setting the engine refuses): ``closed``
    says whether the proposal still stands."""

    change_id: str | None
    by: str
    reason: str
    closed: bool
