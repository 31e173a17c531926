"""The floor panel's app: the routers of controller/floor/panel/routes/ over one :class:`FloorPanel`,
laid out as the table panel's (controller/panel/app.py), and its answers to what goes wrong."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from controller.floor.panel.context import FloorPanel, FormExpired, NeedApiLogin, log
from controller.floor.panel.routes import alerts, auth, floor_map, live, progressive, reports, rounds, workers
from controller.floor.panel.settings import (
    FORM_TOO_LARGE,
    HERE,
    MAX_FORM_BYTES,
    TABLE_PANEL,
    FloorPanelSettings,
)
from controller.floor.queries import DatabaseUnavailable
from controller.panel.login import NeedLogin, login_redirect

ROUTERS = (
    auth.router,
    floor_map.router,
    alerts.router,
    rounds.router,
    progressive.router,
    reports.router,
    workers.router,
    live.router,
)


def create_floor_app(settings: FloorPanelSettings) -> FastAPI:
    floor = FloorPanel(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await floor.queries.pool.open(wait=False)
        floor.readers.append(asyncio.create_task(floor.feed.run(), name="floor-panel-feed"))
        try:
            yield
        finally:
            for task in floor.readers:
                task.cancel()
            for task in floor.readers:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await floor.queries.pool.close()

    # Every body is counted while it arrives (FastAPI's limit, as at the table panel): a form over
    # MAX_FORM_BYTES is refused 413 from its Content-Length at once, or the moment a chunked one passes.
    app = FastAPI(
        title="flushtable floor panel",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
        max_body_size=MAX_FORM_BYTES,
    )
    app.state.floor = floor
    # Named as before (the tests, a launcher): the pool, the query counts, the map's feed, the sessions
    # (a launcher may end a user's: end_user), the open streams and the signs' feeds.
    app.state.pool, app.state.stats, app.state.feed = floor.queries.pool, floor.queries.stats, floor.feed
    app.state.sessions, app.state.streams, app.state.sign_feeds = (
        floor.sessions,
        floor.streams,
        floor.sign_feeds,
    )
    # The floor's own few static files (the pit map's script and grid, the sign), then the table
    # panel's (its stylesheet, script and icon) at the same /static/... as at the table: one stylesheet
    # for both panels, served from controller/panel/static, never copied. The floor's mount first: a
    # mount takes every path under it.
    app.mount("/static/floor", StaticFiles(directory=HERE / "static"), name="floor-static")
    app.mount("/static", StaticFiles(directory=TABLE_PANEL / "static"), name="static")
    install_error_handlers(app, floor)
    for router in ROUTERS:
        app.include_router(router)
    return app


def install_error_handlers(app: FastAPI, floor: FloorPanel) -> None:
    @app.exception_handler(NeedLogin)
    async def to_login(_request: Request, _error: Exception) -> Response:
        return login_redirect()

    @app.exception_handler(NeedApiLogin)
    async def api_login(_request: Request, _error: Exception) -> Response:
        return JSONResponse({"error": "login required"}, 401)

    @app.exception_handler(FormExpired)
    async def form_expired(_request: Request, _error: Exception) -> Response:
        return HTMLResponse("The form expired; reload the page.", 403)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, StarletteHTTPException)
        if error.status_code == 413:  # a form past the body limit
            if request.url.path == "/login":
                return auth.login_form(floor, request, FORM_TOO_LARGE, 413)
            return HTMLResponse(FORM_TOO_LARGE, 413)
        return await http_exception_handler(request, error)

    @app.exception_handler(DatabaseUnavailable)
    async def database_unavailable(request: Request, error: Exception) -> Response:
        log.warning("floor_panel_db_unavailable", path=request.url.path, error=str(error))
        message = "The floor database (PostgreSQL) is not answering; this page works again once it is back."
        headers = {"Retry-After": "5", "Cache-Control": "no-store"}
        # The driver's message (host, port, role) goes to the log above, not to the browser.
        detail = "Details are in the panel log."
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message, "detail": detail}, 503, headers=headers)
        # A form's POST (acknowledge, release) is not repeated by a reload: the page and its link go to
        # the alerts (a GET of the form's URL is a 405); a page's GET tries itself again.
        again = "" if request.method in ("GET", "HEAD") else "/alerts"
        html = floor.templates.get_template("unavailable.html").render(
            message=message, detail=detail, again=again
        )
        return HTMLResponse(html, 503, headers=headers)
