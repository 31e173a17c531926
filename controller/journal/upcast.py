"""Entries of earlier releases read as today's typed entries: a chain of upcasters (docs/journal.md
"Versions and upcasting").

Each stored entry keeps the version it was written at (the ``version`` column; a journal of schema 1 had
none: all its entries are version 1) and its bytes as written: the hash chain covers those bytes with
that version's own formula (controller/journal/chain.py ``stored_hash``), so reading an entry as a newer
shape never changes what verifies. An upcaster takes an entry's fields at version N to version N + 1;
``typed_entry`` runs the chain up to ``entries.ENTRY_SCHEMA_VERSION`` and types the result.

Version 1 (releases up to 654a859, the untyped journal): one payload object per entry, public and
private fields together (cards included). What changed in version 2 (57d2c68), and what the upcaster
does:

- ``dead_hand``, ``round_dead``: ``reason`` was the engine's text, which may name a card ("9c seen
  twice"): now a structured ``Reason`` (a code and public words, the seat when the text named one) and
  the text itself private (``ReasonDetail.message``).
- ``fault_raised``: ``detail`` text became ``reason`` (as above).
- ``decision_refused``: ``reason`` text (it speaks of the hand: "with a 4-card flush") became a
  ``Reason`` with the text private as ``limit_detail``.
- ``deck_verified``: the ``missing`` and ``extra`` card lists became private, with public counts.
- Every other kind kept its fields: its payload is split into the public and private parts its type
  says (``entries.build``), as a version-2 writer would have split it.

Renamed kinds (no version step: the rows keep version 2 and their bytes; ``entries.RENAMED_KINDS``):
releases up to 9254278 wrote every operator action as one ``operator_action`` (``detail`` text or an
object, ``before``/``after``, ``outcome``). ``renamed_entry`` reads each as the kind it is today, from
what the engine and the panel of those releases wrote (tests/journal/fixtures/
journal-v2-9254278-operator-actions.sqlite holds every form their tests wrote):

- the panel's request (``detail`` an object, or an ``outcome``): ``panel_request``;
- ``detail`` "refused: REASON": ``action_refused`` (the private ``refusal_detail`` kept);
- ``set_limits`` / ``set_paytable`` with ``after``: ``limits_set`` / ``paytable_set``;
- ``kill_seat`` "seat N excluded from the round: R" / "seat N[ at the X's request]: R": ``seat_killed``;
- ``void_round``: ``void_ordered``; ``accept_difference`` "SPOT; the difference accepted (ID): R":
  ``difference_accepted``; ``reset_device`` "DEVICE: R": ``device_reset``;
- ``refuse_progressive`` "refused at the lock: R": ``lock_refused_progressive``;
  ``progressive_claim_answered`` "round ID: ANSWER": ``linked_claim_answered``;
  ``confirm_progressive_award`` "sent: …": ``linked_confirmation_sent``;
- anything else (words no form above matches): ``operator_note``, its words kept as written.

An entry no upcaster makes readable is an error naming it (never guessed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from controller.journal import entries as typed
from controller.journal.kinds import newer_entry_words

FIRST_VERSION = 1
Upcaster = Callable[[str, dict[str, Any]], dict[str, Any]]

# The engine's words of version 1, by what they start with or hold, to today's reason code and the public
# words a version-2 engine writes for it (never the old text: it may name a card).
_V1_REASONS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"seen twice|repeated"), "card_repeated", "a card seen twice during the deal"),
    (re.compile(r"wrong card count"), "card_count", "wrong card count"),
    (re.compile(r"misread|read as"), "card_misread", "a card read as two different cards"),
    (re.compile(r"extra card|beyond"), "extra_card", "a card beyond the requested count"),
    (re.compile(r"out of order|skipped"), "card_out_of_order", "a card index skipped"),
    (re.compile(r"not in the round|outside"), "card_outside_round", "a card outside the round"),
    (re.compile(r"red.light"), "red_light", "the shoe's red light during the deal"),
    (re.compile(r"^over the limit"), "over_limit", "over the limit"),
    (re.compile(r"^under the limit"), "under_limit", "under the limit"),
    (re.compile(r"past.post"), "past_posting", "chips changed on a locked spot"),
    (re.compile(r"lost|disconnect"), "device_lost", "a device was lost"),
    (re.compile(r"deck"), "deck_verification", "the shuffled deck did not verify"),
    (re.compile(r"shoe|shuffler"), "shoe_fault", "the shoe reported a fault"),
)
_UNKNOWN_WORDS = "recorded by an earlier release (its words are in the private part)"
_SEAT_PREFIX = re.compile(r"^seat (\d+): ")


def _v1_reason(text: str, seat: int | None) -> dict[str, Any]:
    """A version-1 reason text as a version-2 ``Reason`` (its public part)."""
    match = _SEAT_PREFIX.match(text)
    if match is not None and seat is None:
        seat = int(match.group(1))
    body = text[match.end() :] if match is not None else text
    code, words = "unknown_event", _UNKNOWN_WORDS
    for pattern, reason_code, reason_words in _V1_REASONS:
        if pattern.search(body.lower()):
            code, words = reason_code, reason_words
            break
    reason: dict[str, Any] = {"code": code, "message": words}
    if seat is not None:
        reason["seat"] = seat
    return reason


def _v1_to_v2(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2, public and private fields mixed (as ``entries.build`` takes them)."""
    out = dict(fields)
    if kind in ("dead_hand", "round_dead") and isinstance(out.get("reason"), str):
        text = out["reason"]
        seat = out.get("seat") if isinstance(out.get("seat"), int) else None
        out["reason"] = _v1_reason(text, seat)
        out["message"] = text  # ReasonDetail.message: the full text, private
    elif kind == "fault_raised" and "detail" in out:
        text = out.pop("detail")
        out["reason"] = _v1_reason(str(text or ""), None)
        if text:
            out["message"] = str(text)
    elif kind == "decision_refused" and isinstance(out.get("reason"), str):
        text = out["reason"]
        out["reason"] = _v1_reason(text, out.get("seat") if isinstance(out.get("seat"), int) else None)
        out["limit_detail"] = text
    elif kind == "deck_verified" and "missing_count" not in out:
        out["missing_count"] = len(out.get("missing") or [])
        out["extra_count"] = len(out.get("extra") or [])
    return out


# version N -> the upcaster that makes its fields version N + 1
UPCASTERS: Mapping[int, Upcaster] = {1: _v1_to_v2}


def upcast_fields(kind: str, version: int, fields: Mapping[str, Any]) -> dict[str, Any]:
    """An entry's mixed fields at ``version`` brought to the current version by the chain."""
    if version > typed.ENTRY_SCHEMA_VERSION:
        raise typed.EntryError(newer_entry_words(kind, version))
    out = dict(fields)
    for step in range(max(version, FIRST_VERSION), typed.ENTRY_SCHEMA_VERSION):
        upcaster = UPCASTERS.get(step)
        if upcaster is None:
            raise typed.EntryError(f"journal: {kind}: no upcaster from entry version {step}")
        out = upcaster(kind, out)
    return out


def typed_from_legacy(kind: str, version: int, payload_text: str) -> typed.Entry:
    """The typed entry (both parts) of an entry written whole, as one payload, at ``version``."""
    try:
        fields = json.loads(payload_text)
    except ValueError as error:
        raise typed.EntryError(f"journal: {kind}: payload is not JSON: {error}") from None
    if not isinstance(fields, dict):
        raise typed.EntryError(f"journal: {kind}: payload is not a JSON object")
    return typed.build(kind, upcast_fields(kind, version, fields))


def typed_entry(kind: str, version: int, payload_text: str, private_text: str | None) -> typed.Entry:
    """The typed entry of a stored row, whatever version wrote it."""
    if version >= typed.ENTRY_SCHEMA_VERSION:
        if version > typed.ENTRY_SCHEMA_VERSION:
            upcast_fields(kind, version, {})  # the newer-release error
        return typed.decode(kind, payload_text, private_text)
    return typed_from_legacy(kind, version, payload_text)


_REFUSED = "refused: "
_KILL_EXCLUDED = re.compile(r"^seat (\d+) excluded from the round: (.*)$", re.DOTALL)
_KILL_DEAD = re.compile(r"^seat (\d+)(?: at the (.+?)'s request)?: (.*)$", re.DOTALL)
_DIFFERENCE = re.compile(r"^(.*); the difference accepted \((.+?)\): (.*)$", re.DOTALL)
_DEVICE_REASON = re.compile(r"^([^:]+): (.*)$", re.DOTALL)
_AT_THE_LOCK = re.compile(r"^refused at the lock: (.*)$", re.DOTALL)
_CLAIM_ANSWER = re.compile(r"^round (\S+): (.*)$", re.DOTALL)
_SENT = re.compile(r"^sent: (.*)$", re.DOTALL)
_AWARD_ID = re.compile(r"\baward (\S+) is\b")


def renamed_entry(legacy: typed.Entry) -> typed.Entry:
    """An entry of a renamed kind (``entries.RENAMED_KINDS``) as today's entry."""
    if isinstance(legacy, typed.OperatorAction):
        return operator_action_entry(legacy)
    raise typed.EntryError(f"journal: {legacy.kind}: no upcaster to a kind of today")


def operator_action_entry(old: typed.OperatorAction) -> typed.Entry:
    """An ``operator_action`` of releases up to 9254278 as the kind it is today (the module's list)."""
    action, by, detail = old.action, old.by, old.detail
    if isinstance(detail, dict) or old.outcome is not None:
        request = detail if isinstance(detail, dict) else {"detail": detail}
        return typed.PanelRequest(action=action, by=by, request=request, outcome=old.outcome or "")
    if detail.startswith(_REFUSED):
        return typed.ActionRefused(action=action, by=by, reason=detail[len(_REFUSED) :], private=old.private)
    if action == "set_limits" and isinstance(old.after, dict):
        before = old.before if isinstance(old.before, dict) else None
        return typed.LimitsSet(by=by, after=old.after, before=before, config_digest=old.config_digest)
    if action == "set_paytable" and old.wager is not None and old.after is not None:
        return typed.PaytableSet(
            wager=old.wager, by=by, after=old.after, before=old.before, config_digest=old.config_digest
        )
    mapped = _from_words(action, by, detail)
    return mapped if mapped is not None else typed.OperatorNote(action=action, by=by, detail=detail)


def _from_words(action: str, by: str, detail: str) -> typed.Entry | None:
    """The engine's records whose fields were in their words, read back; None if no form matches."""
    if action == "kill_seat":
        if (excluded := _KILL_EXCLUDED.match(detail)) is not None:
            return typed.SeatKilled(seat=int(excluded[1]), by=by, reason=excluded[2], excluded=True)
        if (dead := _KILL_DEAD.match(detail)) is not None:
            return typed.SeatKilled(seat=int(dead[1]), by=by, reason=dead[3], requested_by=dead[2])
    elif action == "void_round":
        return typed.VoidOrdered(by=by, reason=detail)
    elif action == "accept_difference" and (accepted := _DIFFERENCE.match(detail)) is not None:
        return typed.DifferenceAccepted(fault_id=accepted[2], by=by, reason=accepted[3], spot=accepted[1])
    elif action == "reset_device" and (reset := _DEVICE_REASON.match(detail)) is not None:
        return typed.DeviceReset(device=reset[1], by=by, reason=reset[2])
    elif action == "refuse_progressive" and (refused := _AT_THE_LOCK.match(detail)) is not None:
        return typed.ProgressiveRefusedAtLock(by=by, reason=refused[1])
    elif action == "progressive_claim_answered" and (answered := _CLAIM_ANSWER.match(detail)) is not None:
        return typed.LinkedClaimAnswered(by=by, answer=answered[2])
    elif action == "confirm_progressive_award" and (sent := _SENT.match(detail)) is not None:
        award = _AWARD_ID.search(sent[1])
        return typed.LinkedConfirmationSent(
            by=by, message=sent[1], award_id=None if award is None else award[1]
        )
    return None
