"""Recall, settlements and meters as text for a terminal: what a supervisor reads at the pit stand.

One renderer for a settled round (:func:`settlement_lines`), used by ``flushtable recall``, the
daemon's live round lines and ``flushtable settle --text``: per seat its cards, its hand in words
(controller/rules/describe.py), every wager's stake, result and net; the dealer's hand and
qualification; the totals. Amounts through controller/money.py (``1,234.50``); a returned wager says
"returned in full", never "returned 0.00".
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller.money import MoneyFormat, money
from controller.names import GAME_TITLES
from controller.rules.catalogue import wager_label
from controller.rules.describe import describe_hand_json
from controller.rules.games import GAMES

if TYPE_CHECKING:
    from controller.journal.entries import Entry
    from controller.journal.entry_view import EntryView
    from controller.locale import PropertySettings

_RESULT_WORDS = {"win": "win", "lose": "lose", "push": "push", "returned": "returned in full"}
_INDENT = " " * 13
_RECORD_LINE_KINDS = frozenset({"kill_seat_request", "round_voided", "round_dead"})


def hand_text(hand: Mapping[str, Any] | None) -> str:
    """A settlement's HAND in words (kept under its old name for readers of this module)."""
    return describe_hand_json(hand)


def wager_word(name: str) -> str:
    """The wager's words from its catalogue line (controller/rules/catalogue.py)."""
    return wager_label(name)


def _in_spot_order(game: str, wagers: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The journal's JSON sorts keys; people read wagers in the layout's order (ante first)."""
    spec = GAMES.get(game)
    order = {name: index for index, name in enumerate(spec.wagers)} if spec else {}
    return sorted(wagers.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))


def banking_text(round_json: Mapping[str, Any]) -> str:
    banking = round_json.get("banking") or {"mode": "house"}
    if banking.get("mode", "house") == "house":
        return "house-banked"
    return f"designated player seat {banking.get('seat')}"


def game_title(game: object) -> str:
    return GAME_TITLES.get(str(game), str(game))


# The round machine's phases (controller/engine/machine.py) as the pit reads them.
_PHASE_WORDS = {
    "idle": "waiting for the next round",
    "betting": "taking bets",
    "bets_locked": "bets locked, dealing next",
    "dealing": "dealing",
    "decisions": "players deciding",
    "preflop": "players deciding before the flop",
    "dealing_flop": "dealing the flop",
    "flop": "players deciding on the flop",
    "dealing_turn_river": "dealing the turn and river",
    "river": "players deciding on the river",
    "reveal": "revealing the hands",
    "settling": "settling",
    "paying": "paying",
    "complete": "round complete",
    "held": "held",
    "dead": "round dead",
}


def phase_words(phase: str) -> str:
    """``dealing_turn_river`` -> ``dealing the turn and river``; ``held/betting`` -> ``held while
    taking bets``; an unknown phase as it is, its underscores spaces."""
    parent, _, child = phase.partition("/")
    if parent == "held" and child:
        return f"held while {phase_words(child)}"
    return _PHASE_WORDS.get(phase, phase.replace("_", " "))


def _wager_line(name: str, wager: Mapping[str, Any], fmt: MoneyFormat) -> str:
    result = str(wager.get("result", ""))
    words = _RESULT_WORDS.get(result, result)
    if wager.get("odds"):
        words += f" at {wager['odds']} to 1"
    net = int(wager.get("net", 0))
    net_text = "" if result == "returned" else fmt(net, signed=True)
    notes = ""
    if wager.get("capped_from") is not None:
        notes += f"  (capped from {fmt(int(wager['capped_from']))} by the bonus cap)"
    if wager.get("shortfall"):
        notes += f"  ({fmt(int(wager['shortfall']))} owed, not paid: the designated player's funds ran out)"
    stake = fmt(int(wager.get("stake", 0)))
    return f"{_INDENT}{wager_word(name):<22}{stake:>12}  {words:<18}{net_text:>12}{notes}".rstrip()


def settlement_lines(  # noqa: PLR0912, PLR0915 - one branch per line of a settlement's text, in the text's order
    round_json: Mapping[str, Any],
    settlement: Mapping[str, Any],
    fmt: MoneyFormat = money,
    *,
    withheld_dead: bool = True,
    dead_reasons: Mapping[str, str] | None = None,
) -> list[str]:
    """A settled round's body, as lines: the banker's cards and hand, then each seat's, then totals.

    ``withheld_dead``: a dead hand's cards are never shown (recall, the live lines); ``settle --text``
    prints what it was given (False). ``dead_reasons``: seat -> why it is dead, from the round's
    dead_hand entries (recall's ``dead_hands``), over the settlement's own reason."""
    game = str(round_json.get("game"))
    lines: list[str] = []
    banking = round_json.get("banking") or {"mode": "house"}
    dead_round = bool(settlement.get("dead"))
    cards_by_seat = {seat.get("seat"): seat.get("cards", []) for seat in round_json.get("seats", [])}
    dealer = settlement.get("dealer")
    if dead_round and withheld_dead:
        lines.append("  Cards withheld: a dead hand's cards are never shown.")
    elif dead_round:
        lines.append("  The round is dead: every wager is returned in full.")
    else:
        community = round_json.get("community")
        if community:
            lines.append(f"  Community  {' '.join(community)}")
        label = "Dealer" if banking.get("mode", "house") == "house" else "DP"
        dealer_cards = " ".join(round_json.get("dealer", []))
        qualifies = "qualifies" if dealer and dealer.get("qualifies") else "does NOT qualify"
        hand = describe_hand_json(dealer.get("hand") if dealer else None)
        lines.append(f"  {label:<10} {dealer_cards:<21}  {hand}: {qualifies}")
    players_net = 0
    for seat in settlement.get("seats", []):
        number = seat.get("seat")
        status = str(seat.get("status", ""))
        if status == "dead" and withheld_dead:
            cards = "(withheld)"
        else:
            cards = " ".join(cards_by_seat.get(number, [])) or "(no cards)"
        why = (dead_reasons or {}).get(str(number)) or seat.get("reason")
        reason = f": {why}" if why else ""
        note = f"  [{status}{reason}]" if status != "live" else ""
        hand = "" if status == "dead" else describe_hand_json(seat.get("hand"))
        lines.append(f"  Seat {number:<5} {cards:<21}  {hand}{note}".rstrip())
        wagers = _in_spot_order(game, seat.get("wagers") or {})
        for name, wager in wagers:
            lines.append(_wager_line(name, wager, fmt))
        if not wagers:
            lines.append(f"{_INDENT}no wagers")
        rake = int(seat.get("rake", 0))
        if rake:
            lines.append(f"{_INDENT}{'rake':<22}{'':>12}  {'':<18}{fmt(-rake, signed=True):>12}")
        seat_net = int(seat.get("net", 0))
        players_net += seat_net
        lines.append(f"{_INDENT}seat net {fmt(seat_net, signed=True)}")
    banker_net = int(settlement.get("banker_net", 0))
    lines.append(
        f"  Players net {fmt(players_net, signed=True)}   banker net {fmt(banker_net, signed=True)}   "
        f"rake {fmt(int(settlement.get('rake', 0)))}"
    )
    dp = settlement.get("designated_player")
    if dp:
        lines.append(
            f"  Designated player seat {dp.get('seat')}: funds {fmt(int(dp.get('funds', 0)))}, "
            f"collected {fmt(int(dp.get('collected', 0)))}, paid {fmt(int(dp.get('paid', 0)))}, "
            f"shortfall {fmt(int(dp.get('shortfall', 0)))}"
        )
    cap = settlement.get("bonus_cap")
    if cap and cap.get("applied"):
        lines.append(
            f"  Bonus cap {fmt(int(cap['cap']))}: wins {fmt(int(cap['bonus_wins']))} paid "
            f"{fmt(int(cap['paid']))}, rounding {fmt(int(cap['rounding']))}"
        )
    progressive = settlement.get("progressive")
    if isinstance(progressive, Mapping):
        lines.extend(progressive_lines(progressive, fmt))
    return lines


def progressive_lines(progressive: Mapping[str, Any], fmt: MoneyFormat = money) -> list[str]:
    """The round's Progressive wager (docs/settle.md "The Progressive wager"): contributions, each award in
    the order paid, the reset and the reserve, the meter before and after."""
    added = progressive.get("contributions") or {}
    reserve = progressive.get("reserve") or {}
    lines = [
        f"  Progressive: meter {fmt(int(progressive.get('meter_before_cents', 0)))}; "
        f"{added.get('wagers', 0)} wagers add {fmt(int(added.get('to_meter_cents', 0)))} to the meter"
        + (f" ({fmt(int(added['overflow_cents']))} overflow)" if added.get("overflow_cents") else "")
        + f", {fmt(int(added.get('hidden_cents', 0)))} to the reserve"
    ]
    for award in progressive.get("awards") or []:
        paid = fmt(int(award.get("amount_cents", 0)))
        where = "house" if award.get("paid_from") == "house" else "meter"
        shared = f", shared by {award['shared_by']}" if award.get("shared_by") else ""
        around = (
            f" (meter {fmt(int(award.get('meter_before_cents', 0)))} -> "
            f"{fmt(int(award.get('meter_after_cents', 0)))}{shared})"
            if where == "meter"
            else ""
        )
        lines.append(
            f"    seat {award.get('seat')} {award.get('line')}-card run: {paid} from the {where}{around}"
        )
    reset = progressive.get("reset")
    if isinstance(reset, Mapping):
        lines.append(
            f"    reset to {fmt(int(reset.get('amount_cents', 0)))}: "
            f"{fmt(int(reset.get('from_reserve_cents', 0)))} from the reserve, "
            f"{fmt(int(reset.get('house_added_cents', 0)))} added by the house"
        )
    lines.append(
        f"    meter after {fmt(int(progressive.get('meter_after_cents', 0)))}; reserve "
        f"{fmt(int(reserve.get('before_cents', 0)))} -> {fmt(int(reserve.get('after_cents', 0)))}; "
        f"progressive net {fmt(int(progressive.get('net_cents', 0)), signed=True)}"
    )
    return lines


def render_settlement(
    round_json: Mapping[str, Any], settlement: Mapping[str, Any], fmt: MoneyFormat = money
) -> str:
    """``flushtable settle --text``: the round as a dealer or supervisor reads it."""
    title = f"{game_title(round_json.get('game'))}, {banking_text(round_json)}"
    if settlement.get("dead"):
        title += "  DEAD"
    return "\n".join([title, *settlement_lines(round_json, settlement, fmt, withheld_dead=False)])


def reason_words(reason: object) -> str:
    """A closing entry's reason in words: a void's is text; a dead round's is a ``Reason`` (``code``,
    ``message``: built for people from public values only), read by its message: the typed Reason
    (controller/journal/entries/) or, in a payload, its JSON object."""
    if isinstance(reason, Mapping):
        message, code = reason.get("message"), reason.get("code", "")
    elif reason is not None and not isinstance(reason, str):
        message, code = getattr(reason, "message", None), getattr(reason, "code", "")
    else:
        return "" if reason is None else str(reason)
    return str(message) if message else str(code).replace("_", " ")


def render_record(
    record: Mapping[str, Any], fmt: MoneyFormat = money, prop: PropertySettings | None = None
) -> str:
    """A recalled round as text; its start in the property's zone (the default property's when
    ``prop`` is None), named (controller/locale.py). Its events are read as their typed entries read
    them (``event_read``)."""
    # The property's times load with the first round that shows one: `settle --text` prints no time, and
    # controller/locale.py (its dataclasses, `datetime`) is no part of its start (issue 28).
    from controller.locale import DEFAULT_PROPERTY, time_text  # noqa: PLC0415

    round_json = record.get("round") or {}
    settlement = record.get("settlement") or {}
    events = record.get("events") or []
    shown_in = prop if prop is not None else DEFAULT_PROPERTY
    started = time_text(events[0]["time_utc"], shown_in) if events else ""
    game = game_title(round_json.get("game"))
    lines = [
        f"Round {record['round_id']}  {str(record['status']).upper()}  {game}, "
        f"{banking_text(round_json)}  {started}".rstrip()
    ]
    lines.extend(settlement_lines(round_json, settlement, fmt, dead_reasons=record.get("dead_hands")))
    running = record.get("bank_by_seat")
    if isinstance(running, Mapping):  # a designated player's bank, seat by seat in settlement order
        steps = [
            f"seat {step.get('seat')} paid {fmt(step.get('paid', 0))} -> {fmt(step.get('bank_after', 0))}"
            for step in running.get("seats") or []
        ]
        lines.append(
            f"  DP bank: {fmt(running.get('funds', 0))} posted, {fmt(running.get('collected', 0))} "
            f"collected -> {fmt(running.get('after_collecting', 0))}; " + "; ".join(steps or ["nobody paid"])
        )
    # Only the kinds read below are decoded (a round holds dozens of other entries).
    typed: list[Any] = [event_read(event) for event in events if event.get("kind") in _RECORD_LINE_KINDS]
    for entry in typed:
        if entry is not None and entry.kind == "kill_seat_request":
            why = f": {entry.reason}" if entry.reason else ""
            # The request's number is absent in entries written before requests were numbered.
            number = entry.request_number
            named = "Kill request" if number is None else f"Kill request {number}"
            lines.append(f"  {named}, seat {entry.seat}: {entry.status} by {entry.by}{why}")
    for fault in record.get("faults") or []:
        raised: Any = event_read({"kind": "fault_raised", "payload": fault})
        if raised is not None and raised.kind == "fault_raised":
            lines.append(f"  Fault {raised.fault_id}: {raised.kind_of_fault} ({raised.severity})".rstrip())
    for entry in typed:
        if entry is not None and entry.kind in ("round_voided", "round_dead"):
            by = f" by {entry.by}" if entry.kind == "round_voided" and entry.by else ""
            why = reason_words(entry.reason)
            lines.append(f"  {entry.kind.replace('_', ' ').capitalize()}{by}: {why}".rstrip(": "))
    return "\n".join(lines)


def event_read(event: Mapping[str, Any]) -> Entry | EntryView | None:
    """``event_entry``'s entry, as its view where one reads it (controller/journal/entry_view.py: the
    same fields, without loading the typed classes: `flushtable recall` prints its rounds so, issue 28),
    else the typed entry itself (None where that refuses the payload)."""
    from controller.journal.entry_view import KIND_FIELDS, view_of  # noqa: PLC0415 - a recall's, not settle's

    kind = str(event.get("kind", ""))
    fields = KIND_FIELDS.get(kind)
    if fields is not None:
        # The payload's public fields (as ``typed_entry`` takes them), the private part where given.
        names = {name for attribute, name, *_ in fields if attribute != "private"}
        payload = event.get("payload") or {}
        public = {name: value for name, value in payload.items() if name in names}
        seen = view_of(kind, public, event.get("private"))
        if seen is not None:
            return seen
    return event_entry(event)


def event_entry(event: Mapping[str, Any]) -> Entry | None:
    """An event as the privacy gate let it out (``{"kind", "payload", "private", ...}``: recall's, the
    panel's) as its typed entry (``typed_entry``). None for a kind no release wrote or a payload that is
    not that kind's: it is then not read at all, rather than read wrongly."""
    from controller.journal import entries  # noqa: PLC0415 - `settle --text` renders no entry (no msgspec)

    try:
        return typed_entry(str(event.get("kind", "")), event.get("payload") or {}, event.get("private"))
    except entries.EntryError:
        return None


def typed_entry(kind: str, payload: Mapping[str, Any], private: Mapping[str, Any] | None = None) -> Entry:
    """The typed entry (controller/journal/entries/) of a payload, by the one typed decoder
    (``entries.from_parts``): the payload's public fields (a payload may hold the private part merged
    into it: a trusted reader's, or a viewer's once the gate showed it), and the private part where the
    caller has it. EntryError for a kind no release wrote or a payload that is not that kind's."""
    from controller.journal import entries  # noqa: PLC0415 - `settle --text` renders no entry (no msgspec)

    cls = entries.CLASS_BY_STORED_KIND.get(kind)
    if cls is None:
        raise entries.EntryError(f"journal: unknown entry kind {kind!r}")
    names = _public_names(cls)
    public = {name: value for name, value in payload.items() if name in names}
    return entries.from_parts(kind, public, private)


@functools.cache
def _public_names(cls: type[Entry]) -> frozenset[str]:
    """The names a class's public part has in JSON (the floor decodes many entries: made once)."""
    import msgspec  # noqa: PLC0415 - `settle --text` renders no entry (no msgspec)

    return frozenset(field.encode_name for field in msgspec.structs.fields(cls)) - {"private"}


def render_records(
    records: list[dict[str, Any]], fmt: MoneyFormat = money, prop: PropertySettings | None = None
) -> str:
    if not records:
        return "No closed rounds in the journal."
    return "\n\n".join(render_record(record, fmt, prop) for record in records)


def render_meters(meters: Mapping[str, Any], fmt: MoneyFormat = money) -> str:
    lines = [
        f"Rounds: {meters['rounds_started']} started, {meters['rounds_settled']} settled, "
        f"{meters['rounds_dead']} dead, {meters['rounds_voided']} voided, {meters['rounds_open']} open",
        f"Handle {fmt(meters['handle_cents'])}   "
        f"house win {fmt(meters['house_win_cents'], signed=True)}   "
        f"rake {fmt(meters['rake_cents'])}   returned {fmt(meters['returned_cents'])}",
        f"Players net {fmt(meters['player_net_cents'], signed=True)}   banker net "
        f"{fmt(meters['banker_net_cents'], signed=True)}   designated players net "
        f"{fmt(meters['dp_net_cents'], signed=True)}",
        f"Dead hands {meters['dead_hands']}   "
        f"faults raised {meters['faults_raised']}, cleared {meters['faults_cleared']}",
    ]
    if meters["by_wager"]:
        lines.append(
            f"  {'wager':<24}{'stake':>14}{'house win':>14}{'win':>7}{'lose':>7}{'push':>7}{'ret.':>7}"
        )
        for name, meter in meters["by_wager"].items():
            lines.append(
                f"  {name:<24}{fmt(meter['stake_cents']):>14}"
                f"{fmt(meter['house_win_cents'], signed=True):>14}"
                f"{meter['wins']:>7}{meter['losses']:>7}{meter['pushes']:>7}{meter['returned']:>7}"
            )
    # A progressive table's balance counts the jackpot fund's net (the line says so only there).
    progressive_net = int(meters.get("progressive_net_cents", 0))
    if progressive_net:
        lines.append(f"Progressive net {fmt(progressive_net, signed=True)}")
    balance = "players + banker + rake + progressive" if progressive_net else "players + banker + rake"
    lines.append(
        f"Balanced: {balance} = 0" if meters["balanced"] else f"NOT BALANCED: {meters['unbalanced_rounds']}"
    )
    return "\n".join(lines)
