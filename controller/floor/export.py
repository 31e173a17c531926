"""The floor panel's CSV downloads (docs/floor.md "CSV"): a round's page and the meters page, in the
columns of `flushtable recall --csv` and `flushtable meters --csv` (controller/journal/render_csv.py,
unchanged). A round's record is made from what its page shows and nothing more: each entry's public
part, and its private part only where the round page shows it (read through ``floor_private_shown`` and
passed through the one reducer's gate again) — so a card is in the CSV exactly where the table's own
recall shows it."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from controller.journal import entries as typed
from controller.journal.kinds import STATUS_BY_CLOSING_KIND
from controller.journal.render_csv import (
    METERS_COLUMNS,
    RECALL_COLUMNS,
    meters_rows,
    recall_rows,
    write_recall_csv,
)
from controller.locale import DEFAULT_PROPERTY, PropertySettings
from controller.panel.downloads import csv_response as csv_response  # noqa: PLC0414 - re-exported: the floor panel calls export.csv_response
from controller.rules.games import GAMES

# The floor's meter views' numbers (floor_meters_by_*), each a row of the CLI's meters CSV.
_METER_FIELDS = ("rounds_settled", "handle_cents", "house_win_cents", "theoretical_win_cents")


def round_record(round_id: str, events: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The recall record (controller/journal/recall.py's shape, the fields render_csv reads) of a closed
    round from the round page's events, each read as its typed entry (controller/journal/entries/);
    None while the round is not closed."""
    read = [(event, _typed_entry(event)) for event in events]
    closing = next((entry for _, entry in read if isinstance(entry, _CLOSING_CLASSES)), None)
    if closing is None:
        return None
    started = next((entry for _, entry in read if isinstance(entry, typed.RoundStarted)), None)
    round_json, settlement = _closing_round_and_settlement(closing, started)
    return {
        # A settled round's cards and hands withheld from this reader (a viewer's page: the closing's
        # private part not shown): the CSV says "withheld" where they would be (``round_csv``).
        "withheld": isinstance(closing, typed.RoundSettled) and closing.private is None,
        "round_id": round_id,
        "status": STATUS_BY_CLOSING_KIND[closing.kind],
        "round": round_json,
        "settlement": settlement,
        # render_csv reads an event's time and, of a dead or voided round's closing, its reason and by.
        "events": [
            {"time_utc": event["time_utc"], "kind": entry.kind, "payload": typed.public_dict(entry)}
            for event, entry in read
        ],
    }


_CLOSING_CLASSES = (typed.RoundSettled, typed.RoundDead, typed.RoundVoided)


def _typed_entry(event: Mapping[str, Any]) -> typed.Entry:
    """A page's event (its public part, and its private part where the page shows it, as JSON text)."""
    private = json.loads(event["private"]) if event.get("private") else None
    return typed.from_parts(str(event["kind"]), json.loads(event["public"]), private)


def _closing_round_and_settlement(
    closing: typed.RoundSettled | typed.RoundDead | typed.RoundVoided,
    started: typed.RoundStarted | None,
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The closing entry's round (the settle input) and settlement (the settle output). A settled
    round's are in its private part, its hands back in the settlement, when the page shows them; when
    not (a viewer's page), its public settlement and of its round only what is public. A dead or voided
    round's are public."""
    if not isinstance(closing, typed.RoundSettled):
        return closing.round, closing.settlement
    if closing.private is None:
        return _public_round(started), closing.settlement
    return closing.private.round, typed.settlement_with_hands(closing.settlement, closing.private.hands)


def _public_round(started: typed.RoundStarted | None) -> dict[str, Any] | None:
    """Of a settled round's settle input, what is public: its game and banking, as its round_started
    announced them (the settle input's own, copied from it; the CSV's ``game`` and ``banking`` columns
    read them there). No card: those stay in the private part the page withholds."""
    if started is None:
        return None
    return {"game": started.game, "banking": started.banking}


WITHHELD = "withheld"  # a private column's text where the reader is not shown the cards it holds


def round_csv(record: dict[str, Any], prop: PropertySettings = DEFAULT_PROPERTY) -> str:
    """`flushtable recall --csv`'s rows of ``record``; for a reader shown no private part of a settled
    round (``record["withheld"]``), each card or hand column that holds cards for a reader of private
    parts says "withheld" instead: an auditor reading the file tells "withheld from you" from "no card"
    (empty: a dead seat's, a round with no dealer's cards, a game with no community cards)."""
    out = io.StringIO()
    if not record.get("withheld"):
        write_recall_csv([record], out, prop)
        return out.getvalue()
    writer = csv.DictWriter(out, fieldnames=RECALL_COLUMNS, lineterminator="\n", restval="")
    writer.writeheader()
    settlement = record.get("settlement") or {}
    # The rules recall_rows shows a card by (a dead round's none, a dead seat's none), read from the
    # public settlement: where a reader of private parts has cards, this reader has "withheld".
    table_cards = not settlement.get("dead") and bool(settlement.get("dealer"))
    spec = GAMES.get(str((record.get("round") or {}).get("game")))
    community = table_cards and spec is not None and spec.community_cards > 0
    for row in recall_rows(record, prop):
        seat_cards = (
            not settlement.get("dead") and row.get("seat", "") != "" and row.get("seat_status") != "dead"
        )
        row.update({
            "dealer_cards": WITHHELD if table_cards else "",
            "dealer_hand": WITHHELD if table_cards else "",
            "community": WITHHELD if community else "",
            "cards": WITHHELD if seat_cards else "",
            "hand": WITHHELD if seat_cards else "",
        })  # fmt: skip
        writer.writerow(row)
    return out.getvalue()


def meters_csv(by: str, rows: Sequence[Mapping[str, Any]], prop: PropertySettings = DEFAULT_PROPERTY) -> str:
    """The meters page's rows in the CLI's long form: ``(meter, key, value, amount)``, ``key`` the row's
    table, pit, game or shift and ``meter`` ``by_<that>.<field>``, as the CLI's ``by_wager.<field>``
    (PostgreSQL's sums come back as Decimal: whole cents)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(METERS_COLUMNS)
    for row in rows:
        numbers = {field: int(row.get(field) or 0) for field in _METER_FIELDS}
        for meter, _key, value, amount in meters_rows(numbers, prop.money):
            writer.writerow((f"by_{by}.{meter}", row["key"], value, amount))
    return out.getvalue()


def progressive_csv(detail: Mapping[str, Any], prop: PropertySettings = DEFAULT_PROPERTY) -> str:  # noqa: PLR0912 - one branch per column group of the CSV
    """The progressive page (controller/floor/progressive_view.link_detail) in the same long form,
    ``(meter, key, value, amount)``: ``parameter.*`` and ``meter.*`` keyed by the link, ``level.*`` by
    the paytable line, ``table.*`` by the table, ``hit.*`` by the hit's number in the controller's
    order, ``reconciliation.*`` by ``table shift``. ``amount`` is formatted for a ``*_cents``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(METERS_COLUMNS)
    link_id = str(detail["link"]["link_id"])

    def row(meter: str, key: object, value: object) -> None:
        amount = ""
        if meter.endswith("_cents") and isinstance(value, int) and not isinstance(value, bool):
            amount = prop.money(value, signed=meter.endswith("difference_cents"))
        writer.writerow((meter, key, "" if value is None else value, amount))

    for section in ("parameters", "meters"):
        for field, value in detail[section].items():
            row(f"{section[:-1]}.{field}", link_id, value)
    row("meter.equations_hold", link_id, detail["equations_hold"])
    for level in detail["levels"]:
        for field in ("award", "hits", "won_cents", "pending", "pending_cents"):
            row(f"level.{field}", level["line"], level[field])
    for table in detail["tables"]:
        for field in ("rounds", "wagers", "in_meter_cents", "to_meter_cents", "to_hidden_cents",
                      "to_overflow_cents"):  # fmt: skip
            row(f"table.{field}", table["table_id"], int(table[field] or 0))
    for hit in sorted(detail["hits"], key=lambda h: int(h["hit_id"])):
        for field in ("recorded_utc", "table_id", "seat", "round_id", "line", "award_cents", "paid_from",
                      "meter_before_cents", "status", "paid_utc", "confirmed_by"):  # fmt: skip
            value = hit.get(field)
            row(f"hit.{field}", hit["hit_id"], value.isoformat() if hasattr(value, "isoformat") else value)
    for change in sorted(detail.get("changes", []), key=lambda c: int(c["event_no"])):
        for field in ("committed_utc", "kind", "by", "reason", "before_text", "after_text", "amount_cents",
                      "reserve_after_cents"):  # fmt: skip
            value = change.get(field)
            row(
                f"change.{field}",
                change["event_no"],
                value.isoformat() if hasattr(value, "isoformat") else value,
            )
    for refusal in sorted(detail.get("refusals", []), key=lambda r: int(r["refusal_id"])):
        for field in ("refused_utc", "table_id", "round_id", "reason"):
            value = refusal.get(field)
            row(
                f"refusal.{field}",
                refusal["refusal_id"],
                value.isoformat() if hasattr(value, "isoformat") else value,
            )
    for rec in detail["reconciliation"]:
        key = f"{rec['table_id']} {rec['shift']}"
        for field in ("rounds", "locked_wagers", "locked_cents", "journal_wagers", "journal_cents",
                      "controller_wagers", "controller_cents", "difference_cents"):  # fmt: skip
            row(f"reconciliation.{field}", key, rec[field])
        row("reconciliation.differing_rounds", key, " ".join(rec["differing_rounds"]))
    return out.getvalue()
