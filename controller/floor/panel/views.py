"""What the floor panel's pages show, shaped from the queries' rows (controller/floor/queries.py): a
round read by the table's own recall, the meters by a measure, a gaming day's report, a progressive
link's page. Plain functions of the app's :class:`FloorPanel`, shared by a page and its CSV."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.responses import HTMLResponse, Response

from controller.floor import gaming_day, progressive_view
from controller.floor.checks import FloorStored
from controller.floor.panel.context import FloorPanel
from controller.journal import entries as typed
from controller.journal.chain import canonical_json
from controller.journal.errors import JournalError
from controller.journal.recall import round_record
from controller.journal.state import TableState
from controller.journal.store import entry_from_row
from controller.locale import gaming_day_of, shifts_between
from controller.panel.view import public_recall

MEASURES = ("table", "pit", "game", "shift")
CLOSED_STATUSES = ("settled", "dead", "void")
_KINDS_WITH_PRIVATE = frozenset(
    kind for kind, cls in typed.CLASS_BY_STORED_KIND.items() if cls.PRIVATE is not None
)
# The columns of a stored entry's row, in controller/journal/store.py's order (entry_from_row).
_ENTRY_COLUMNS = ("seq", "time_text", "table_id", "round_id", "source", "kind", "version", "payload_text",
                  "private_text", "private_digest", "prev_hash", "hash")  # fmt: skip


async def meters_rows(floor: FloorPanel, by: str) -> tuple[str, list[dict[str, Any]]]:
    """The meters page's rows (and its CSV's) grouped ``by`` (an unknown grouping is by table)."""
    by = by if by in MEASURES else "table"
    if by != "shift":
        return by, await floor.queries.meters(by)
    # The shifts are the property's (controller/locale.py), computed here and given to the query as
    # bounds: SQL holds no second definition of them.
    span = await floor.queries.round_meters_span()
    if span is None:
        return by, []
    shifts = shifts_between(span[0], span[1], floor.settings.property_settings)
    labels, starts = [s[0] for s in shifts], [s[1] for s in shifts]
    return by, await floor.queries.meters_by_shift(labels, starts, shifts[-1][2])


def _event_rows(
    table_id: str, rows: list[dict[str, Any]], show_private: bool
) -> tuple[TableState, list[tuple[dict[str, Any], FloorStored]], list[dict[str, Any]], list[str]]:
    """The round's entries through the one reducer, and each as the page lists it: its private part
    only where the reducer's gate shows it (never before the reveal) and the reader may see it; and, for
    that reader, why each stored private part that does not decode is not shown (one line each, naming
    its entry). A reader shown no private part (``show_private=False``) has none decoded: each is
    withheld, whatever its text."""
    state = TableState(table_id)
    stored_rows = []
    for row in rows:
        entry = typed.decode_public(row["kind"], row["payload_text"])
        stored = FloorStored(row["seq"], row["time_text"], table_id, row["round_id"], row["source"], entry)
        state.apply(stored)
        stored_rows.append((row, stored))
    events = []
    undecodable: list[str] = []
    for row, stored in stored_rows:
        private: dict[str, Any] | None = None
        decodes = True
        if show_private and row["private_text"] is not None:
            try:
                full = typed.decode(row["kind"], row["payload_text"], row["private_text"])
            except typed.EntryError as error:
                # The floor takes a private part by its commitment, not its shape (checks.py): one that
                # does not decode is never shown nor offered for disclosure; the page says why.
                undecodable.append(f"entry {row['seq']}: {error}")
                decodes = False
            else:
                gated = FloorStored(
                    stored.seq, stored.time_utc, table_id, stored.round_id, stored.source, full
                )
                if state.private_visible(gated):  # the one gate, again
                    private = typed.open_private(row["private_text"])
        events.append({
            "seq": row["seq"], "time_utc": row["time_text"], "kind": row["kind"], "source": row["source"],
            "public": canonical_json(json.loads(row["payload_text"])),
            "private": canonical_json(private) if private is not None else None,
            # Not shown, whether the floor holds it or not (a part it holds of a round voided before
            # its reveal stays withheld: issue 22).
            "withheld": decodes and private is None and row["kind"] in _KINDS_WITH_PRIVATE,
        })  # fmt: skip
    return state, stored_rows, events, undecodable


async def round_detail(
    floor: FloorPanel, table_id: str, round_id: str, *, show_private: bool = True
) -> dict[str, Any] | None:
    """A round's events; ``show_private=False`` (a viewer's): every private part withheld."""
    rows = await floor.queries.round_entries(table_id, round_id)
    if not rows:
        return None
    state, stored_rows, events, undecodable = _event_rows(table_id, rows, show_private)
    round_state = state.round(round_id)
    # The round as the table's recall reads it: the same entries through the same record builder,
    # reducer and gate (controller/journal/recall.py), then the table panel's view of it.
    shown_row = {"table_id": table_id} | ({} if show_private else {"private_text": None})
    try:
        # A stored part that does not decode, for a reader of private parts: refused as entry_from_row
        # refuses one (a viewer's entries carry no private part: their record is built without it).
        if undecodable:
            raise JournalError(undecodable[0])
        entries = [
            entry_from_row(tuple({**row, **shown_row}[name] for name in _ENTRY_COLUMNS))
            for row, _ in stored_rows
        ]
        record = round_record(table_id, entries, in_play=True)
        record_refused = ""
    except JournalError as error:
        # An entry this release does not read (a newer release's: a table upgraded before the floor, or
        # a forged version), or a stored row that does not decode (``entry_from_row``'s one line): the
        # recall's reader refuses to judge its parts, so the round's record is not built; its events are
        # shown as stored and the page says why in one line (not a 500).
        record, record_refused = None, f"The round's record is not shown: {error}"
    return {
        "table_id": table_id,
        "round_id": round_id,
        "status": round_state.status if round_state else "?",
        "events": events,
        "record": public_recall(record, floor.settings.money_format) if record is not None else None,
        "record_refused": record_refused,
    }


def default_day(floor: FloorPanel) -> str:
    """The last whole gaming day (the one before the gaming day now running)."""
    settings = floor.settings
    today = gaming_day_of(datetime.fromtimestamp(settings.wall_clock(), UTC), settings.property_settings)
    return (today - timedelta(days=1)).isoformat()


async def day_report(floor: FloorPanel, day: str, pit: str) -> gaming_day.DayReport:
    """A gaming day's report (controller/floor/gaming_day.py), of one pit or the whole floor."""
    prop = floor.settings.property_settings
    start, end = gaming_day.gaming_day_range(day, prop)
    pits = await floor.queries.table_pits()
    rows = await floor.queries.day_figures(start, end)
    tables = gaming_day.figures_of_rows(
        (r["table_id"], r["measure"], r["label"], r["numerator"], r["denominator"]) for r in rows
    )
    return gaming_day.report_of(day, prop, tables, pits, pit=pit or None)


def window_days(days: str) -> int | None:
    """The reconciliation's window in days (``?days=``, 1 to 366; 7 when not given), None if bad."""
    if not days:
        return round(progressive_view.RECONCILE_WINDOW_S / 86400)
    if not days.isdigit() or not 1 <= int(days) <= progressive_view.MAX_WINDOW_DAYS:
        return None
    return int(days)


async def link_detail_or_refusal(
    floor: FloorPanel, link_id: str, days: str
) -> tuple[int, dict[str, Any]] | Response:
    """The link's page data over the asked window, or the one-line refusal (bad window, no link)."""
    window = window_days(days[:8])
    if window is None:
        return HTMLResponse(
            f"days: a whole number of days from 1 to {progressive_view.MAX_WINDOW_DAYS}.", 422
        )
    detail = await progressive_view.link_detail(
        floor.queries.rows, link_id, window_s=window * 86400.0, prop=floor.settings.property_settings
    )
    if detail is None:
        return HTMLResponse("No such progressive link on the floor.", 404)
    return window, detail
