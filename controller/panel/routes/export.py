"""The recall and meters pages as CSV downloads (docs/panel.md "CSV"): the CLI's columns and rules
(controller/journal/render_csv.py, `flushtable recall --csv`, `flushtable meters --csv`), over what the
page itself shows, behind the page's own login (PageSession). Recall passes every record through the
one gate already (controller/panel/backend.py), so a card is in the CSV exactly where the page shows
it, whatever the role."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
import io
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

from controller.errors import UserError
from controller.journal.render_csv import write_meters_csv, write_recall_csv
from controller.locale import PropertySettings
from controller.panel.context import PageSession, PanelDep
from controller.panel.downloads import csv_response
from controller.panel.routes.pages import RecallFilters, _meters_range, recall_listing

router = APIRouter(include_in_schema=False)


def _recall_text(records: list[dict[str, Any]], prop: PropertySettings) -> str:
    out = io.StringIO()
    write_recall_csv(list(reversed(records)), out, prop)  # the panel reads newest first, the CSV oldest first
    return out.getvalue()


@router.get("/csv/recall")
async def recall_csv(*, panel: PanelDep, session: PageSession, query: RecallFilters) -> Response:
    """The rounds the recall page lists for the same filters."""
    del session  # the page's login, checked by the dependency
    _, _, shown = recall_listing(panel, query)
    table_id = panel.backend.table_id
    return csv_response(_recall_text(shown, panel.settings.property_settings), f"recall-{table_id}.csv")


@router.get("/csv/recall/{round_id}")
async def round_csv(panel: PanelDep, session: PageSession, round_id: str) -> Response:
    del session
    records = panel.backend.recall(round_id=round_id[:80])
    if not records:
        raise HTTPException(404, f"no round {round_id[:80]!r} in the journal")
    return csv_response(_recall_text(records, panel.settings.property_settings), f"round-{round_id[:80]}.csv")


@router.get("/csv/meters")
async def meters_csv(
    *, panel: PanelDep, session: PageSession, date: str = "", shift: str = "", first: str = "", last: str = ""
) -> Response:
    """The meters the meters page shows for the same choice (a shift, days, or the whole journal)."""
    del session
    try:
        start, end, _label = _meters_range(date, shift, first, last, panel.settings.property_settings)
    except UserError as error:
        raise HTTPException(422, str(error)) from None
    out = io.StringIO()
    write_meters_csv(
        panel.backend.meters(start_utc=start, end_utc=end), out, panel.settings.property_settings.money
    )
    if start is None or end is None:
        span = "all"
    else:
        span = f"{date[:10]}-{shift[:10]}" if shift and date else f"{start[:10]}-{end[:10]}"
    table_id = panel.backend.table_id
    return csv_response(out.getvalue(), f"meters-{table_id}-{span}.csv")
