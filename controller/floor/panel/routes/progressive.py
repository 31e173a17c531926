"""The linked progressives: the list, a link's page and its CSV, and its sign over the pit
(docs/floor.md "Progressive: the page, the sign, reconciliation"; controller/floor/progressive_view.py)."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from controller.floor import export, progressive_view
from controller.floor.panel.context import FloorDep, PageSession
from controller.floor.panel.views import link_detail_or_refusal
from controller.panel.login import login_redirect

router = APIRouter(include_in_schema=False)


@router.get("/progressive", response_class=HTMLResponse)
async def progressive_links(floor: FloorDep, session: PageSession) -> Response:
    links = await progressive_view.link_list(floor.queries.rows)
    return await floor.page("progressive_links.html", session, links=links)


@router.get("/progressive/{link_id}", response_class=HTMLResponse)
async def progressive_page(link_id: str, floor: FloorDep, session: PageSession, days: str = "") -> Response:
    found = await link_detail_or_refusal(floor, link_id, days)
    if isinstance(found, Response):
        return found
    window, detail = found
    return await floor.page("progressive.html", session, days=window, **detail)


@router.get("/progressive/{link_id}/csv")
async def progressive_csv(link_id: str, floor: FloorDep, _session: PageSession, days: str = "") -> Response:
    """The progressive page as CSV (controller/floor/export.py), behind the page's login."""
    found = await link_detail_or_refusal(floor, link_id, days)
    if isinstance(found, Response):
        return found
    _window, detail = found
    return export.csv_response(
        export.progressive_csv(detail, floor.settings.property_settings), f"floor-progressive-{link_id}.csv"
    )


@router.get("/progressive/{link_id}/sign", response_class=HTMLResponse)
async def progressive_sign(link_id: str, request: Request, floor: FloorDep, key: str = "") -> Response:
    """The meter over the pit: large digits, live, no controls (a screen, not a page to work in); by
    a login, or by the sign key (FloorPanelSettings.sign_key)."""
    keyed = floor.sign_key_ok(key)
    session = None if keyed else floor.session_of(request)
    if session is None and not keyed:
        return login_redirect()
    frame = await progressive_view.sign_frame(floor.queries.rows, link_id, floor.settings.property_settings)
    if frame is None:
        return HTMLResponse("No such progressive link on the floor.", 404)
    html = floor.templates.get_template("progressive_sign.html").render(sign=frame, key=key if keyed else "")
    # The key is in the page's address: it is not sent on to another site, and not cached.
    headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
    return HTMLResponse(html, headers=headers)
