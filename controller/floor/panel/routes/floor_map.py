"""The pit map, a table's page and the map's JSON (docs/floor.md "The floor panel")."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
import json

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse, Response

from controller.floor.panel.context import ApiSession, FloorDep, PageSession
from controller.floor.panel.settings import MAX_ID_CHARS
from controller.floor.tiles import current_shift, pit_map
from controller.journal.render import game_title

router = APIRouter(include_in_schema=False)
NO_SUCH_TABLE = "No such table on the floor."


@router.get("/", response_class=HTMLResponse)
async def map_page(floor: FloorDep, session: PageSession) -> Response:
    settings = floor.settings
    tiles = await floor.tiles()
    shift = current_shift(settings.now_utc(), settings.property_settings)
    shift_text = f"{shift.name} shift, {settings.time_text(shift.start)} to {settings.time_text(shift.end)}"
    return await floor.page("map.html", session, pits=pit_map(tiles, settings.pits), shift_text=shift_text)


@router.get("/tables/{table_id}", response_class=HTMLResponse)
async def table_page(table_id: str, floor: FloorDep, session: PageSession) -> Response:
    """One table: its tile, its open alerts and its last rounds, each a link to its round page."""
    if "\x00" in table_id or len(table_id) > MAX_ID_CHARS:
        return HTMLResponse(NO_SUCH_TABLE, 404)
    found = await floor.tiles(table_id)
    if not found:
        return HTMLResponse(NO_SUCH_TABLE, 404)
    rounds = await floor.queries.table_rounds(table_id)
    alerts = await floor.queries.table_open_alerts(table_id)
    for r in rounds:
        r["game_title"] = game_title(r["game"])
    return await floor.page("table.html", session, t=found[0], rounds=rounds, alerts=alerts)


@router.get("/api/floor")
async def floor_json(floor: FloorDep, _session: ApiSession) -> Response:
    return JSONResponse(json.loads(json.dumps(await floor.tiles(), default=str)))
