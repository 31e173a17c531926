"""What people did at the table (docs/operations.md): refusals, seats killed, voids ordered,
differences accepted, devices reset, limits and paytables set, panel requests, notes, logins; and the
catch-all ``operator_action`` of earlier releases, read and renamed (controller/journal/upcast.py)."""

from __future__ import annotations

from typing import Any, ClassVar

from controller.journal.entries.base import (
    Entry,
    Part,
)


class ActionRefusedPrivate(Part, frozen=True):
    refusal_detail: str  # a refusal's reason that speaks of a hand (a decision's limit): private until reveal


# An operator's action is journaled as what it did, one kind each (the engine's records), and the
# panel's request as its own kind (``panel_request``). Releases up to 9254278 wrote all of them as one
# ``operator_action``: ``OperatorAction`` below reads those, and controller/journal/upcast.py maps each
# to the kind it is today (docs/journal.md "Versions and upcasting").


class ActionRefused(Entry, frozen=True, tag="action_refused"):
    """An operator's action the engine refused: nothing changed. ``reason`` is what the operator was
    told; a reason that speaks of a hand is private (``refusal_detail``) until the round's reveal."""

    action: str
    by: str
    reason: str
    private: ActionRefusedPrivate | None = None
    PRIVATE: ClassVar[type[Part] | None] = ActionRefusedPrivate


class SeatKilled(Entry, frozen=True, tag="seat_killed"):
    """A supervisor killed one seat's hand (its ``dead_hand`` follows), or, while betting was open,
    excluded the seat from the round (``excluded``: its chips go back, it is dealt no hand)."""

    seat: int
    by: str
    reason: str
    excluded: bool = False
    requested_by: str | None = None  # the dealer's request it answers ("dealer"), if any


class VoidOrdered(Entry, frozen=True, tag="void_ordered"):
    """A supervisor's order to void the round (its ``round_voided`` follows when a round was open)."""

    by: str
    reason: str


class DifferenceAccepted(Entry, frozen=True, tag="difference_accepted"):
    """A supervisor accepted a past-posted spot's difference from its locked wager (docs/rules.md):
    ``spot`` says what it reads and what the round holds; the round keeps its locked wager."""

    fault_id: str
    by: str
    reason: str
    spot: str


class DeviceReset(Entry, frozen=True, tag="device_reset"):
    """A device left in fault reset on a supervisor's release of the table (their action)."""

    device: str
    by: str
    reason: str


class LimitsSet(Entry, frozen=True, tag="limits_set"):
    """A manager's table limits: ``before`` and ``after`` as ``LimitsShape`` holds them; made against
    the configuration of ``config_digest`` (a restart restores them only on that file)."""

    by: str
    after: dict[str, Any]
    before: dict[str, Any] | None = None
    config_digest: str | None = None


class PaytableSet(Entry, frozen=True, tag="paytable_set"):
    """A manager's paytable of one bonus wager: a preset's name or custom lines."""

    wager: str
    by: str
    after: dict[str, Any] | str
    before: dict[str, Any] | str | None = None
    config_digest: str | None = None


class PanelRequest(Entry, frozen=True, tag="panel_request"):
    """The panel's record of a request: the user, the request's fields (``request``) and its
    ``outcome`` ("done", "refused: …", "proposed C…"). What the engine did is its own entry."""

    action: str
    by: str
    request: dict[str, Any]
    outcome: str


class OperatorNote(Entry, frozen=True, tag="operator_note"):
    """An earlier release's ``operator_action`` that no kind of today describes (its words kept as
    written). Never written by this release."""

    action: str
    by: str
    detail: str


class OperatorAction(Entry, frozen=True, tag="operator_action"):
    """Read only: the one kind releases up to 9254278 wrote for every operator action (not in
    ``EntryType``: refused to writers). controller/journal/upcast.py ``operator_action_entry`` maps each
    to today's kind."""

    action: str
    by: str
    detail: str | dict[str, Any]
    outcome: str | None = None
    before: dict[str, Any] | str | None = None
    after: dict[str, Any] | str | None = None
    wager: str | None = None
    config_digest: str | None = None
    private: ActionRefusedPrivate | None = None
    PRIVATE: ClassVar[type[Part] | None] = ActionRefusedPrivate


class Login(Entry, frozen=True, tag="login"):
    user: str
    role: str
    remote: str  # the connection's peer
    forwarded_for: str | None = None  # the client a trusted proxy named (docs/panel.md "Proxies")


class LoginFailed(Entry, frozen=True, tag="login_failed"):
    user: str
    remote: str  # the connection's peer
    reason: str
    forwarded_for: str | None = None  # the client a trusted proxy named (docs/panel.md "Proxies")
