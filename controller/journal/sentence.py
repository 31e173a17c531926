"""One journal entry as one sentence a floor supervisor reads: the panel's event log and recall.

The one renderer of entries for people (the settlement's own lines are controller/journal/render.py's,
whose words it reuses). It reads what the viewer may see: an entry as it left the privacy gate
(controller/journal/privacy.py), ``payload`` merged with the private part only once the round is
revealed, ``hidden`` true while that part is withheld. So a card is named only when the payload holds
it; before the reveal a card_dealt reads "a card dealt face down". Amounts through controller/money.py.
Unknown kinds still read as words ("Dealer key: key=…"), so a new kind never breaks the log. The kinds
without a private part are read through their typed entries (``_sentence`` below); the others still
read the payload (docs/engine.md "Journal entries").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import structlog

from controller.journal import entries as e
from controller.journal.render import event_entry, game_title, wager_word
from controller.money import MoneyFormat, money

# firmware_protocol.messages' values, not imported: that package's import costs the fast CLI's recall
# about 30 ms (measured with python -X importtime).
COMMUNITY_POSITION = 15
DEALER_POSITION = 0

log = structlog.get_logger(__name__)

Payload = Mapping[str, Any]


def _position(position: object) -> str:
    if position == DEALER_POSITION:
        return "the dealer"
    if position == COMMUNITY_POSITION:
        return "the board"
    return f"seat {position}"


def _amount(value: object, fmt: MoneyFormat) -> str:
    return fmt(value) if isinstance(value, int) and not isinstance(value, bool) else "—"


def _reason(payload: Payload) -> str:
    reason = payload.get("reason")
    if isinstance(reason, Mapping):
        return str(reason.get("message", ""))
    return str(reason or "")


def _words(name: object) -> str:
    return str(name or "").replace("_", " ")


def _card_dealt(p: Payload, hidden: bool, fmt: MoneyFormat) -> str:
    if hidden or "card" not in p:
        return "A card dealt face down (shown once the round is revealed)"
    card = p.get("card") or "an unreadable card"
    return f"{card} dealt to {_position(p.get('position'))}"


def _bets_locked(p: Payload, hidden: bool, fmt: MoneyFormat) -> str:
    wagers = p.get("wagers") or {}
    parts = []
    for seat, seat_wagers in sorted(
        wagers.items(), key=lambda item: int(item[0]) if str(item[0]).isdigit() else 0
    ):
        if isinstance(seat_wagers, Mapping):
            each = ", ".join(f"{wager_word(w)} {_amount(c, fmt)}" for w, c in seat_wagers.items())
            parts.append(f"seat {seat}: {each}")
    return "Bets locked — " + ("; ".join(parts) if parts else "no wagers")


def _decision(p: Payload, hidden: bool, fmt: MoneyFormat) -> str:
    amount = p.get("amount_cents")
    stake = f" {_amount(amount, fmt)}" if isinstance(amount, int) and amount > 0 else ""
    street = f" on the {_words(p.get('street'))}" if p.get("street") else ""
    return f"Seat {p.get('seat')}: {_words(p.get('action'))}{stake}{street}"


def _settled(p: Payload, hidden: bool, fmt: MoneyFormat) -> str:
    settlement = p.get("settlement") or {}
    seats = settlement.get("seats") or []
    net = settlement.get("banker_net")
    banker = fmt(net, signed=True) if isinstance(net, int) else "—"
    rake = _amount(settlement.get("rake", 0), fmt)
    return f"Round settled: {len(seats)} seat(s), banker net {banker}, rake {rake}"


def _kill_request(p: Payload) -> str:
    seat, status = p.get("seat"), p.get("status")
    why = f": {p.get('reason')}" if p.get("reason") else ""
    # The request's number in its round (absent in entries written before it was): it tells apart two
    # requests for the same seat in one round (one rejected, the dealer asks again).
    number = f" (request {p['request_number']})" if p.get("request_number") is not None else ""
    if status == "requested":
        return f"The {p.get('by')} asks a supervisor to kill seat {seat}'s hand{number}"
    if status == "lapsed":
        return f"The request to kill seat {seat}'s hand{number} lapsed{why}"
    asked = f"the {p.get('requested_by')}'s request to kill seat {seat}'s hand{number}"
    return f"{p.get('by')} {status} {asked}{why}"


def _seconds_us(value: object) -> str:
    return f"{value / 1_000_000:.3f} s" if isinstance(value, int) else "?"


def _operator_action(p: Payload, hidden: bool, fmt: MoneyFormat) -> str:
    detail = p.get("detail")
    if isinstance(detail, Mapping):
        detail = ", ".join(
            f"{_words(k)} {_amount(v, fmt) if k.endswith('_cents') else v}" for k, v in detail.items()
        )
    outcome = str(p.get("outcome") or "")
    tail = f" — {outcome}" if outcome and outcome != "done" else ""
    what = f": {detail}" if detail else ""
    return f"{p.get('by')} asked to {_words(p.get('action'))}{what}{tail}"


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


def _limits_set(p: Payload, hidden: bool, fmt: MoneyFormat) -> str:
    before = p.get("before")
    were = ""
    if isinstance(before, Mapping):
        low, high = _amount(before.get("min_ante_cents"), fmt), _amount(before.get("max_ante_cents"), fmt)
        were = f" (were {low} to {high})"
    return f"{p.get('by')} set the limits: {_limits(p.get('after'), fmt)}{were}"


def _paytable(value: object) -> str:
    return str(value) if isinstance(value, str) else "custom lines"


def _panel_request(p: Payload, hidden: bool, fmt: MoneyFormat) -> str:
    return _operator_action({**p, "detail": p.get("request")}, hidden, fmt)


def _seat_killed(p: Payload, hidden: bool, fmt: MoneyFormat) -> str:
    if p.get("excluded"):
        return f"{p.get('by')} excluded seat {p.get('seat')} from the round: {p.get('reason')}"
    asked = f" at the {p['requested_by']}'s request" if p.get("requested_by") else ""
    return f"{p.get('by')} killed seat {p.get('seat')}'s hand{asked}: {p.get('reason')}"


_SENTENCES: dict[str, Callable[[Payload, bool, MoneyFormat], str]] = {
    "state_changed": lambda p, h, f: (
        f"The {_words(p.get('machine'))} went from {_words(p.get('from'))} to {_words(p.get('to'))}"
    ),
    "round_started": lambda p, h, f: (
        f"Round {p.get('round_id')} started: {game_title(p.get('game'))}, "
        f"seats {', '.join(str(s) for s in p.get('seats') or []) or 'none'}"
    ),
    "bet_changed": lambda p, h, f: (
        f"Seat {p.get('seat')} {wager_word(str(p.get('wager')))}: "
        f"sensors read {_amount(p.get('amount_cents'), f)}" + (" (after the lock)" if p.get("locked") else "")
    ),
    "bets_locked": _bets_locked,
    "past_posting": lambda p, h, f: (
        f"Past posting at seat {p.get('seat')} {wager_word(str(p.get('wager')))}: "
        f"{_amount(p.get('locked_cents'), f)} locked, {_amount(p.get('seen_cents'), f)} seen after the lock"
    ),
    "card_dealt": _card_dealt,
    "hand_complete": lambda p, h, f: (
        f"{_position(p.get('position')).capitalize()} has {p.get('card_count')} cards"
    ),
    "deck_verified": lambda p, h, f: (
        f"Deck verified: {p.get('card_count')} cards, {p.get('missing_count')} missing, "
        f"{p.get('extra_count')} extra"
    ),
    "decision": _decision,
    "decision_refused": lambda p, h, f: f"Refused: {_reason(p)}",
    "kill_seat_request": lambda p, h, f: _kill_request(p),
    "dead_hand": lambda p, h, f: (
        f"Dead hand at {_position(p.get('seat')) if p.get('seat') is not None else 'the table'}: {_reason(p)}"
    ),
    "round_settled": _settled,
    "round_dead": lambda p, h, f: f"Round dead — every wager returned in full: {_reason(p)}",
    "round_voided": lambda p, h, f: (
        f"Round voided by {p.get('by')} — every wager returned in full: {_reason(p)}"
    ),
    "fault_raised": lambda p, h, f: (
        f"{'Latching fault' if p.get('severity') == 'latching' else 'Alert'} {p.get('fault_id')}, "
        f"{_words(p.get('kind'))}: {_reason(p)}" + (f" (device {p['device']})" if p.get("device") else "")
    ),
    "button_moved": lambda p, h, f: (
        f"Button moved to seat {p.get('to_seat')}"
        + (f" from seat {p['from_seat']}" if p.get("from_seat") else "")
        + f" by {p.get('by')}: {p.get('reason')}"
    ),
    "dp_waived": lambda p, h, f: f"Seat {p.get('seat')} waived the designated player's button",
    "dealer_key": lambda p, h, f: (
        f"Dealer pressed {_words(p.get('key'))}" + (f" for seat {p['seat']}" if p.get("seat") else "")
    ),
    "operator_action": _operator_action,  # an earlier release's rows, as they were written
    "action_refused": lambda p, h, f: f"{p.get('by')}: {_words(p.get('action'))} refused: {p.get('reason')}",
    "seat_killed": _seat_killed,
    "void_ordered": lambda p, h, f: f"{p.get('by')} voided the round: {p.get('reason')}",
    "difference_accepted": lambda p, h, f: (
        f"{p.get('by')} accepted the difference ({p.get('fault_id')}): {p.get('spot')}: {p.get('reason')}"
    ),
    "device_reset": lambda p, h, f: f"{p.get('by')} reset {p.get('device')}: {p.get('reason')}",
    "limits_set": _limits_set,
    "paytable_set": lambda p, h, f: (
        f"{p.get('by')} set the {wager_word(str(p.get('wager')))} paytable: {_paytable(p.get('after'))}"
        + (f" (was {_paytable(p['before'])})" if p.get("before") is not None else "")
    ),
    "lock_refused_progressive": lambda p, h, f: f"Progressive wagers refused at the lock: {p.get('reason')}",
    "linked_claim_answered": lambda p, h, f: f"The floor answered the progressive claim: {p.get('answer')}",
    "linked_confirmation_sent": lambda p, h, f: (
        f"{p.get('by')} confirmed progressive award {p.get('award_id') or ''} paid: sent to the floor"
    ),
    "panel_request": _panel_request,
    "operator_note": lambda p, h, f: f"{p.get('by')}: {_words(p.get('action'))}: {p.get('detail')}",
    "security_event": lambda p, h, f: (
        f"Security event on {p.get('device')}: {p.get('reason')} {p.get('detail', '')}"
    ),
    "progressive_parameters_changed": lambda p, h, f: (
        f"Progressive {p.get('meter_id')}: parameters "
        + ("set (the meter opens at its base)" if p.get("before") is None else "changed")
        + f" by {p.get('by')}"
        + (f": {p['reason']}" if p.get("reason") and p.get("before") is not None else "")
    ),
    "progressive_contribution": lambda p, h, f: (
        f"Progressive: {p.get('wagers')} wager(s) from table {p.get('table_id')}, "
        f"{_amount(p.get('to_meter_cents'), f)} to the meter (now {_amount(p.get('meter_after_cents'), f)}), "
        f"{_amount(p.get('hidden_cents'), f)} to the reserve"
    ),
    "progressive_overflow": lambda p, h, f: (
        f"Progressive: the meter is at its limit; {_amount(p.get('overflow_cents'), f)} to the overflow"
    ),
    "progressive_award_claimed": lambda p, h, f: (
        f"Progressive hit #{p.get('claim_number')}: seat {p.get('seat')} at table {p.get('table_id')}, "
        f"{p.get('line')}-card straight flush, {_amount(p.get('amount_cents'), f)} "
        + ("from the meter" if p.get("paid_from") == "meter" else "from the house")
        + (" (awaiting a supervisor)" if p.get("needs_confirmation") else "")
    ),
    "progressive_award_paid": lambda p, h, f: (
        f"Progressive award {p.get('award_id')} paid: {_amount(p.get('amount_cents'), f)}"
        + ("" if p.get("by") == "engine" else f", confirmed by {p.get('by')}")
    ),
    "progressive_reset": lambda p, h, f: (
        f"Progressive meter re-seeded to {_amount(p.get('amount_cents'), f)}: "
        f"{_amount(p.get('from_reserve_cents'), f)} from the reserve, "
        f"{_amount(p.get('house_added_cents'), f)} added by the house"
    ),
    "progressive_reserve": lambda p, h, f: (
        f"Progressive reserve {'+' if (p.get('amount_cents') or 0) > 0 else '-'}"
        f"{_amount(abs(p.get('amount_cents') or 0), f)} by {p.get('by')}: {p.get('reason')}"
    ),
}


# --- the kinds read through their typed entries ---------------------------------------------------------
# A kind here is decoded by the one typed decoder (render.event_entry) and its sentence reads the entry's
# fields, checked by mypy; a payload that is not its kind's (a hand-made one, a foreign row) is not read
# wrongly as "None proposed None" but falls back to its own fields (entry_sentence). Kinds without a
# private part only: the gate's viewer event merges a revealed private part into the payload, and
# ``hidden`` says what it withheld, which the payload kinds above still read (docs/engine.md "Journal
# entries").
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


def kinds_with_a_sentence() -> frozenset[str]:
    """Every kind read by its own sentence: through its typed entry or its payload."""
    return frozenset(_SENTENCES) | frozenset(_TYPED_SENTENCES)


def entry_sentence(event: Mapping[str, Any], fmt: MoneyFormat = money) -> str:
    """``event``: an entry as the gate let it out ({"kind", "payload", "hidden", ...})."""
    kind = str(event.get("kind", ""))
    payload = event.get("payload") or {}
    hidden = bool(event.get("hidden"))
    typed_render = _TYPED_SENTENCES.get(kind)
    if typed_render is not None:
        entry = event_entry(event)
        if entry is not None:
            return typed_render(entry, fmt).strip()
        log.debug("sentence_fallback", kind=kind, error="not this kind's fields")
    render = _SENTENCES.get(kind)
    if render is not None:
        try:
            return render(payload, hidden, fmt).strip()
        except (TypeError, ValueError, AttributeError) as error:
            # A payload of an older shape: the entry's own fields below, never a failed page; logged, so a
            # sentence that is simply wrong does not hide behind the fallback.
            log.debug("sentence_fallback", kind=kind, error=repr(error))
    fields = ", ".join(f"{_words(k)} {v}" for k, v in payload.items() if not isinstance(v, Mapping | list))
    return f"{_words(kind).capitalize()}{': ' + fields if fields else ''}"
