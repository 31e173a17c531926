"""Logging in and out of the floor panel: the table panel's login flow (controller/panel/login.py: the
double-submit CSRF token, the failed-login budgets taken before the password check), the floor's users
(controller/floor/users.py) and its log lines (``floor_login``, ``floor_login_failed``: the name tried
and the address, never the password; not recorded in PostgreSQL, docs/floor.md says why)."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from controller.floor.panel.context import FloorDep, FloorPanel, FormText, checked_form_session, log
from controller.floor.panel.settings import (
    LOGIN_CSRF_COOKIE,
    LOGIN_SUBTITLE,
    SESSION_COOKIE,
    FloorUser,
)
from controller.panel.auth import set_cookie
from controller.panel.login import (
    FORM_EXPIRED,
    LoginForm,
    check_login,
    login_csrf_ok,
    login_page,
    login_redirect,
    refused_login,
)

router = APIRouter(include_in_schema=False)


def login_form(
    floor: FloorPanel, request: Request, message: str = "", status: int = 200, user: str = ""
) -> Response:
    """The table panel's login page (controller/panel/templates/login.html) under the floor's name."""

    def render(token: str) -> str:
        return floor.templates.get_template("login.html").render(
            message=message, csrf_token=token, user=user, site="flushtable floor", subtitle=LOGIN_SUBTITLE
        )

    return login_page(request, render, cookie=LOGIN_CSRF_COOKIE, status=status)


@router.get("/login", response_class=HTMLResponse)
async def login_get(request: Request, floor: FloorDep) -> Response:
    return login_form(floor, request)


@router.post("/login")
async def login(request: Request, floor: FloorDep, form: LoginForm) -> Response:
    if not login_csrf_ok(request, LOGIN_CSRF_COOKIE, form.csrf_token):
        return login_form(floor, request, FORM_EXPIRED, 403, form.name)
    remote = request.client.host if request.client else "?"
    found = floor.settings.users.get(form.name)

    def authenticate() -> FloorUser | None:
        # An unknown name costs the same check as a wrong password: the time tells no names.
        checked_hash = found.password_hash if found is not None else floor.unknown_user_hash
        return found if floor.settings.verify(form.password, checked_hash) and found is not None else None

    checked = await check_login(floor.logins, (f"addr:{remote}", f"user:{form.name}"), authenticate)
    if checked.user is None:
        extra = {"retry_after_s": checked.retry_after_s} if checked.retry_after_s else {}
        log.warning("floor_login_failed", user=form.name, remote=remote, reason=checked.failure, **extra)
        return refused_login(
            checked, lambda message, status: login_form(floor, request, message, status, form.name)
        )
    logged_in = checked.user
    log.info("floor_login", user=logged_in.name, role=logged_in.role, remote=remote)
    # A login in a browser that still holds a session ends that one: one browser, one session.
    floor.sessions.end(request.cookies.get(SESSION_COOKIE))
    session = floor.sessions.create(logged_in.name, logged_in.role, must_change_password=False)
    response = RedirectResponse("/", status_code=303)
    set_cookie(response, request, SESSION_COOKIE, session.token, int(floor.settings.absolute_timeout_s))
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/")  # spent: the next login page makes another
    return response


@router.post("/logout")
async def logout(request: Request, floor: FloorDep, csrf_token: FormText = "") -> Response:
    if floor.session_of(request, touch=False) is not None:  # without one: to the login all the same
        session = checked_form_session(request, csrf_token)  # a forged or stale form logs no one out (403)
        floor.sessions.end(session.token)
    response = login_redirect()
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
