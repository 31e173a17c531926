"""The floor staff panel: an ASGI app (FastAPI) over a :class:`PanelBackend`.

``create_panel_app(backend, users=..., settings=...)`` builds it; controller.panel.server runs it with
uvicorn on the daemon's own event loop. Pages are rendered on the server (Jinja2, autoescaped); a small
vanilla script keeps them live from the SSE stream at /api/events, whose event id is the journal seq.

Access: every route but /login, /healthz and /static refuses a visitor without a session (pages redirect
to /login, the API answers 401). State-changing requests need the session's CSRF token in the
X-CSRF-Token header (the login form uses a double-submit cookie). Roles: viewer reads; supervisor also
acknowledges and clears faults, voids a round and moves the button; manager also opens and closes the
table and changes limits and paytables.
"""

# No `from __future__ import annotations`: FastAPI reads the route signatures' annotations at run time,
# and some name dependencies defined inside create_panel_app.
import asyncio
import contextlib
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs

import jinja2
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from controller import __version__
from controller.engine.actions import (
    ClearFault,
    CloseTable,
    MoveButton,
    OpenTable,
    SetLimits,
    SetPaytable,
    VoidRound,
)
from controller.errors import UserError
from controller.journal.noise import (
    DEFAULT_NOISE_POLICY,
    LOGIN_FAILED,
    NOISE_SUPPRESSED,
    OTHER_SOURCES,
    REFUSED_ACTION,
    NoiseBudget,
    NoisePolicy,
    NoiseSummary,
    utc_text,
)
from controller.panel.auth import LoginLimiter, Role, Session, SessionStore, UserStore, role_allows
from controller.panel.backend import ActionRefused, ActionUnavailable, NotFound, PanelBackend
from controller.panel.diagram import state_diagram

HERE = Path(__file__).parent
SESSION_COOKIE = "ft_session"
LOGIN_CSRF_COOKIE = "ft_login_csrf"
CSRF_HEADER = "x-csrf-token"
MAX_FORM_BYTES = 4096
SSE_RETRY_MS = 2000
SSE_FRAME_CACHE = 512
MAX_SEQ = 2**62  # SQLite integers are 64-bit signed: a larger seq is refused with 422, not a 500
NOISE_TICK_S = 5.0  # how often a summary of suppressed noise that has come due is journaled


@dataclass(frozen=True, slots=True)
class PanelSettings:
    idle_timeout_s: float = 30 * 60
    absolute_timeout_s: float = 12 * 3600
    sse_keepalive_s: float = 15.0
    login_max_failures: int = 5
    login_window_s: float = 300.0
    login_lockout_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    # Failed logins (per remote address) and refused actions (per user) past this budget are counted
    # in noise_suppressed summaries instead of journaled one by one (controller/journal/noise.py).
    noise: NoisePolicy = DEFAULT_NOISE_POLICY


# --- request bodies -------------------------------------------------------------------------------
Reason = Annotated[str, Field(min_length=1, max_length=200, description="why, in words (journaled)")]


class ReasonBody(BaseModel):
    reason: Reason


class MoveButtonBody(BaseModel):
    seat: int = Field(ge=1, le=7, description="the seat the button moves to")


class LimitsBody(BaseModel):
    min_ante_cents: int = Field(ge=1, le=100_000_000_00)
    max_ante_cents: int = Field(ge=1, le=100_000_000_00)


class PaytableBody(BaseModel):
    wager: str = Field(min_length=1, max_length=40, pattern=r"^[a-z_]+$")
    paytable: str = Field(
        min_length=1, max_length=60, pattern=r"^[A-Za-z0-9_.-]+$", description="a preset name"
    )


class Done(BaseModel):
    ok: bool = True


class _NeedLogin(Exception):
    """A page asked for without a session: redirect to the login page."""


class _NeedNewPassword(Exception):
    """A session logged in with a one-time password: every page leads to the password change."""


PASSWORD_PAGE = "/account/password"


def create_panel_app(
    backend: PanelBackend,
    *,
    users: UserStore,
    settings: PanelSettings | None = None,
) -> FastAPI:
    settings = settings or PanelSettings()
    sessions = SessionStore(
        clock=settings.clock,
        idle_timeout_s=settings.idle_timeout_s,
        absolute_timeout_s=settings.absolute_timeout_s,
    )
    limiter = LoginLimiter(
        clock=settings.clock,
        max_failures=settings.login_max_failures,
        window_s=settings.login_window_s,
        lockout_s=settings.login_lockout_s,
    )
    templates = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined,
    )
    templates.filters["money"] = _money
    templates.filters["clock"] = _clock_text
    noise = NoiseBudget(settings.noise)

    # --- noise: failed logins and refused actions, journaled within a budget per source ----------
    def _journal_summaries(summaries: list[NoiseSummary] | tuple[NoiseSummary, ...]) -> None:
        for summary in summaries:
            if summary.category == REFUSED_ACTION and summary.source != OTHER_SOURCES:
                source = f"operator:{summary.source}"  # where that user's refusals are journaled
            else:
                source = "panel"
            backend.record(NOISE_SUPPRESSED, summary.payload(), source=source)

    def _noisy(category: str, key: str, kind: str, payload: dict[str, Any], *, source: str) -> None:
        """Journal a noisy event, or count it for a summary once its source is past its budget."""
        verdict = noise.admit(category, key, settings.clock(), utc_text(datetime.now(UTC)))
        _journal_summaries(verdict.summaries)
        if verdict.journal:
            backend.record(kind, payload, source=source)

    async def _noise_ticker() -> None:
        while True:
            await asyncio.sleep(NOISE_TICK_S)
            with contextlib.suppress(UserError):  # the journal's error shows on /healthz
                _journal_summaries(noise.due(settings.clock()))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await backend.start()
        ticker = asyncio.get_running_loop().create_task(_noise_ticker(), name="panel-noise")
        try:
            yield
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
            with contextlib.suppress(UserError):  # nothing counted is left behind at shutdown
                _journal_summaries(noise.flush())
            await backend.aclose()

    app = FastAPI(
        title="flushtable floor panel",
        version=__version__,
        description="The table's status, alerts, recall, journal and meters; operator actions by role.",
        docs_url=None,  # the Swagger UI loads from a CDN: no internet at a casino table
        redoc_url=None,
        openapi_url=None,  # served below, behind a session
        lifespan=lifespan,
    )
    sse_frames: OrderedDict[int, tuple[dict[str, Any], bytes]] = OrderedDict()
    app.state.sessions = sessions
    app.state.limiter = limiter
    app.state.noise = noise
    app.state.backend = backend
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    # --- errors -----------------------------------------------------------------------------------
    @app.exception_handler(_NeedLogin)
    async def _to_login(request: Request, _error: _NeedLogin) -> Response:
        return RedirectResponse("/login", status_code=303)

    @app.exception_handler(_NeedNewPassword)
    async def _to_password(request: Request, _error: _NeedNewPassword) -> Response:
        return RedirectResponse(PASSWORD_PAGE, status_code=303)

    def _error_json(status: int, message: str) -> JSONResponse:
        return JSONResponse({"detail": message}, status_code=status)

    @app.exception_handler(NotFound)
    async def _not_found(_r: Request, error: NotFound) -> Response:
        return _error_json(404, str(error))

    @app.exception_handler(ActionUnavailable)
    async def _unavailable(_r: Request, error: ActionUnavailable) -> Response:
        return _error_json(503, str(error))

    @app.exception_handler(UserError)
    async def _refused(_r: Request, error: UserError) -> Response:
        return _error_json(409, str(error))

    # --- sessions and roles -----------------------------------------------------------------------
    def _session_of(request: Request) -> Session | None:
        return sessions.get(request.cookies.get(SESSION_COOKIE))

    def api_session(request: Request) -> Session:
        session = _session_of(request)
        if session is None:
            raise HTTPException(401, "log in first", headers={"WWW-Authenticate": "Cookie"})
        if session.must_change_password and request.url.path != "/api/session":
            raise HTTPException(
                403, f"set a new password first: the one-time password is spent ({PASSWORD_PAGE})"
            )
        return session

    def page_session(request: Request) -> Session:
        session = _session_of(request)
        if session is None:
            raise _NeedLogin
        if session.must_change_password and request.url.path != PASSWORD_PAGE:
            raise _NeedNewPassword
        return session

    def needs(role: Role, action: str) -> Callable[[Request, Session], Awaitable[Session]]:
        async def check(request: Request, session: Annotated[Session, Depends(api_session)]) -> Session:
            token = request.headers.get(CSRF_HEADER, "")
            if not secrets.compare_digest(token.encode(), session.csrf_token.encode()):
                raise HTTPException(403, "missing or wrong CSRF token (X-CSRF-Token)")
            if not role_allows(session.role, role):
                _noisy(
                    REFUSED_ACTION,
                    session.user,
                    "operator_action",
                    {
                        "action": action,
                        "by": session.user,
                        "detail": {"path": request.url.path},
                        "outcome": f"refused: role {session.role} (needs {role})",
                    },
                    source=f"operator:{session.user}",
                )
                raise HTTPException(
                    403, f"role {session.role} may not {action.replace('_', ' ')} (needs {role})"
                )
            return session

        return check

    ApiSession = Annotated[Session, Depends(api_session)]
    PageSession = Annotated[Session, Depends(page_session)]

    def _set_session_cookie(
        response: Response, request: Request, name: str, value: str, max_age: int
    ) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )

    # --- unauthenticated --------------------------------------------------------------------------
    @app.get("/healthz", tags=["monitoring"])
    async def healthz() -> dict[str, Any]:
        """Liveness for monitoring; answers without a login and shows no table detail."""
        health = backend.health()
        return {"status": health["status"], "last_seq": health["last_seq"]}

    def _login_page(request: Request, message: str = "", status: int = 200, user: str = "") -> Response:
        token = secrets.token_urlsafe(24)
        html = templates.get_template("login.html").render(message=message, csrf_token=token, user=user)
        response = HTMLResponse(html, status_code=status)
        _set_session_cookie(response, request, LOGIN_CSRF_COOKIE, token, 3600)
        return response

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    async def login_page(request: Request) -> Response:
        if _session_of(request) is not None:
            return RedirectResponse("/", status_code=303)
        return _login_page(request)

    @app.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return _login_page(request, "The form is too large.", 413)
        form = {key: values[0] for key, values in parse_qs(body.decode("utf-8", "replace")).items()}
        name = form.get("user", "")[:64]
        password = form.get("password", "")
        cookie_token = request.cookies.get(LOGIN_CSRF_COOKIE, "")
        if not cookie_token or not secrets.compare_digest(
            cookie_token.encode(), form.get("csrf_token", "").encode()
        ):
            return _login_page(request, "The login form expired; please try again.", 403, name)
        remote = request.client.host if request.client else "?"
        keys = (f"addr:{remote}", f"user:{name}")
        wait_s = limiter.retry_after_s(keys)
        if wait_s > 0:
            # Refused unchecked: still a failed login, journaled within the address's budget.
            _noisy(
                LOGIN_FAILED,
                remote,
                "login_failed",
                {"user": name, "remote": remote, "reason": "locked_out"},
                source="panel",
            )
            response = _login_page(
                request, f"Too many failed logins. Try again in {int(wait_s) + 1} s.", 429, name
            )
            response.headers["Retry-After"] = str(int(wait_s) + 1)
            return response
        # scrypt takes tens of milliseconds: off the event loop, so SSE delivery does not stall.
        user = await asyncio.to_thread(users.authenticate, name, password[:1024])
        if user is None:
            locked = limiter.record_failure(keys)
            _noisy(
                LOGIN_FAILED,
                remote,
                "login_failed",
                {"user": name, "remote": remote, "reason": "rate_limited" if locked else "bad_credentials"},
                source="panel",
            )
            return _login_page(request, "Wrong user name or password.", 401, name)
        limiter.record_success(keys)
        session = sessions.create(user)
        backend.record("login", {"user": user.name, "role": user.role, "remote": remote}, source="panel")
        response = RedirectResponse("/", status_code=303)
        _set_session_cookie(
            response, request, SESSION_COOKIE, session.token, int(settings.absolute_timeout_s)
        )
        response.delete_cookie(LOGIN_CSRF_COOKIE, path="/")
        return response

    @app.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        session = _session_of(request)
        if session is not None:
            form = parse_qs((await request.body())[:MAX_FORM_BYTES].decode("utf-8", "replace"))
            token = form.get("csrf_token", [""])[0] or request.headers.get(CSRF_HEADER, "")
            if not secrets.compare_digest(token.encode(), session.csrf_token.encode()):
                raise HTTPException(403, "missing or wrong CSRF token")
            sessions.end(session.token)
            backend.record(
                "operator_action",
                {"action": "logout", "by": session.user, "detail": {}, "outcome": "done"},
                source=f"operator:{session.user}",
            )
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    def _password_page(session: Session, message: str = "", status: int = 200) -> HTMLResponse:
        html = templates.get_template("password.html").render(
            session=session,
            active="",
            table=backend.snapshot(),
            alert_count=0,
            message=message,
            forced=session.must_change_password,
        )
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})

    @app.get(PASSWORD_PAGE, response_class=HTMLResponse, include_in_schema=False)
    async def password_page(session: PageSession) -> HTMLResponse:
        return _password_page(session)

    @app.post(PASSWORD_PAGE, include_in_schema=False)
    async def change_password(request: Request, session: PageSession) -> Response:
        body = await request.body()
        form = {
            key: values[0]
            for key, values in parse_qs(body[:MAX_FORM_BYTES].decode("utf-8", "replace")).items()
        }
        if not secrets.compare_digest(form.get("csrf_token", "").encode(), session.csrf_token.encode()):
            raise HTTPException(403, "missing or wrong CSRF token")
        new = form.get("new_password", "")
        if new != form.get("repeat_password", ""):
            return _password_page(session, "The two new passwords differ.", 422)
        try:
            await asyncio.to_thread(
                users.change_password, session.user, form.get("current_password", ""), new
            )
        except UserError as error:
            return _password_page(session, str(error), 422)
        session.must_change_password = False
        backend.record(
            "operator_action",
            {"action": "change_password", "by": session.user, "detail": {}, "outcome": "done"},
            source=f"operator:{session.user}",
        )
        return RedirectResponse("/", status_code=303)

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(_session: ApiSession) -> JSONResponse:
        return JSONResponse(app.openapi())

    # --- pages ------------------------------------------------------------------------------------
    def _page(name: str, session: Session, active: str, **context: Any) -> HTMLResponse:
        snapshot = backend.snapshot()
        html = templates.get_template(name).render(
            session=session,
            active=active,
            table=snapshot,
            alert_count=snapshot["active_alerts"],
            can_supervise=role_allows(session.role, "supervisor"),
            can_manage=role_allows(session.role, "manager"),
            **context,
        )
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    def _table_context() -> dict[str, Any]:
        snapshot = backend.snapshot()
        return {
            "table": snapshot,
            "diagram": state_diagram(snapshot["game"], snapshot["phase"]),
            "devices": backend.devices(),
        }

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def table_page(session: PageSession) -> HTMLResponse:
        context = _table_context()
        context.pop("table")
        return _page("table.html", session, "table", **context)

    @app.get("/partials/table", response_class=HTMLResponse, include_in_schema=False)
    async def table_partial(session: PageSession) -> HTMLResponse:
        html = templates.get_template("_table.html").render(
            session=session, can_supervise=role_allows(session.role, "supervisor"), **_table_context()
        )
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    @app.get("/alerts", response_class=HTMLResponse, include_in_schema=False)
    async def alerts_page(session: PageSession, show: str = "open") -> HTMLResponse:
        return _page(
            "alerts.html", session, "alerts", alerts=backend.alerts(include_cleared=show == "all"), show=show
        )

    @app.get("/partials/alerts", response_class=HTMLResponse, include_in_schema=False)
    async def alerts_partial(session: PageSession, show: str = "open") -> HTMLResponse:
        html = templates.get_template("_alerts.html").render(
            alerts=backend.alerts(include_cleared=show == "all"),
            can_supervise=role_allows(session.role, "supervisor"),
        )
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    @app.get("/recall", response_class=HTMLResponse, include_in_schema=False)
    async def recall_page(session: PageSession) -> HTMLResponse:
        return _page("recall.html", session, "recall", records=backend.recall(last=10), record=None)

    @app.get("/recall/{round_id}", response_class=HTMLResponse, include_in_schema=False)
    async def recall_round_page(session: PageSession, round_id: str) -> HTMLResponse:
        records = backend.recall(round_id=round_id[:80])
        if not records:
            raise HTTPException(404, f"no round {round_id[:80]!r} in the journal")
        return _page("recall.html", session, "recall", records=[], record=records[0])

    @app.get("/log", response_class=HTMLResponse, include_in_schema=False)
    async def log_page(
        session: PageSession, kind: str = "", round_id: str = "", source: str = "", limit: int = 200
    ) -> HTMLResponse:
        kinds = [k for k in kind.split(",") if k] or None
        entries = backend.journal_entries(
            limit=max(1, min(limit, 1000)), kinds=kinds, round_id=round_id or None, source=source or None
        )
        return _page(
            "log.html",
            session,
            "log",
            entries=entries,
            filters={"kind": kind, "round_id": round_id, "source": source},
        )

    @app.get("/meters", response_class=HTMLResponse, include_in_schema=False)
    async def meters_page(session: PageSession) -> HTMLResponse:
        return _page("meters.html", session, "meters", meters=backend.meters())

    @app.get("/partials/meters", response_class=HTMLResponse, include_in_schema=False)
    async def meters_partial(_session: PageSession) -> HTMLResponse:
        html = templates.get_template("_meters.html").render(meters=backend.meters())
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    # --- the API: reading -------------------------------------------------------------------------
    @app.get("/api/session", tags=["session"])
    async def api_whoami(session: ApiSession) -> dict[str, Any]:
        """Who is logged in, the role, and the CSRF token for state-changing requests."""
        return {"user": session.user, "role": session.role, "csrf_token": session.csrf_token}

    @app.get("/api/table", tags=["table"])
    async def api_table(_session: ApiSession) -> dict[str, Any]:
        """The table at a glance. No card leaves before its reveal."""
        return backend.snapshot()

    @app.get("/api/devices", tags=["table"])
    async def api_devices(_session: ApiSession) -> list[dict[str, Any]]:
        return backend.devices()

    @app.get("/api/alerts", tags=["alerts"])
    async def api_alerts(_session: ApiSession, include_cleared: bool = False) -> list[dict[str, Any]]:
        return backend.alerts(include_cleared=include_cleared)

    @app.get("/api/recall", tags=["recall"])
    async def api_recall(
        _session: ApiSession,
        last: Annotated[int, Query(ge=1, le=50)] = 10,
        round_id: Annotated[str | None, Query(max_length=80)] = None,
    ) -> list[dict[str, Any]]:
        """Recall records (docs/journal.md "Recall") of the last rounds, or of one round."""
        return backend.recall(last=last, round_id=round_id)

    @app.get("/api/journal", tags=["journal"])
    async def api_journal(
        _session: ApiSession,
        since_seq: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
        kind: Annotated[str | None, Query(max_length=400, description="comma-separated kinds")] = None,
        round_id: Annotated[str | None, Query(max_length=80)] = None,
        source: Annotated[str | None, Query(max_length=80)] = None,
    ) -> list[dict[str, Any]]:
        """Journal entries, card-safe: since_seq > 0 reads forward from there, else the newest first."""
        kinds = [k for k in kind.split(",") if k] if kind else None
        return backend.journal_entries(
            since_seq=since_seq,
            limit=limit,
            kinds=kinds,
            round_id=round_id,
            source=source,
            newest_first=since_seq == 0,
        )

    @app.get("/api/meters", tags=["meters"])
    async def api_meters(_session: ApiSession) -> dict[str, Any]:
        return backend.meters()

    @app.get("/api/events", tags=["journal"], response_class=StreamingResponse)
    async def api_events(
        request: Request,
        session: ApiSession,
        since: Annotated[
            int | None,
            Query(ge=0, le=MAX_SEQ, description="resume after this seq (else Last-Event-ID, else now)"),
        ] = None,
    ) -> StreamingResponse:
        """Server-Sent Events: each journal entry (card-safe) with the journal seq as its event id."""
        last_event_id = request.headers.get("last-event-id", "").strip()
        since_seq = since
        if last_event_id.isdigit() and len(last_event_id) <= 18:
            since_seq = int(last_event_id)
        token = session.token

        def _sse_frame(item: dict[str, Any]) -> bytes:
            # The fan-out hands every subscriber the same entry object: encode it once for all. A
            # replayed entry is a new object (gated anew), so it never takes another's frame.
            seq = int(item["seq"])
            cached = sse_frames.get(seq)
            if cached is not None and cached[0] is item:
                return cached[1]
            data = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
            event = "reload" if item.get("kind") == "reload" else "journal"
            frame = f"id: {seq}\nevent: {event}\ndata: {data}\n\n".encode()
            sse_frames[seq] = (item, frame)
            while len(sse_frames) > SSE_FRAME_CACHE:
                sse_frames.popitem(last=False)
            return frame

        async def stream() -> AsyncIterator[bytes]:
            yield f"retry: {SSE_RETRY_MS}\n\n".encode()
            async for item in backend.subscribe(since_seq, idle_s=settings.sse_keepalive_s):
                if sessions.get(token, touch=False) is None:
                    yield b"event: logout\ndata: {}\n\n"
                    return
                if item is None:
                    yield b": keep-alive\n\n"
                    continue
                yield _sse_frame(item)

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    # --- the API: acting --------------------------------------------------------------------------
    FaultId = Annotated[str, PathParam(min_length=1, max_length=80)]

    @app.post("/api/alerts/{fault_id}/acknowledge", tags=["alerts"])
    async def api_acknowledge(
        fault_id: FaultId, session: Annotated[Session, Depends(needs("supervisor", "acknowledge_fault"))]
    ) -> Done:
        backend.acknowledge_alert(fault_id, session.user)
        return Done()

    @app.post("/api/alerts/{fault_id}/clear", tags=["alerts"])
    async def api_clear(
        fault_id: FaultId,
        body: ReasonBody,
        session: Annotated[Session, Depends(needs("supervisor", "clear_fault"))],
    ) -> Done:
        await backend.perform(ClearFault(fault_id, session.user, body.reason))
        return Done()

    @app.post("/api/round/void", tags=["actions"])
    async def api_void(
        body: ReasonBody, session: Annotated[Session, Depends(needs("supervisor", "void_round"))]
    ) -> Done:
        await backend.perform(VoidRound(body.reason, session.user))
        return Done()

    @app.post("/api/button/move", tags=["actions"])
    async def api_move_button(
        body: MoveButtonBody, session: Annotated[Session, Depends(needs("supervisor", "move_button"))]
    ) -> Done:
        await backend.perform(MoveButton(body.seat, session.user))
        return Done()

    @app.post("/api/table/open", tags=["actions"])
    async def api_open(session: Annotated[Session, Depends(needs("manager", "open_table"))]) -> Done:
        await backend.perform(OpenTable(session.user))
        return Done()

    @app.post("/api/table/close", tags=["actions"])
    async def api_close(
        body: ReasonBody, session: Annotated[Session, Depends(needs("manager", "close_table"))]
    ) -> Done:
        await backend.perform(CloseTable(session.user, body.reason))
        return Done()

    @app.post("/api/table/limits", tags=["actions"])
    async def api_limits(
        body: LimitsBody, session: Annotated[Session, Depends(needs("manager", "set_limits"))]
    ) -> Done:
        if body.min_ante_cents > body.max_ante_cents:
            raise ActionRefused("min_ante_cents: above max_ante_cents")
        await backend.perform(SetLimits(body.min_ante_cents, body.max_ante_cents, session.user))
        return Done()

    @app.post("/api/table/paytable", tags=["actions"])
    async def api_paytable(
        body: PaytableBody, session: Annotated[Session, Depends(needs("manager", "set_paytable"))]
    ) -> Done:
        await backend.perform(SetPaytable(body.wager, body.paytable, session.user))
        return Done()

    return app


def _money(cents: object) -> str:
    if not isinstance(cents, int):
        return "—"
    sign = "-" if cents < 0 else ""
    return f"{sign}{abs(cents) // 100:,}.{abs(cents) % 100:02d}"


def _clock_text(time_utc: object) -> str:
    """``2026-11-29T16:24:26.123456Z`` -> ``16:24:26``: the floor reads times of day."""
    if not isinstance(time_utc, str) or "T" not in time_utc:
        return "—"
    return time_utc.split("T", 1)[1][:8]
