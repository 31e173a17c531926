"""Logging in and out, and changing one's password: the HTML forms, with FastAPI's form handling.

A login takes its password check from two budgets *before* the check (controller/panel/login.py, the
floor panel's flow too: one budget per client address, one per user name); a spent or locked budget
answers 429 without a check. Every attempt that fails is journaled as ``login_failed`` within the
address's noise budget (controller/journal/noise.py), with the real peer and, behind a trusted proxy,
the forwarded address.
"""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
import asyncio
from typing import Annotated

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from controller.errors import UserError
from controller.journal.entries import PanelRequest
from controller.journal.noise import LOGIN_FAILED
from controller.panel.auth import Session
from controller.panel.context import (
    CSRF_HEADER,
    LOGIN_CSRF_COOKIE,
    PASSWORD_PAGE,
    SESSION_COOKIE,
    PageSession,
    Panel,
    PanelDep,
    check_csrf,
    session_of,
)
from controller.panel.login import (
    FORM_EXPIRED,
    LoginForm,
    check_login,
    clean,
    login_csrf_ok,
    login_page,
    refused_login,
)

router = APIRouter(include_in_schema=False)

FormText = Annotated[str, Form()]


def _login_page(
    panel: Panel, request: Request, message: str = "", status: int = 200, user: str = ""
) -> Response:
    def render(token: str) -> str:
        return panel.render("login.html", message=message, csrf_token=token, user=user)

    return login_page(request, render, cookie=LOGIN_CSRF_COOKIE, status=status)


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request, panel: PanelDep) -> Response:
    if session_of(request) is not None:
        return RedirectResponse("/", status_code=303)
    return _login_page(panel, request)


@router.post("/login")
async def login(request: Request, panel: PanelDep, form: LoginForm) -> Response:
    if not login_csrf_ok(request, LOGIN_CSRF_COOKIE, form.csrf_token):
        return _login_page(panel, request, FORM_EXPIRED, 403, form.name)
    client = panel.proxies.client(request)
    checked = await check_login(
        panel.logins,
        (f"addr:{client.address}", f"user:{form.name}"),
        lambda: panel.users.authenticate(form.name, form.password),
    )
    found = checked.user
    if found is None:
        # Refused (unchecked when locked out: still a failed login), journaled within the address's budget.
        panel.noisy(
            LOGIN_FAILED,
            client.address,
            "login_failed",
            {"user": form.name, **client.journal_fields(), "reason": checked.failure},
            source="panel",
        )
        return refused_login(
            checked, lambda message, status: _login_page(panel, request, message, status, form.name)
        )
    session = panel.sessions.create(found.name, found.role, must_change_password=found.must_change_password)
    panel.backend.record(
        "login", {"user": found.name, "role": found.role, **client.journal_fields()}, source="panel"
    )
    response = RedirectResponse("/", status_code=303)
    panel.set_cookie(response, request, SESSION_COOKIE, session.token, int(panel.settings.absolute_timeout_s))
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/")
    return response


@router.post("/logout")
async def logout(request: Request, panel: PanelDep, csrf_token: FormText = "") -> Response:
    session = session_of(request)
    if session is not None:
        check_csrf(csrf_token or request.headers.get(CSRF_HEADER, ""), session)
        panel.sessions.end(session.token)
        logout_request = PanelRequest(action="logout", by=session.user, request={}, outcome="done")
        panel.backend.record(logout_request.kind, logout_request, source=f"operator:{session.user}")
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


def _password_page(panel: Panel, session: Session, message: str = "", status: int = 200) -> HTMLResponse:
    html = panel.render(
        "password.html",
        session=session,
        active="",
        table=panel.backend.snapshot(),
        alert_count=0,
        message=message,
        forced=session.must_change_password,
    )
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


@router.get(PASSWORD_PAGE, response_class=HTMLResponse)
async def password_page(panel: PanelDep, session: PageSession) -> HTMLResponse:
    return _password_page(panel, session)


@router.post(PASSWORD_PAGE)
async def change_password(
    *,
    panel: PanelDep,
    session: PageSession,
    csrf_token: FormText = "",
    current_password: FormText = "",
    new_password: FormText = "",
    repeat_password: FormText = "",
) -> Response:
    try:
        check_csrf(csrf_token, session)
    except HTTPException:
        raise HTTPException(403, "missing or wrong CSRF token") from None
    new = clean(new_password)
    if new != clean(repeat_password):
        return _password_page(panel, session, "The two new passwords differ.", 422)
    try:
        await asyncio.to_thread(panel.users.change_password, session.user, clean(current_password), new)
    except UserError as error:
        return _password_page(panel, session, str(error), 422)
    session.must_change_password = False
    changed = PanelRequest(action="change_password", by=session.user, request={}, outcome="done")
    panel.backend.record(changed.kind, changed, source=f"operator:{session.user}")
    return RedirectResponse("/", status_code=303)
