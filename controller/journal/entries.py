"""The journal's entries, typed: one class per kind, each with a public part and a private part.

This module is the contract (docs/journal.md documents every kind; docs/journal-entries.schema.json is
generated from these classes). Every entry is a msgspec ``Struct`` tagged by its ``kind``; its fields
are the **public part**, and the field ``private`` (a Struct of its own, or None) is the **private
part**: everything that reveals a card — card codes and numbers, the position and index a card was
dealt to, a device's own words about a card, a hand's strength before the reveal. Which field is
private is said by the type, not found later by scrubbing text.

The chain hashes the public part and a salted digest of the private part (``commitment``), so a reader
that holds only public parts still verifies every link, and a private part published later is checked
against its commitment (cards have too few values for a bare hash: the salt makes the digest useless
for guessing).

Why msgspec Structs and not frozen dataclasses: bench/bench_journal.py measures both for the same
entries (decode of a stored public part into its class, and encode back); msgspec decodes JSON straight
into the typed object with validation, which a dataclass needs a second pass (json.loads, then a
constructor per kind) to do. The figures are in docs/journal.md "Measured".
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_args

import msgspec

from controller.journal.chain import canonical_json

ENTRY_SCHEMA_VERSION = 2
"""The version every kind is written at today (1 was the untyped journal of dicts)."""

SALT_BYTES = 16


class Part(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """A private part: the fields of an entry a viewer sees only after the round's reveal."""

    def positions(self) -> frozenset[int]:
        """The dealt positions this part is about: if any of them is a dead hand, the part is never
        shown (docs/rules.md: a dead hand's cards are never shown)."""
        return frozenset()


class Entry(msgspec.Struct, frozen=True, kw_only=True, tag_field="entry_kind", forbid_unknown_fields=True):
    """The base of every kind. Subclasses declare their public fields, and ``private`` where they have
    a private part (always optional: a public-only reader holds the entry without it)."""

    VERSION: ClassVar[int] = ENTRY_SCHEMA_VERSION
    PRIVATE: ClassVar[type[Part] | None] = None

    @property
    def kind(self) -> str:
        return str(self.__struct_config__.tag)

    def private_part(self) -> Part | None:
        value = getattr(self, "private", None)
        return value if isinstance(value, Part) else None


# --- structured reasons -------------------------------------------------------------------------

ReasonCode = Literal[
    # the deal (docs/rules.md "Dead hands and walk-aways")
    "card_repeated",  # a card reported twice in one deal
    "card_misread",  # one index reported as two different cards
    "card_count",  # a hand dealt the wrong number of cards
    "extra_card",  # a card beyond the requested count
    "card_out_of_order",  # an index skipped
    "card_outside_round",  # a card or hand for a position not in the round, or outside a deal
    "red_light",  # the shoe's fault lamp during the deal
    "shoe_fault",  # any other fault the shoe reports (its own words are private)
    "shoe_refused",  # the shoe refused a command
    "deck_verification",  # the shuffled deck did not verify
    "not_covered",  # a designated player's bank cannot cover the seat
    # wagers and decisions
    "over_limit",  # a decision wager over its limit
    "under_limit",  # a decision wager under its limit
    "past_posting",  # chips changed on a locked spot
    "sensor_report_refused",  # a bet sensor report that cannot be a wager
    # devices and the controller
    "device_lost",
    "security_event",
    "engine_error",
    "unknown_event",
    "clock_offset",  # the clock watch: the table's clock off the floor's time source past its bound
    "config_changed",  # the configuration changed on disk without an approved change
    "integrity_check",  # the integrity watch: the recalled rounds' cards or returns fail the statistics
    "operator",  # raised or decided by a person: the text is theirs
]


class Reason(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """Why: a code and a message for people built by the engine from public values only (seats,
    amounts, devices, counts) — never from a card."""

    code: ReasonCode
    message: str
    seat: int | None = None


class ReasonDetail(Part, frozen=True):
    """The private side of a reason: what the shoe said about which card, where."""

    message: str | None = None  # the full text, with its cards: for the audit, never for a viewer
    card: int | None = None  # the card number (0..51), as the shoe reported it
    position: int | None = None
    index: int | None = None
    first_position: int | None = None
    first_index: int | None = None
    device_detail: str | None = None  # the device's own words: they may name a card

    def positions(self) -> frozenset[int]:
        return frozenset(p for p in (self.position, self.first_position) if p is not None)


# --- the table ----------------------------------------------------------------------------------


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
    (controller/software.py). Written only when the start verified a release."""

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


class NoiseSuppressed(Entry, frozen=True, tag="noise_suppressed"):
    """Past a source's budget, noisy entries (failed logins, refused actions, forged frames) are
    counted instead of journaled one by one; this carries the count (docs/journal.md "Noise")."""

    category: str
    source: str
    count: int
    first_time_utc: str
    last_time_utc: str
    distinct_sources: int | None = None  # the "(other sources)" bucket: how many sources it holds
    distinct_sources_capped: bool = False  # more sources came than were counted


# --- devices ------------------------------------------------------------------------------------


class DeviceReady(Entry, frozen=True, tag="device_ready"):
    device: str
    kind_of_device: str = msgspec.field(name="kind")
    model: str
    serial_number: str
    firmware_version: str


class DeviceLost(Entry, frozen=True, tag="device_lost"):
    device: str
    reason: str


class DeviceStatus(Entry, frozen=True, tag="device_status"):
    device: str
    state: str
    fault_code: int
    lamp: str


class SecurityEvent(Entry, frozen=True, tag="security_event"):
    device: str
    reason: str
    detail: str


# --- the round ----------------------------------------------------------------------------------


class RoundStarted(Entry, frozen=True, tag="round_started"):
    round_id: str
    game: str
    banking: dict[str, Any]
    seats: list[int]
    button_seat: int | None = None


class BetChanged(Entry, frozen=True, tag="bet_changed"):
    seat: int
    wager: str
    amount_cents: int
    chip_count: int
    locked: bool


class BetsLocked(Entry, frozen=True, tag="bets_locked"):
    wagers: dict[str, dict[str, int]]  # seat (as text) -> wager -> cents


class PastPosting(Entry, frozen=True, tag="past_posting"):
    seat: int
    wager: str
    locked_cents: int
    seen_cents: int


class DeckVerifiedPrivate(Part, frozen=True):
    missing: list[str]  # card codes
    extra: list[str]


class DeckVerified(Entry, frozen=True, tag="deck_verified"):
    card_count: int
    missing_count: int
    extra_count: int
    private: DeckVerifiedPrivate | None = None
    PRIVATE: ClassVar[type[Part] | None] = DeckVerifiedPrivate


class CardDealtPrivate(Part, frozen=True):
    position: int
    index: int
    card: str | None  # the card's code, e.g. "Qd"; None: the shoe reported a number that is no card

    def positions(self) -> frozenset[int]:
        return frozenset((self.position,))


class CardDealt(Entry, frozen=True, tag="card_dealt"):
    """A card the shoe dealt: all of it is private (which card, and where it went)."""

    private: CardDealtPrivate | None = None
    PRIVATE: ClassVar[type[Part] | None] = CardDealtPrivate


class HandComplete(Entry, frozen=True, tag="hand_complete"):
    position: int
    card_count: int


class Decision(Entry, frozen=True, tag="decision"):
    seat: int
    action: str
    amount_cents: int
    street: str | None
    cause: str


class DecisionRefusedPrivate(Part, frozen=True):
    limit_detail: str  # the limit and why (it speaks of the hand: "exactly 25.00 with a 3-card flush")


class DecisionRefused(Entry, frozen=True, tag="decision_refused"):
    seat: int
    action: str
    amount_cents: int
    reason: Reason
    private: DecisionRefusedPrivate | None = None
    PRIVATE: ClassVar[type[Part] | None] = DecisionRefusedPrivate


KillRequestStatus = Literal["requested", "confirmed", "rejected", "lapsed"]


class KillSeatRequest(Entry, frozen=True, tag="kill_seat_request"):
    """The dealer's request to kill one seat's hand (the display's kill_seat key) and what became of it:
    ``requested`` (by the dealer), then ``confirmed`` or ``rejected`` (by the supervisor, with a reason;
    a confirmation comes after the kill's seat_killed and dead_hand) or ``lapsed`` (by
    the engine: the decisions closed or the round ended first). ``request_number``: the request's
    number in its round (1, 2, ...), on the request and on what became of it; an answer names it.
    Optional: absent in entries written before requests were numbered; such a request's number is its
    order among its round's requests, counted by the reducer (the engine numbers them the same way)."""

    seat: int
    status: KillRequestStatus
    by: str
    requested_by: str | None = None
    reason: str | None = None
    request_number: int | None = None


class DeadHand(Entry, frozen=True, tag="dead_hand"):
    """A seat (or, with seat None, the whole round) is dead."""

    seat: int | None
    reason: Reason
    private: ReasonDetail | None = None
    PRIVATE: ClassVar[type[Part] | None] = ReasonDetail


class RoundSettledPrivate(Part, frozen=True):
    round: dict[str, Any]  # the settle input (docs/settle.md): every live hand's cards
    hands: dict[str, Any]  # {"dealer": hand | None, "seats": {seat: hand}}: the settlement's hands


class RoundSettled(Entry, frozen=True, tag="round_settled"):
    """The reveal. ``settlement`` is the settle output without its hands (they name cards): they are in
    the private part with the round's cards, shown once this entry is committed (the round is revealed),
    but a dead seat's cards are never in it (its cards are [] in the round). ``bank_by_seat``
    (designated player, written since issue 13; absent before): the bank after the losers are collected
    and after each seat is paid, in action order (controller.rules.settle.bank_by_seat): not part of
    the settle output, whose contract is unchanged."""

    settlement: dict[str, Any]
    bank_by_seat: dict[str, Any] | None = None
    private: RoundSettledPrivate | None = None
    PRIVATE: ClassVar[type[Part] | None] = RoundSettledPrivate


class RoundDead(Entry, frozen=True, tag="round_dead"):
    """A dead round: every wager returned. ``round`` carries no cards (a dead hand's are never shown)."""

    round: dict[str, Any]
    settlement: dict[str, Any]
    reason: Reason
    private: ReasonDetail | None = None
    PRIVATE: ClassVar[type[Part] | None] = ReasonDetail


class RoundVoided(Entry, frozen=True, tag="round_voided"):
    round: dict[str, Any]
    settlement: dict[str, Any]
    reason: str  # the supervisor's words, or recovery's
    by: str


# --- faults -------------------------------------------------------------------------------------


class FaultRaised(Entry, frozen=True, tag="fault_raised"):
    fault_id: str
    kind_of_fault: str = msgspec.field(name="kind")
    severity: str
    device: str | None
    reason: Reason
    by: str | None = None  # who raised it, when not the engine itself (the integrity watch)
    private: ReasonDetail | None = None
    PRIVATE: ClassVar[type[Part] | None] = ReasonDetail


class FaultAcknowledged(Entry, frozen=True, tag="fault_acknowledged"):
    fault_id: str
    by: str


class FaultCleared(Entry, frozen=True, tag="fault_cleared"):
    fault_id: str
    by: str
    reason: str


# --- regulatory controls: the clock and two-person changes (docs/operations.md "Regulatory controls") --


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


# --- the progressive (controller/progressive/, docs/rules.md "Progressive: the controller") ----------
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


EntryType = (
    TableOpened
    | TableClosed
    | SoftwareVerified
    | SoftwareChecked
    | StateChanged
    | ActionRefused
    | SeatKilled
    | VoidOrdered
    | DifferenceAccepted
    | DeviceReset
    | LimitsSet
    | PaytableSet
    | ProgressiveRefusedAtLock
    | LinkedClaimAnswered
    | LinkedConfirmationSent
    | PanelRequest
    | OperatorNote
    | ButtonMoved
    | DpWaived
    | DealerKey
    | Login
    | LoginFailed
    | NoiseSuppressed
    | DeviceReady
    | DeviceLost
    | DeviceStatus
    | SecurityEvent
    | RoundStarted
    | BetChanged
    | BetsLocked
    | PastPosting
    | DeckVerified
    | CardDealt
    | HandComplete
    | Decision
    | DecisionRefused
    | KillSeatRequest
    | DeadHand
    | RoundSettled
    | RoundDead
    | RoundVoided
    | FaultRaised
    | FaultAcknowledged
    | FaultCleared
    | ClockOffset
    | ClockStepped
    | ConfigChecked
    | ChangeProposed
    | ChangeApproved
    | ChangeLapsed
    | ChangeRefused
    | ProgressiveParametersChanged
    | ProgressiveContribution
    | ProgressiveOverflow
    | ProgressiveAwardClaimed
    | ProgressiveAwardPaid
    | ProgressiveReset
    | ProgressiveReserve
)

# The registry, written once: the union above lists every kind; the classes are read from it (a class
# not in the union is no kind, and is refused by every decoder).
ENTRY_CLASSES: tuple[type[Entry], ...] = get_args(EntryType)
CLASS_BY_KIND: dict[str, type[Entry]] = {str(cls.__struct_config__.tag): cls for cls in ENTRY_CLASSES}
KINDS: frozenset[str] = frozenset(CLASS_BY_KIND)


# One decoder per kind for the public part alone, and per private part type: each made the first time
# its kind is read, then kept (the replay's hot path decodes each stored text straight into its class).
# Not all at import: a decoder resolves its class's annotations, ~60 kinds' worth of them, and a reader
# such as `flushtable recall` meets a dozen kinds (issue 28: recall starts in a few times a bare
# interpreter's time; docs/operations.md).
@functools.cache
def _public_decoder(kind: str) -> msgspec.json.Decoder[Any] | None:
    cls = CLASS_BY_KIND.get(kind)
    return None if cls is None else msgspec.json.Decoder(cls)


@functools.cache
def _private_decoder(kind: str) -> msgspec.json.Decoder[Any] | None:
    """A stored private part is {"part": ..., "salt": ...}: decoded in one pass into its part's class."""
    cls = CLASS_BY_KIND.get(kind)
    if cls is None or cls.PRIVATE is None:
        return None
    return _sealed_decoder(kind, cls.PRIVATE)


def _sealed_decoder(kind: str, private: type[Part]) -> msgspec.json.Decoder[Any]:
    """The decoder of a kind's stored private text, ``{"part": ..., "salt": ...}``, into its part."""
    sealed = msgspec.defstruct(
        f"Sealed_{kind}", [("part", private), ("salt", str)], forbid_unknown_fields=True
    )
    return msgspec.json.Decoder(sealed)


_BUILTINS_ENCODER = msgspec.json.Encoder()

# Kinds of earlier releases that no writer uses today: read by their own class (not in ``EntryType``, so
# no writer can write them), then mapped to today's kind by controller/journal/upcast.py. The chain
# covers the row as written (its kind included): mapping it never changes what verifies.
RENAMED_KINDS: dict[str, type[Entry]] = {"operator_action": OperatorAction}
CLASS_BY_STORED_KIND: dict[str, type[Entry]] = {**CLASS_BY_KIND, **RENAMED_KINDS}
"""Every kind a stored row may carry (a journal, the uplink's messages, the floor's rows): today's and the
renamed ones, each with the class its row is decoded into first."""
_RENAMED_PUBLIC_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    kind: msgspec.json.Decoder(cls) for kind, cls in RENAMED_KINDS.items()
}
_RENAMED_PRIVATE_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    kind: _sealed_decoder(kind, cls.PRIVATE) for kind, cls in RENAMED_KINDS.items() if cls.PRIVATE is not None
}


def _renamed(legacy: Entry) -> Entry:
    """An entry of a renamed kind as today's entry (upcast.py; it imports this module)."""
    from controller.journal.upcast import renamed_entry  # noqa: PLC0415 - upcast.py imports this module

    return renamed_entry(legacy)


class EntryError(ValueError):
    """An entry that does not fit its kind's type: a bug in the writer, or a foreign journal."""


# --- the shapes inside the free-form fields -------------------------------------------------------
# Some public fields are JSON objects typed only as ``dict[str, Any]`` above (a settlement, a round's
# banking, a manager's limits): their classes are what journals have always held, so tightening them
# would refuse journals already written (the chain covers the bytes as written). A reader that takes
# entries from outside - the floor, where a table's credentials can extend its own unkeyed chain with any
# payload - checks them against these shapes too (``check_shapes``), so that the one reducer never meets
# a value it does not expect. Unknown fields are allowed in them (the settle output grows: odds,
# shortfall, rake lines...); every field a reader uses is typed, and amounts are bounded so that a
# round's sums fit the floor's bigint columns.

MAX_SHAPE_AMOUNT_CENTS = 10**15  # ten trillion dollars: any real amount
# A round's amounts summed (their absolute values): its handle and house win are bigint columns of the
# floor's rounds, and a seat may hold any number of wagers. PostgreSQL's out-of-range error would be the
# floor's own write failing (retried for ever, every table frozen), so the message is refused instead.
MAX_SHAPE_ROUND_SUM_CENTS = 10**18  # below 2**63 (about 9.2e18)
Amount = Annotated[int, msgspec.Meta(ge=-MAX_SHAPE_AMOUNT_CENTS, le=MAX_SHAPE_AMOUNT_CENTS)]
SeatNumber = Annotated[int, msgspec.Meta(ge=0, le=10**6)]


class WagerOutcomeShape(msgspec.Struct, frozen=True):
    """One wager of a seat in a settlement (the settle output's ``WagerResult.to_json``)."""

    stake: Amount = 0
    result: str | None = None
    net: Amount = 0


class SeatOutcomeShape(msgspec.Struct, frozen=True):
    """One seat of a settlement (``SeatResult.to_json``, or a void's or dead round's seat)."""

    seat: SeatNumber
    status: str | None = None
    wagers: dict[str, WagerOutcomeShape] | None = None
    rake: Amount = 0
    net: Amount = 0


class DealerOutcomeShape(msgspec.Struct, frozen=True):
    qualifies: bool | None = None


class SettlementShape(msgspec.Struct, frozen=True):
    """A closing entry's public settlement, as the reducer's meters and the floor's rounds read it."""

    game: str | None = None
    banking: str = "house"
    dead: bool | None = None
    dealer: DealerOutcomeShape | None = None
    seats: list[SeatOutcomeShape] = msgspec.field(default_factory=list)
    banker_net: Amount = 0
    rake: Amount = 0


class BankingShape(msgspec.Struct, frozen=True):
    """A round's banking (``round_started.banking``)."""

    mode: str = "house"
    seat: SeatNumber | None = None


class LimitsShape(msgspec.Struct, frozen=True):
    """A manager's limits (``limits_set.after``), as the reducer restores it."""

    min_ante_cents: Amount
    max_ante_cents: Amount
    max_bonus_cents: dict[str, Amount] | None = None
    own_max_bonus_cents: dict[str, Amount] | None = None


_ShapeT = TypeVar("_ShapeT", bound=msgspec.Struct)


def _shape(value: Any, shape: type[_ShapeT], where: str) -> _ShapeT:
    try:
        return msgspec.convert(value, shape)
    except msgspec.ValidationError as error:
        raise EntryError(f"journal: {where}: {error}") from None


def _settlement_sum_cents(settlement: SettlementShape) -> int:
    """Every amount of a settlement, as absolute values, summed: a bound on any of the round's sums."""
    total = abs(settlement.banker_net) + abs(settlement.rake)
    for seat in settlement.seats:
        total += abs(seat.net) + abs(seat.rake)
        for wager in (seat.wagers or {}).values():
            total += abs(wager.stake) + abs(wager.net)
    return total


def check_shapes(entry: Entry) -> None:
    """Check the free-form fields the readers use against their shapes above: EntryError (one line) if
    one does not fit. For readers of entries from outside (the floor); the table's own journal needs no
    second check, its writer is the engine."""
    if isinstance(entry, RoundSettled | RoundDead | RoundVoided):
        where = f"{entry.kind}.settlement"
        settlement = _shape(entry.settlement, SettlementShape, where)
        if _settlement_sum_cents(settlement) > MAX_SHAPE_ROUND_SUM_CENTS:
            raise EntryError(f"journal: {where}: its amounts sum past {MAX_SHAPE_ROUND_SUM_CENTS} cents")
    elif isinstance(entry, RoundStarted):
        _shape(entry.banking, BankingShape, "round_started.banking")
    elif isinstance(entry, BetsLocked):
        for seat in entry.wagers:
            if not seat.isdigit() or len(seat) > 7:
                raise EntryError(f"journal: bets_locked.wagers: seat {seat[:20]!r} is not a seat number")
    elif isinstance(entry, LimitsSet):
        _shape(entry.after, LimitsShape, "limits_set.after")
    elif entry.kind.startswith("progressive_"):
        # The progressive's entries (controller/progressive/model.py folds them): every amount bounded
        # like a settlement's, so a meter's sums fit the floor's bigint columns.
        for field in msgspec.structs.fields(type(entry)):
            value = getattr(entry, field.name)
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SHAPE_AMOUNT_CENTS:
                raise EntryError(f"journal: {entry.kind}.{field.encode_name}: {value} is past any amount")


# The names as stored, read off each class's own tuple of them (msgspec.structs.fields would resolve
# every annotation of ~60 classes at import, a third of this module's cost on every reader's start).
def _public_fields(cls: type[Entry]) -> frozenset[str]:
    return frozenset(name for name in cls.__struct_encode_fields__ if name != "private")


def _private_fields(cls: type[Entry]) -> frozenset[str]:
    if cls.PRIVATE is None:
        return frozenset()
    return frozenset(cls.PRIVATE.__struct_encode_fields__)


PUBLIC_FIELDS: dict[str, frozenset[str]] = {kind: _public_fields(cls) for kind, cls in CLASS_BY_KIND.items()}
PRIVATE_FIELDS: dict[str, frozenset[str]] = {
    kind: _private_fields(cls) for kind, cls in CLASS_BY_KIND.items()
}


def build(kind: str, fields: Mapping[str, Any]) -> Entry:
    """The typed entry of ``kind`` from its fields, public and private mixed: each field goes where
    its kind's type says. A field that belongs to neither, a missing one or a wrong type is refused."""
    legacy = RENAMED_KINDS.get(kind)
    if legacy is not None:  # an earlier release's kind (a version-1 journal's entries are built)
        legacy_private = _private_fields(legacy)
        nested = {name: value for name, value in fields.items() if name not in legacy_private}
        secret = {name: value for name, value in fields.items() if name in legacy_private}
        try:
            return _renamed(msgspec.convert({**nested, **({"private": secret} if secret else {})}, legacy))
        except msgspec.ValidationError as error:
            raise EntryError(f"journal: {kind}: {error}") from None
    cls = CLASS_BY_KIND.get(kind)
    if cls is None:
        raise EntryError(f"journal: unknown entry kind {kind!r}")
    if kind == "round_settled" and "round" in fields:
        fields = split_settled(fields)
    private_names = PRIVATE_FIELDS[kind]
    if private_names:
        public = {}
        private = {}
        for name, value in fields.items():  # one pass: the engine builds ~100 entries a round
            if name in private_names:
                private[name] = value
            else:
                public[name] = value
        if private:
            public["private"] = private
    else:  # most kinds have no private part: no sorting to do (the engine builds ~100 entries a round)
        public = fields if isinstance(fields, dict) else dict(fields)
    try:
        return msgspec.convert(public, cls)
    except msgspec.ValidationError as error:
        raise EntryError(f"journal: {kind}: {error}") from None


def split_settled(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A settled round given as the settle input and output (``round``, ``settlement`` with its hands)
    split into the public settlement (no hands: they name cards) and the private round and hands."""
    settlement = dict(fields["settlement"])
    hands: dict[str, Any] = {"dealer": None, "seats": {}}
    dealer = settlement.get("dealer")
    if isinstance(dealer, Mapping):
        hands["dealer"] = dealer.get("hand")
        settlement["dealer"] = {key: value for key, value in dealer.items() if key != "hand"}
    seats = []
    for seat in settlement.get("seats", []):
        hands["seats"][str(seat["seat"])] = seat.get("hand")
        seats.append({key: value for key, value in seat.items() if key != "hand"})
    settlement["seats"] = seats
    extra = {key: value for key, value in fields.items() if key not in ("round", "settlement")}
    return {**extra, "settlement": settlement, "private": {"round": fields["round"], "hands": hands}}


def round_settled(
    round_input: Mapping[str, Any], settlement: Mapping[str, Any], bank_by_seat: dict[str, Any] | None
) -> RoundSettled:
    """The reveal's entry from the settle input and output (the output with its hands): the hands go to
    the private part with the round's cards (``split_settled``), the rest is public."""
    split = split_settled({"round": round_input, "settlement": settlement})
    return RoundSettled(
        settlement=split["settlement"],
        bank_by_seat=bank_by_seat,
        private=RoundSettledPrivate(round=split["private"]["round"], hands=split["private"]["hands"]),
    )


def public_dict(entry: Entry) -> dict[str, Any]:
    """The public part as JSON values (what the payload column holds)."""
    value: dict[str, Any] = msgspec.to_builtins(entry)
    value.pop("entry_kind", None)
    value.pop("private", None)
    return value


def private_dict(entry: Entry) -> dict[str, Any] | None:
    part = entry.private_part()
    if part is None:
        return None
    value: dict[str, Any] = msgspec.to_builtins(part)
    return value


def commitment(private_text: str) -> str:
    """The digest the chain holds for a private part: sha256 of its stored text, which is the
    canonical JSON of ``{"part": ..., "salt": ...}`` (the salt is in the hashed text)."""
    import hashlib  # noqa: PLC0415 - OpenSSL's load only for a reader that checks (recall never does)

    return hashlib.sha256(private_text.encode("utf-8")).hexdigest()


def seal_private(part: Mapping[str, Any], salt: bytes | None = None) -> str:
    """The stored text of a private part: canonical JSON with a fresh random salt."""
    salt_bytes = salt if salt is not None else os.urandom(SALT_BYTES)
    return canonical_json({"part": part, "salt": salt_bytes.hex()})


def open_private(private_text: str) -> dict[str, Any]:
    """The part's fields from its stored text."""
    value = msgspec.json.decode(private_text)
    if not isinstance(value, dict) or not isinstance(value.get("part"), dict):
        raise EntryError("journal: a private part must be {'part': {...}, 'salt': ...}")
    part: dict[str, Any] = value["part"]
    return part


def decode_public(kind: str, public_text: str | bytes) -> Entry:
    """The typed entry with its public part only (private None)."""
    if kind in RENAMED_KINDS:
        return _renamed(_decode_legacy(kind, public_text, None))
    decoder = _public_decoder(kind)
    if decoder is None:
        raise EntryError(f"journal: unknown entry kind {kind!r}")
    try:
        entry: Entry = decoder.decode(public_text)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise EntryError(f"journal: {kind}: {error}") from None
    return entry


def _decode_legacy(kind: str, public_text: str | bytes, private_text: str | None) -> Entry:
    """An entry of a renamed kind as its own (earlier) class, both parts when ``private_text`` is given."""
    try:
        entry: Entry = _RENAMED_PUBLIC_DECODERS[kind].decode(public_text)
        if private_text is not None:
            part = _RENAMED_PRIVATE_DECODERS[kind].decode(private_text).part
            entry = msgspec.structs.replace(entry, private=part)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise EntryError(f"journal: {kind}: {error}") from None
    return entry


def decode(kind: str, public_text: str | bytes, private_text: str | None) -> Entry:
    """The typed entry, with its private part when ``private_text`` is given."""
    if kind in RENAMED_KINDS:
        return _renamed(_decode_legacy(kind, public_text, private_text))
    entry = decode_public(kind, public_text)
    if private_text is None:
        return entry
    decoder = _private_decoder(kind)
    if decoder is None:
        raise EntryError(f"journal: {kind} has no private part")
    try:
        part = decoder.decode(private_text).part
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise EntryError(f"journal: {kind} private part: {error}") from None
    return msgspec.structs.replace(entry, private=part)


def from_parts(kind: str, public: Mapping[str, Any], private: Mapping[str, Any] | None) -> Entry:
    """The typed entry from its two parts as JSON values (a stored entry already read), checked as
    ``decode`` checks the texts."""
    legacy = RENAMED_KINDS.get(kind)
    cls = CLASS_BY_KIND.get(kind) if legacy is None else legacy
    if cls is None:
        raise EntryError(f"journal: unknown entry kind {kind!r}")
    fields = dict(public) if private is None else {**public, "private": private}
    try:
        entry = msgspec.convert(fields, cls)
    except msgspec.ValidationError as error:
        raise EntryError(f"journal: {kind}: {error}") from None
    return entry if legacy is None else _renamed(entry)


def merged_payload(kind: str, public: Mapping[str, Any], private: Mapping[str, Any] | None) -> dict[str, Any]:
    """One object from both parts. A settled round's hands go back into its settlement, so the
    payload is the settle output and input as `flushtable settle` gives them."""
    if private is None:
        return dict(public)
    if kind == "round_settled":
        settlement = dict(public["settlement"])
        hands = private.get("hands") or {}
        if settlement.get("dealer") is not None:
            settlement["dealer"] = {**settlement["dealer"], "hand": hands.get("dealer")}
        seat_hands = hands.get("seats") or {}
        settlement["seats"] = [
            {**seat, "hand": seat_hands.get(str(seat["seat"]))} for seat in settlement.get("seats", [])
        ]
        extra = {key: value for key, value in public.items() if key != "settlement"}  # bank_by_seat
        return {**extra, "round": private["round"], "settlement": settlement}
    return {**public, **private}


def to_json_text(entry: Entry) -> bytes:
    """The whole entry (kind, public and private) as JSON: for tests' round trips and the schema."""
    return _BUILTINS_ENCODER.encode(entry)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every entry kind, generated from these classes (docs/journal-entries.schema.json
    is this, kept current by tests/journal/test_entries.py; `flushtable journal schema` prints it).

    One object per kind, tagged by ``entry_kind``: its public fields, and ``private`` (the private
    part's own schema, or absent). In the journal file the public fields are the row's ``payload``
    and the private part its ``private`` column, under the commitment ``private_digest``."""
    union: dict[str, Any] = msgspec.json.schema(EntryType)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://flushtable.example/schemas/journal-entries.json",
        "title": "flushtable journal entries",
        "description": (
            f"Entry schema version {ENTRY_SCHEMA_VERSION}. Each kind's public fields, and its private "
            "part (everything that reveals a card) under 'private'. Generated from "
            "controller/journal/entries.py: do not edit by hand."
        ),
        "x-entry-schema-version": ENTRY_SCHEMA_VERSION,
        "x-private-fields": {kind: sorted(PRIVATE_FIELDS[kind]) for kind in sorted(KINDS)},
        **union,
    }


def json_schema_text() -> str:
    """The schema as the docs file holds it: sorted keys, two-space indent, a final newline."""
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
