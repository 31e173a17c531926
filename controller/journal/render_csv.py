"""Recall and meters as CSV for a spreadsheet (`flushtable recall --csv`, `flushtable meters --csv`;
columns in docs/journal.md "CSV").

The same records and meters the text reads, through the same rules: a card shows in the CSV exactly
where recall's text shows it (never a dead round's nor a dead seat's), so CSV is no way round the
privacy gate. Money twice: integer cents (``*_cents``, for sums) and formatted (controller/money.py).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping
from typing import IO, Any

from controller.journal.render import banking_text, game_title, reason_words, wager_word
from controller.locale import DEFAULT_PROPERTY, PropertySettings, iso_time
from controller.money import MoneyFormat, money
from controller.rules.describe import describe_hand_json

RECALL_COLUMNS = (
    "round_id",
    "status",
    "started_utc",
    "started",  # the same moment in the property's zone, ISO 8601 with its offset
    "game",
    "banking",
    "round_reason",
    "dealer_cards",
    "dealer_hand",
    "dealer_qualifies",
    "community",
    "seat",
    "seat_status",
    "seat_reason",
    "cards",
    "hand",
    "wager",
    "wager_name",
    "stake_cents",
    "stake",
    "result",
    "odds",
    "net_cents",
    "net",
    "capped_from_cents",
    "shortfall_cents",
    "seat_rake_cents",
    "seat_net_cents",
    "seat_net",
)
METERS_COLUMNS = ("meter", "key", "value", "amount")


def _closing_reason(record: Mapping[str, Any]) -> str:
    for event in record.get("events") or []:
        if event.get("kind") in ("round_voided", "round_dead"):
            payload = event.get("payload") or {}
            by = f" (by {payload['by']})" if payload.get("by") else ""
            return reason_words(payload.get("reason")) + by
    return ""


def recall_rows(
    record: Mapping[str, Any], prop: PropertySettings = DEFAULT_PROPERTY
) -> Iterator[dict[str, object]]:
    """One row per wager (a seat with no wager, or a round with no seat: one row), every column of
    RECALL_COLUMNS; amounts and the local time the property's (controller/locale.py)."""
    fmt = prop.money
    round_json = record.get("round") or {}
    settlement = record.get("settlement") or {}
    events = record.get("events") or []
    dead_round = bool(settlement.get("dead"))
    dealer = settlement.get("dealer") or {}
    # What recall's text shows (controller/journal/render.py settlement_lines): no card of a dead round.
    shows_table = not dead_round and bool(dealer)
    cards_by_seat = {seat.get("seat"): seat.get("cards") or [] for seat in round_json.get("seats") or []}
    base: dict[str, object] = {
        "round_id": record.get("round_id"),
        "status": record.get("status"),
        "started_utc": events[0]["time_utc"] if events else "",
        "started": iso_time(events[0]["time_utc"], prop) if events else "",
        "game": game_title(round_json.get("game")),
        "banking": banking_text(round_json),
        "round_reason": _closing_reason(record),
        "dealer_cards": " ".join(round_json.get("dealer") or []) if shows_table else "",
        "dealer_hand": describe_hand_json(dealer.get("hand")) if shows_table else "",
        "dealer_qualifies": ("yes" if dealer.get("qualifies") else "no") if shows_table else "",
        "community": " ".join(round_json.get("community") or []) if shows_table else "",
    }
    seats = settlement.get("seats") or []
    if not seats:
        yield base
    for seat in seats:
        status = str(seat.get("status", ""))
        shows_seat = not dead_round and status != "dead"  # a dead hand's cards are never shown
        seat_net = int(seat.get("net", 0))
        seat_row = {
            **base,
            "seat": seat.get("seat"),
            "seat_status": status,
            "seat_reason": seat.get("reason", ""),
            "cards": " ".join(cards_by_seat.get(seat.get("seat"), [])) if shows_seat else "",
            "hand": describe_hand_json(seat.get("hand")) if shows_seat and seat.get("hand") else "",
            "seat_rake_cents": int(seat.get("rake", 0)),
            "seat_net_cents": seat_net,
            "seat_net": fmt(seat_net, signed=True),
        }
        wagers = seat.get("wagers") or {}
        if not wagers:
            yield seat_row
        for name, wager in wagers.items():
            stake, net = int(wager.get("stake", 0)), int(wager.get("net", 0))
            yield {
                **seat_row,
                "wager": name,
                "wager_name": wager_word(name),
                "stake_cents": stake,
                "stake": fmt(stake),
                "result": wager.get("result", ""),
                "odds": wager.get("odds", ""),
                "net_cents": net,
                "net": fmt(net, signed=True),
                "capped_from_cents": wager.get("capped_from", ""),
                "shortfall_cents": wager.get("shortfall", ""),
            }


def write_recall_csv(
    records: list[dict[str, Any]], out: IO[str], prop: PropertySettings = DEFAULT_PROPERTY
) -> None:
    writer = csv.DictWriter(out, fieldnames=RECALL_COLUMNS, lineterminator="\n", restval="")
    writer.writeheader()
    for record in records:
        writer.writerows(recall_rows(record, prop))


def meters_rows(meters: Mapping[str, Any], fmt: MoneyFormat = money) -> Iterator[tuple[object, ...]]:
    """Long form: every number of the meters' JSON one row, ``(meter, key, value, amount)``; ``key`` the
    wager or the fault kind of a per-wager or per-kind meter; ``amount`` formatted for a ``*_cents``."""
    for name, value in meters.items():
        if name == "by_wager":
            for wager, meter in value.items():
                for field, number in meter.items():
                    amount = fmt(int(number), signed="net" in field or "win" in field)
                    yield (f"by_wager.{field}", wager, number, amount if field.endswith("_cents") else "")
        elif name == "faults_by_kind":
            for kind, count in value.items():
                yield ("faults_by_kind", kind, count, "")
        elif name == "unbalanced_rounds":
            for round_id in value:
                yield ("unbalanced_round", round_id, "", "")
        elif isinstance(value, bool):
            yield (name, "", "yes" if value else "no", "")
        elif isinstance(value, int):
            signed = "net" in name or "win" in name
            yield (name, "", value, fmt(value, signed=signed) if name.endswith("_cents") else "")


def write_meters_csv(meters: Mapping[str, Any], out: IO[str], fmt: MoneyFormat = money) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(METERS_COLUMNS)
    writer.writerows(meters_rows(meters, fmt))
