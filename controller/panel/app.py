"""The floor staff panel: an ASGI app (FastAPI) over a :class:`PanelBackend`.

``create_panel_app(backend, users=..., settings=...)`` builds it from the routers in
controller/panel/routes/ (pages, the table API, actions, auth, the live stream), which share one
:class:`~controller.panel.context.Panel`; controller.panel.server runs it with uvicorn on the daemon's
own event loop. Pages are rendered on the server (Jinja2, autoescaped); a small vanilla script keeps
them live from the SSE stream at /api/events, whose event id is the journal seq.

Access: every route but /login, /healthz and /static refuses a visitor without a session (pages redirect
to /login, the API answers 401). State-changing requests need the session's CSRF token in the
X-CSRF-Token header (the login form uses a double-submit cookie). Roles: viewer reads; supervisor also
acknowledges and clears faults, voids a round and moves the button; manager also opens and closes the
table and changes limits and paytables (controller/panel/actions.py declares each action).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from controller import __version__
from controller.errors import UserError
from controller.panel.auth import UserStore
from controller.panel.backend import PanelBackend
from controller.panel.context import HERE, Panel, PanelSettings
from controller.panel.errors import install_error_handlers
from controller.panel.limits import HeaderLimit
from controller.panel.routes import actions, auth, changes, export, live, pages, table_api

NOISE_TICK_S = 5.0  # how often a summary of suppressed noise that has come due is journaled

__all__ = ["PanelSettings", "create_panel_app"]


def create_panel_app(
    backend: PanelBackend,
    *,
    users: UserStore,
    settings: PanelSettings | None = None,
) -> FastAPI:
    panel = Panel(backend, users, settings or PanelSettings())

    async def noise_ticker() -> None:
        while True:
            await asyncio.sleep(NOISE_TICK_S)
            with contextlib.suppress(UserError):  # the journal's error shows on /healthz
                panel.journal_summaries(panel.noise.due(panel.settings.clock()))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await backend.start()
        ticker = asyncio.get_running_loop().create_task(noise_ticker(), name="panel-noise")
        try:
            yield
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
            with contextlib.suppress(UserError):  # nothing counted is left behind at shutdown
                panel.journal_summaries(panel.noise.flush())
            await backend.aclose()

    app = FastAPI(
        title="flushtable table panel",
        version=__version__,
        description="The table's status, alerts, recall, journal and meters; operator actions by role.",
        docs_url=None,  # the Swagger UI loads from a CDN: no internet at a casino table
        redoc_url=None,
        openapi_url=None,  # served by the table API, behind a session
        lifespan=lifespan,
        max_body_size=panel.settings.max_body_bytes,
    )
    app.state.panel = panel
    app.state.backend = backend  # PanelServer.stop ends the streams through it
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    install_error_handlers(app)
    # Bodies are counted while they arrive (controller/panel/limits.py): the forms' limit on the
    # auth router, the API's on everything else.
    app.include_router(auth.router, max_body_size=panel.settings.max_form_bytes)
    for router in (
        pages.router,
        export.router,
        table_api.router,
        actions.router,
        changes.router,
        live.router,
    ):
        app.include_router(router)
    app.add_middleware(HeaderLimit, max_header_bytes=panel.settings.max_header_bytes)
    return app
