"""Recall and meters as text for a terminal: what a supervisor reads at the pit stand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.names import GAME_TITLES as _GAME_NAMES
from controller.rules.games import GAMES

_SUIT_NAMES = {"c": "clubs", "d": "diamonds", "h": "hearts", "s": "spades"}


def money(cents: int, *, signed: bool = False) -> str:
    """12345 -> "123.45"; signed: "+123.45" / "-123.45" / "0.00"."""
    sign = "-" if cents < 0 else ("+" if signed and cents > 0 else "")
    whole, part = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{part:02d}"


def hand_text(hand: Mapping[str, Any] | None) -> str:
    if not hand:
        return "-"
    suit = _SUIT_NAMES.get(str(hand.get("flush_suit", "")), "")
    text = f"{hand.get('flush_length')}-card flush {hand.get('flush_ranks', '')} {suit}"
    run = hand.get("straight_flush_length", 0)
    if isinstance(run, int) and run >= 3:
        text += f", {run}-card straight flush to {hand.get('straight_flush_high')}"
    return text.strip()


def _in_spot_order(game: str, wagers: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The journal's JSON sorts keys; people read wagers in the layout's order (ante first)."""
    spec = GAMES.get(game)
    order = {name: index for index, name in enumerate(spec.wagers)} if spec else {}
    return sorted(wagers.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))


def render_record(record: Mapping[str, Any]) -> str:
    round_json = record.get("round") or {}
    settlement = record.get("settlement") or {}
    events = record.get("events") or []
    started = events[0]["time_utc"] if events else ""
    banking = round_json.get("banking") or {"mode": "house"}
    game = _GAME_NAMES.get(str(round_json.get("game")), str(round_json.get("game")))
    mode = (
        "house-banked"
        if banking.get("mode", "house") == "house"
        else f"designated player seat {banking.get('seat')}"
    )
    lines = [f"Round {record['round_id']}  {str(record['status']).upper()}  {game}, {mode}  {started}"]
    dead_round = bool(settlement.get("dead"))
    cards_by_seat = {seat.get("seat"): seat.get("cards", []) for seat in round_json.get("seats", [])}
    dealer = settlement.get("dealer")
    if dead_round:
        lines.append("  Cards withheld: a dead hand's cards are never shown.")
    else:
        dealer_cards = " ".join(round_json.get("dealer", []))
        community = round_json.get("community")
        if community:
            lines.append(f"  Community  {' '.join(community)}")
        qualifies = "qualifies" if dealer and dealer.get("qualifies") else "does not qualify"
        label = "Dealer" if banking.get("mode", "house") == "house" else "DP    "
        lines.append(
            f"  {label}     {dealer_cards:<21}  {hand_text(dealer and dealer.get('hand'))}; {qualifies}"
        )
    for seat in settlement.get("seats", []):
        number = seat.get("seat")
        status = seat.get("status", "")
        cards = "(withheld)" if status == "dead" else " ".join(cards_by_seat.get(number, []))
        note = (
            f"  [{status}{': ' + seat['reason'] if seat.get('reason') else ''}]" if status != "live" else ""
        )
        hand = "" if status == "dead" else hand_text(seat.get("hand"))
        lines.append(f"  Seat {number}     {cards:<21}  {hand}{note}")
        wager_parts = []
        for name, wager in _in_spot_order(str(round_json.get("game")), seat.get("wagers") or {}):
            odds = f" at {wager['odds']} to 1" if wager.get("odds") else ""
            capped = (
                f" (capped from {money(wager['capped_from'])})"
                if wager.get("capped_from") is not None
                else ""
            )
            short = f" (short {money(wager['shortfall'])})" if wager.get("shortfall") else ""
            wager_parts.append(
                f"{name} {money(int(wager.get('stake', 0)))} {wager.get('result')}{odds} "
                f"{money(int(wager.get('net', 0)), signed=True)}{capped}{short}"
            )
        rake = int(seat.get("rake", 0))
        if rake:
            wager_parts.append(f"rake -{money(rake)}")
        lines.append(f"             {'; '.join(wager_parts) or 'no wagers'}")
        lines.append(f"             net {money(int(seat.get('net', 0)), signed=True)}")
    lines.append(
        f"  Banker net {money(int(settlement.get('banker_net', 0)), signed=True)}"
        f"   rake {money(int(settlement.get('rake', 0)))}"
    )
    dp = settlement.get("designated_player")
    if dp:
        lines.append(
            f"  Designated player seat {dp.get('seat')}: funds {money(int(dp.get('funds', 0)))}, "
            f"collected {money(int(dp.get('collected', 0)))}, paid {money(int(dp.get('paid', 0)))}, "
            f"shortfall {money(int(dp.get('shortfall', 0)))}"
        )
    cap = settlement.get("bonus_cap")
    if cap and cap.get("applied"):
        lines.append(
            f"  Bonus cap {money(int(cap['cap']))}: wins {money(int(cap['bonus_wins']))} paid "
            f"{money(int(cap['paid']))}, rounding {money(int(cap['rounding']))}"
        )
    for fault in record.get("faults") or []:
        lines.append(
            f"  Fault {fault.get('fault_id')}: {fault.get('kind')} ({fault.get('severity')}) "
            f"{fault.get('detail', '')}".rstrip()
        )
    for event in events:
        if event.get("kind") in ("round_voided", "round_dead"):
            payload = event.get("payload") or {}
            by = f" by {payload['by']}" if payload.get("by") else ""
            lines.append(f"  {event['kind'].replace('_', ' ').capitalize()}{by}: {payload.get('reason', '')}")
    return "\n".join(lines)


def render_records(records: list[dict[str, Any]]) -> str:
    if not records:
        return "No closed rounds in the journal."
    return "\n\n".join(render_record(record) for record in records)


def render_meters(meters: Mapping[str, Any]) -> str:
    lines = [
        f"Rounds: {meters['rounds_started']} started, {meters['rounds_settled']} settled, "
        f"{meters['rounds_dead']} dead, {meters['rounds_voided']} voided, {meters['rounds_open']} open",
        f"Handle {money(meters['handle_cents'])}   "
        f"house win {money(meters['house_win_cents'], signed=True)}   "
        f"rake {money(meters['rake_cents'])}   returned {money(meters['returned_cents'])}",
        f"Players net {money(meters['player_net_cents'], signed=True)}   banker net "
        f"{money(meters['banker_net_cents'], signed=True)}   designated players net "
        f"{money(meters['dp_net_cents'], signed=True)}",
        f"Dead hands {meters['dead_hands']}   "
        f"faults raised {meters['faults_raised']}, cleared {meters['faults_cleared']}",
    ]
    if meters["by_wager"]:
        lines.append(
            f"  {'wager':<24}{'stake':>14}{'house win':>14}{'win':>7}{'lose':>7}{'push':>7}{'ret.':>7}"
        )
        for name, meter in meters["by_wager"].items():
            lines.append(
                f"  {name:<24}{money(meter['stake_cents']):>14}"
                f"{money(meter['house_win_cents'], signed=True):>14}"
                f"{meter['wins']:>7}{meter['losses']:>7}{meter['pushes']:>7}{meter['returned']:>7}"
            )
    lines.append(
        "Balanced: players + banker + rake = 0"
        if meters["balanced"]
        else f"NOT BALANCED: {meters['unbalanced_rounds']}"
    )
    return "\n".join(lines)
