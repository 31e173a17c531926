"""One journal entry as one sentence a floor supervisor reads: the panel's event log and recall.

The one renderer of entries for people (the settlement's own lines are controller/journal/render.py's,
whose words it reuses). It reads what the viewer may see: an entry as it left the privacy gate
(controller/journal/privacy.py), ``payload`` merged with the private part only once the round is
revealed, ``hidden`` true while that part is withheld; or, from the panel, the typed entry the gate
hands over (``privacy.viewer_typed``: with its private part once revealed, its public view before).
Every kind is read through its typed entry (``_sentence`` below), so a card is named only when the
entry the viewer may see holds it: before the reveal a card_dealt reads "a card dealt face down".
Amounts through controller/money.py. Unknown kinds, and a payload that is not its kind's, still read as
words ("Dealer key: key=…"), so a new kind never breaks the log (docs/engine.md "Journal entries").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec
import structlog

from controller.journal import entries as e
from controller.journal.render import game_title, wager_word
from controller.money import MoneyFormat, money

# firmware_protocol.messages' values, not imported: that package's import costs the fast CLI's recall
# about 30 ms (measured with python -X importtime).
COMMUNITY_POSITION = 15
DEALER_POSITION = 0

log = structlog.get_logger(__name__)


def _position(position: object) -> str:
    if position == DEALER_POSITION:
        return "the dealer"
    if position == COMMUNITY_POSITION:
        return "the board"
    return f"seat {position}"


def _amount(value: object, fmt: MoneyFormat) -> str:
    return fmt(value) if isinstance(value, int) and not isinstance(value, bool) else "—"


def _words(name: object) -> str:
    return str(name or "").replace("_", " ")


def _seconds_us(value: object) -> str:
    return f"{value / 1_000_000:.3f} s" if isinstance(value, int) else "?"


def _asked(by: object, action: object, detail: object, outcome: object, fmt: MoneyFormat) -> str:
    """An operator's request: an earlier release's operator_action row, or today's panel_request."""
    if isinstance(detail, Mapping):
        detail = ", ".join(
            f"{_words(k)} {_amount(v, fmt) if k.endswith('_cents') else v}" for k, v in detail.items()
        )
    said = str(outcome or "")
    tail = f" — {said}" if said and said != "done" else ""
    what = f": {detail}" if detail else ""
    return f"{by} asked to {_words(action)}{what}{tail}"


def _limits(after: object, fmt: MoneyFormat) -> str:
    """A manager's limits (``limits_set.after``): the ante's, and each bonus wager's maximum, marked when
    it follows the ante's."""
    if not isinstance(after, Mapping):
        return "?"
    own = after.get("own_max_bonus_cents") or {}
    bonus = ", ".join(
        f"{wager_word(str(wager))} {_amount(cents, fmt)}" + ("" if wager in own else " (the ante's maximum)")
        for wager, cents in (after.get("max_bonus_cents") or {}).items()
    )
    ante = f"ante {_amount(after.get('min_ante_cents'), fmt)} to {_amount(after.get('max_ante_cents'), fmt)}"
    return f"{ante}, bonus maxima {bonus}" if bonus else ante


def _paytable(value: object) -> str:
    return str(value) if isinstance(value, str) else "custom lines"


# --- every kind, read through its typed entry -----------------------------------------------------------
# The sentence reads the entry's fields, checked by mypy: the entry the gate handed over, or the gated
# event decoded by the one typed builder (``entries.build``: a revealed private part merged into the
# payload goes back into the entry's private part; a withheld one is not there). A payload that is not
# its kind's (a hand-made one, a foreign row) is not read wrongly as "None proposed None" but falls back
# to its own fields (entry_sentence).
EntryT = TypeVar("EntryT", bound=e.Entry)
TypedSentence = Callable[[e.Entry, MoneyFormat], str]
_TYPED_SENTENCES: dict[str, TypedSentence] = {}


def _sentence(
    cls: type[EntryT],
) -> Callable[[Callable[[EntryT, MoneyFormat], str]], Callable[[EntryT, MoneyFormat], str]]:
    """Registers the decorated function as the sentence of ``cls``'s kind."""

    def register(render: Callable[[EntryT, MoneyFormat], str]) -> Callable[[EntryT, MoneyFormat], str]:
        def checked(entry: e.Entry, fmt: MoneyFormat) -> str:
            if not isinstance(entry, cls):  # the decoder gives the kind's class: a bug otherwise
                raise TypeError(f"a {type(entry).__name__} given as {cls.__name__}")
            return render(entry, fmt)

        _TYPED_SENTENCES[str(cls.__struct_config__.tag)] = checked
        return render

    return register


@_sentence(e.TableOpened)
def _table_opened(x: e.TableOpened, fmt: MoneyFormat) -> str:
    return f"Table opened by {x.by}: {game_title(x.game)}, {_words(x.banking_mode)}"


@_sentence(e.TableClosed)
def _table_closed(x: e.TableClosed, fmt: MoneyFormat) -> str:
    return f"Table closed by {x.by}: {x.reason}"


@_sentence(e.FaultAcknowledged)
def _fault_acknowledged(x: e.FaultAcknowledged, fmt: MoneyFormat) -> str:
    return f"{x.by} acknowledged {x.fault_id}"


@_sentence(e.FaultCleared)
def _fault_cleared(x: e.FaultCleared, fmt: MoneyFormat) -> str:
    return f"{x.by} cleared {x.fault_id}: {x.reason}"


@_sentence(e.Login)
def _login(x: e.Login, fmt: MoneyFormat) -> str:
    return f"{x.user} ({x.role}) logged in from {x.remote}"


@_sentence(e.LoginFailed)
def _login_failed(x: e.LoginFailed, fmt: MoneyFormat) -> str:
    return f"Failed login as {x.user} from {x.remote}: {x.reason}"


@_sentence(e.NoiseSuppressed)
def _noise_suppressed(x: e.NoiseSuppressed, fmt: MoneyFormat) -> str:
    return f"{x.count} more {_words(x.category)} from {x.source} counted, not journaled one by one"


@_sentence(e.DeviceReady)
def _device_ready(x: e.DeviceReady, fmt: MoneyFormat) -> str:
    return f"{x.device} ready: {x.model} firmware {x.firmware_version}"


@_sentence(e.DeviceLost)
def _device_lost(x: e.DeviceLost, fmt: MoneyFormat) -> str:
    return f"{x.device} lost: {x.reason}"


@_sentence(e.DeviceStatus)
def _device_status(x: e.DeviceStatus, fmt: MoneyFormat) -> str:
    code = f", fault code {x.fault_code}" if x.fault_code else ""
    return f"{x.device} reports {x.state}, lamp {x.lamp or 'off'}{code}"


@_sentence(e.ClockOffset)
def _clock_offset(x: e.ClockOffset, fmt: MoneyFormat) -> str:
    if x.offset_us is None:
        return f"Clock not measured against {x.source}: {x.error}"
    sign = "+" if x.offset_us >= 0 else "-"
    verdict = "within" if x.within_bound else "PAST"
    return (
        f"Clock offset {sign}{_seconds_us(abs(x.offset_us))} from {x.source} "
        f"({verdict} the bound of {_seconds_us(x.bound_us)})"
    )


@_sentence(e.ClockStepped)
def _clock_stepped(x: e.ClockStepped, fmt: MoneyFormat) -> str:
    return (
        f"The wall clock went back {_seconds_us(x.step_back_us)}: the journal keeps "
        f"{x.journal_time_utc} until the clock passes it"
    )


@_sentence(e.SoftwareVerified)
def _software_verified(x: e.SoftwareVerified, fmt: MoneyFormat) -> str:
    development = " (a DEVELOPMENT release, not for a live table)" if x.development else ""
    return (
        f"Software verified at start: release {x.release}, digest {x.release_digest[:16]}, {x.files} files "
        f"and {x.dependencies} dependencies, signed by key {x.key_id}{development}"
    )


@_sentence(e.SoftwareChecked)
def _software_checked(x: e.SoftwareChecked, fmt: MoneyFormat) -> str:
    return (
        f"Seeded software verification for {x.requested_by}: seed {x.seed[:16]}, "
        f"aggregate {x.aggregate[:16]} over {x.files} files"
    )


@_sentence(e.ConfigChecked)
def _config_checked(x: e.ConfigChecked, fmt: MoneyFormat) -> str:
    what = "first check" if x.previous_config_digest is None else "; ".join(x.changed) or "unchanged"
    approved = f" (approved by change {x.approved_change})" if x.approved_change else ""
    unapproved = " — NOT APPROVED" if x.unapproved else ""
    return f"Configuration {x.source} checked at start: {what}{approved}{unapproved}"


@_sentence(e.ChangeProposed)
def _change_proposed(x: e.ChangeProposed, fmt: MoneyFormat) -> str:
    why = f" ({x.reason})" if x.reason else ""
    return (
        f"{x.by} proposed {x.change_id}: {x.summary}{why}; a second manager must approve it before "
        f"{x.lapses_utc}"
    )


@_sentence(e.ChangeApproved)
def _change_approved(x: e.ChangeApproved, fmt: MoneyFormat) -> str:
    return f"{x.by} approved {x.change_id} proposed by {x.proposed_by}: {x.summary}"


@_sentence(e.ChangeLapsed)
def _change_lapsed(x: e.ChangeLapsed, fmt: MoneyFormat) -> str:
    return f"{x.change_id} proposed by {x.proposed_by} lapsed unapproved at {x.lapses_utc}"


@_sentence(e.ChangeRefused)
def _change_refused(x: e.ChangeRefused, fmt: MoneyFormat) -> str:
    return f"{x.by}: {x.change_id or 'a proposal'} {'closed' if x.closed else 'refused'}: {x.reason}"


@_sentence(e.StateChanged)
def _state_changed(x: e.StateChanged, fmt: MoneyFormat) -> str:
    return f"The {_words(x.machine)} went from {_words(x.from_state)} to {_words(x.to)}"


@_sentence(e.RoundStarted)
def _round_started(x: e.RoundStarted, fmt: MoneyFormat) -> str:
    seats = ", ".join(str(seat) for seat in x.seats) or "none"
    return f"Round {x.round_id} started: {game_title(x.game)}, seats {seats}"


@_sentence(e.BetChanged)
def _bet_changed(x: e.BetChanged, fmt: MoneyFormat) -> str:
    late = " (after the lock)" if x.locked else ""
    return f"Seat {x.seat} {wager_word(x.wager)}: sensors read {_amount(x.amount_cents, fmt)}{late}"


@_sentence(e.PastPosting)
def _past_posting(x: e.PastPosting, fmt: MoneyFormat) -> str:
    return (
        f"Past posting at seat {x.seat} {wager_word(x.wager)}: {_amount(x.locked_cents, fmt)} locked, "
        f"{_amount(x.seen_cents, fmt)} seen after the lock"
    )


@_sentence(e.HandComplete)
def _hand_complete(x: e.HandComplete, fmt: MoneyFormat) -> str:
    return f"{_position(x.position).capitalize()} has {x.card_count} cards"


@_sentence(e.DealerKey)
def _dealer_key(x: e.DealerKey, fmt: MoneyFormat) -> str:
    return f"Dealer pressed {_words(x.key)}" + (f" for seat {x.seat}" if x.seat else "")


@_sentence(e.ButtonMoved)
def _button_moved(x: e.ButtonMoved, fmt: MoneyFormat) -> str:
    moved_from = f" from seat {x.from_seat}" if x.from_seat else ""
    return f"Button moved to seat {x.to_seat}{moved_from} by {x.by}: {x.reason}"


@_sentence(e.Decision)
def _decision(x: e.Decision, fmt: MoneyFormat) -> str:
    stake = f" {_amount(x.amount_cents, fmt)}" if x.amount_cents > 0 else ""
    street = f" on the {_words(x.street)}" if x.street else ""
    return f"Seat {x.seat}: {_words(x.action)}{stake}{street}"


@_sentence(e.KillSeatRequest)
def _kill_seat_request(x: e.KillSeatRequest, fmt: MoneyFormat) -> str:
    why = f": {x.reason}" if x.reason else ""
    # The request's number in its round (absent in entries written before it was): it tells apart two
    # requests for the same seat in one round (one rejected, the dealer asks again).
    number = f" (request {x.request_number})" if x.request_number is not None else ""
    if x.status == "requested":
        return f"The {x.by} asks a supervisor to kill seat {x.seat}'s hand{number}"
    if x.status == "lapsed":
        return f"The request to kill seat {x.seat}'s hand{number} lapsed{why}"
    asked = f"the {x.requested_by}'s request to kill seat {x.seat}'s hand{number}"
    return f"{x.by} {x.status} {asked}{why}"


@_sentence(e.SeatKilled)
def _seat_killed(x: e.SeatKilled, fmt: MoneyFormat) -> str:
    if x.excluded:
        return f"{x.by} excluded seat {x.seat} from the round: {x.reason}"
    asked = f" at the {x.requested_by}'s request" if x.requested_by else ""
    return f"{x.by} killed seat {x.seat}'s hand{asked}: {x.reason}"


@_sentence(e.VoidOrdered)
def _void_ordered(x: e.VoidOrdered, fmt: MoneyFormat) -> str:
    return f"{x.by} voided the round: {x.reason}"


@_sentence(e.DeviceReset)
def _device_reset(x: e.DeviceReset, fmt: MoneyFormat) -> str:
    return f"{x.by} reset {x.device}: {x.reason}"


@_sentence(e.DifferenceAccepted)
def _difference_accepted(x: e.DifferenceAccepted, fmt: MoneyFormat) -> str:
    return f"{x.by} accepted the difference ({x.fault_id}): {x.spot}: {x.reason}"


@_sentence(e.SecurityEvent)
def _security_event(x: e.SecurityEvent, fmt: MoneyFormat) -> str:
    return f"Security event on {x.device}: {x.reason} {x.detail}"


@_sentence(e.OperatorNote)
def _operator_note(x: e.OperatorNote, fmt: MoneyFormat) -> str:
    return f"{x.by}: {_words(x.action)}: {x.detail}"


@_sentence(e.ProgressiveRefusedAtLock)
def _lock_refused_progressive(x: e.ProgressiveRefusedAtLock, fmt: MoneyFormat) -> str:
    return f"Progressive wagers refused at the lock: {x.reason}"


@_sentence(e.LinkedClaimAnswered)
def _linked_claim_answered(x: e.LinkedClaimAnswered, fmt: MoneyFormat) -> str:
    return f"The floor answered the progressive claim: {x.answer}"


@_sentence(e.LinkedConfirmationSent)
def _linked_confirmation_sent(x: e.LinkedConfirmationSent, fmt: MoneyFormat) -> str:
    return f"{x.by} confirmed progressive award {x.award_id or ''} paid: sent to the floor"


@_sentence(e.ProgressiveParametersChanged)
def _progressive_parameters_changed(x: e.ProgressiveParametersChanged, fmt: MoneyFormat) -> str:
    if x.before is None:
        return f"Progressive {x.meter_id}: parameters set (the meter opens at its base) by {x.by}"
    why = f": {x.reason}" if x.reason else ""
    return f"Progressive {x.meter_id}: parameters changed by {x.by}{why}"


@_sentence(e.ProgressiveContribution)
def _progressive_contribution(x: e.ProgressiveContribution, fmt: MoneyFormat) -> str:
    return (
        f"Progressive: {x.wagers} wager(s) from table {x.table_id}, {_amount(x.to_meter_cents, fmt)} to the "
        f"meter (now {_amount(x.meter_after_cents, fmt)}), {_amount(x.hidden_cents, fmt)} to the reserve"
    )


@_sentence(e.ProgressiveOverflow)
def _progressive_overflow(x: e.ProgressiveOverflow, fmt: MoneyFormat) -> str:
    return f"Progressive: the meter is at its limit; {_amount(x.overflow_cents, fmt)} to the overflow"


@_sentence(e.ProgressiveAwardClaimed)
def _progressive_award_claimed(x: e.ProgressiveAwardClaimed, fmt: MoneyFormat) -> str:
    source = "from the meter" if x.paid_from == "meter" else "from the house"
    waiting = " (awaiting a supervisor)" if x.needs_confirmation else ""
    return (
        f"Progressive hit #{x.claim_number}: seat {x.seat} at table {x.table_id}, {x.line}-card straight "
        f"flush, {_amount(x.amount_cents, fmt)} {source}{waiting}"
    )


@_sentence(e.ProgressiveAwardPaid)
def _progressive_award_paid(x: e.ProgressiveAwardPaid, fmt: MoneyFormat) -> str:
    confirmed = "" if x.by == "engine" else f", confirmed by {x.by}"
    return f"Progressive award {x.award_id} paid: {_amount(x.amount_cents, fmt)}{confirmed}"


@_sentence(e.ProgressiveReset)
def _progressive_reset(x: e.ProgressiveReset, fmt: MoneyFormat) -> str:
    return (
        f"Progressive meter re-seeded to {_amount(x.amount_cents, fmt)}: "
        f"{_amount(x.from_reserve_cents, fmt)} from the reserve, "
        f"{_amount(x.house_added_cents, fmt)} added by the house"
    )


@_sentence(e.ProgressiveReserve)
def _progressive_reserve(x: e.ProgressiveReserve, fmt: MoneyFormat) -> str:
    sign = "+" if x.amount_cents > 0 else "-"
    return f"Progressive reserve {sign}{_amount(abs(x.amount_cents), fmt)} by {x.by}: {x.reason}"


@_sentence(e.BetsLocked)
def _bets_locked(x: e.BetsLocked, fmt: MoneyFormat) -> str:
    parts = []
    for seat, seat_wagers in sorted(
        x.wagers.items(), key=lambda item: int(item[0]) if item[0].isdigit() else 0
    ):
        each = ", ".join(f"{wager_word(w)} {_amount(c, fmt)}" for w, c in seat_wagers.items())
        parts.append(f"seat {seat}: {each}")
    return "Bets locked — " + ("; ".join(parts) if parts else "no wagers")


@_sentence(e.RoundVoided)
def _round_voided(x: e.RoundVoided, fmt: MoneyFormat) -> str:
    return f"Round voided by {x.by} — every wager returned in full: {x.reason}"


@_sentence(e.PanelRequest)
def _panel_request(x: e.PanelRequest, fmt: MoneyFormat) -> str:
    return _asked(x.by, x.action, x.request, x.outcome, fmt)


@_sentence(e.LimitsSet)
def _limits_set(x: e.LimitsSet, fmt: MoneyFormat) -> str:
    were = ""
    if x.before is not None:
        low, high = _amount(x.before.get("min_ante_cents"), fmt), _amount(x.before.get("max_ante_cents"), fmt)
        were = f" (were {low} to {high})"
    return f"{x.by} set the limits: {_limits(x.after, fmt)}{were}"


@_sentence(e.PaytableSet)
def _paytable_set(x: e.PaytableSet, fmt: MoneyFormat) -> str:
    was = f" (was {_paytable(x.before)})" if x.before is not None else ""
    return f"{x.by} set the {wager_word(x.wager)} paytable: {_paytable(x.after)}{was}"


@_sentence(e.CardDealt)
def _card_dealt(x: e.CardDealt, fmt: MoneyFormat) -> str:
    dealt = x.private  # None until the gate shows it: the round not revealed, or a dead hand's
    if dealt is None:
        return "A card dealt face down (shown once the round is revealed)"
    return f"{dealt.card or 'an unreadable card'} dealt to {_position(dealt.position)}"


@_sentence(e.DeckVerified)
def _deck_verified(x: e.DeckVerified, fmt: MoneyFormat) -> str:
    return f"Deck verified: {x.card_count} cards, {x.missing_count} missing, {x.extra_count} extra"


@_sentence(e.DecisionRefused)
def _decision_refused(x: e.DecisionRefused, fmt: MoneyFormat) -> str:
    return f"Refused: {x.reason.message}"


@_sentence(e.DeadHand)
def _dead_hand(x: e.DeadHand, fmt: MoneyFormat) -> str:
    where = _position(x.seat) if x.seat is not None else "the table"
    return f"Dead hand at {where}: {x.reason.message}"


@_sentence(e.RoundSettled)
def _round_settled(x: e.RoundSettled, fmt: MoneyFormat) -> str:
    seats = x.settlement.get("seats") or []
    net = x.settlement.get("banker_net")
    banker = fmt(net, signed=True) if isinstance(net, int) else "—"
    rake = _amount(x.settlement.get("rake", 0), fmt)
    return f"Round settled: {len(seats)} seat(s), banker net {banker}, rake {rake}"


@_sentence(e.RoundDead)
def _round_dead(x: e.RoundDead, fmt: MoneyFormat) -> str:
    return f"Round dead — every wager returned in full: {x.reason.message}"


@_sentence(e.FaultRaised)
def _fault_raised(x: e.FaultRaised, fmt: MoneyFormat) -> str:
    level = "Latching fault" if x.severity == "latching" else "Alert"
    device = f" (device {x.device})" if x.device else ""
    return f"{level} {x.fault_id}, {_words(x.kind_of_fault)}: {x.reason.message}{device}"


@_sentence(e.DpWaived)
def _dp_waived(x: e.DpWaived, fmt: MoneyFormat) -> str:
    return f"Seat {x.seat} waived the designated player's button"


@_sentence(e.OperatorAction)
def _operator_action(x: e.OperatorAction, fmt: MoneyFormat) -> str:
    return _asked(x.by, x.action, x.detail, x.outcome, fmt)  # an earlier release's rows, as written


@_sentence(e.ActionRefused)
def _action_refused(x: e.ActionRefused, fmt: MoneyFormat) -> str:
    return f"{x.by}: {_words(x.action)} refused: {x.reason}"


def _event_entry(kind: str, payload: Mapping[str, Any]) -> e.Entry | None:
    """A gated event's payload (a revealed private part merged in, a withheld one absent) as its kind's
    typed entry; None when it is not that kind's. An earlier release's kind reads as it was written
    (its public fields: ``operator_action``), not as the kind it is read as today."""
    cls = e.CLASS_BY_STORED_KIND.get(kind)
    if cls is None:
        return None
    legacy = kind in e.RENAMED_KINDS
    names = _field_names(cls, private=not legacy)
    fields = {name: value for name, value in payload.items() if name in names}
    try:
        return msgspec.convert(fields, cls) if legacy else e.build(kind, fields)
    except (e.EntryError, msgspec.ValidationError):
        return None


@functools.cache
def _field_names(cls: type[e.Entry], *, private: bool) -> frozenset[str]:
    """The JSON names of a class's public fields, and of its private part's when ``private``."""
    public = frozenset(cls.__struct_encode_fields__) - {"private"}
    if not private or cls.PRIVATE is None:
        return public
    # A settled round's payload, merged, is the settle input and output (``round``, the hands in it).
    return public | frozenset(cls.PRIVATE.__struct_encode_fields__)


def kinds_with_a_sentence() -> frozenset[str]:
    """Every kind read by its own sentence (each through its typed entry)."""
    return frozenset(_TYPED_SENTENCES)


def entry_sentence(event: Mapping[str, Any], fmt: MoneyFormat = money, entry: e.Entry | None = None) -> str:
    """``event``: an entry as the gate let it out ({"kind", "payload", "hidden", ...}); ``entry``: the
    typed entry the gate handed over with it (``privacy.viewer_typed``), read instead of decoding the
    payload again (an earlier release's row, read today as another kind, is decoded as written)."""
    kind = str(event.get("kind", ""))
    payload = event.get("payload") or {}
    typed_render = _TYPED_SENTENCES.get(kind)
    if typed_render is not None:
        if entry is None or entry.kind != kind:
            entry = _event_entry(kind, payload)
        if entry is None:
            log.debug("sentence_fallback", kind=kind, error="not this kind's fields")
        else:
            try:
                return typed_render(entry, fmt).strip()
            except (TypeError, ValueError, AttributeError) as error:
                # The typed entry checks only the outer shape (``settlement: dict[str, Any]``): an inner
                # field of another shape (an older row, a hand-made one) reads as its fields below, never
                # a failed page; logged, so a sentence that is simply wrong does not hide behind it.
                log.debug("sentence_fallback", kind=kind, error=repr(error))
    fields = ", ".join(f"{_words(k)} {v}" for k, v in payload.items() if not isinstance(v, Mapping | list))
    return f"{_words(kind).capitalize()}{': ' + fields if fields else ''}"
