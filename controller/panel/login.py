"""The login flow both panels share (the table's, controller/panel/routes/auth.py; the floor's,
controller/floor/panel/routes/auth.py): the login form's double-submit CSRF token, the password check
taken from the failed-login budgets *before* it runs, and the words a refused login is answered with.

What differs stays with each panel: where its users live, and where a failed login is told (the table
journals it; the floor logs it, docs/floor.md says why).
"""

# No `from __future__ import annotations`: FastAPI reads the dependency's annotations at run time.
import asyncio
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar

from fastapi import Depends, Form
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from controller.panel.auth import (
    MAX_PASSWORD_CHARS,
    USER_NAME_MAX_CHARS,
    LoginBudget,
    LoginTicket,
    set_cookie,
)

LOGIN_CSRF_MAX_AGE_S = 3600  # a login page left open longer asks for a reload
FORM_EXPIRED = "The login form expired; please try again."
WRONG_LOGIN = "Wrong user name or password."

UserT = TypeVar("UserT")
FailureReason = Literal["locked_out", "rate_limited", "bad_credentials"]


class NeedLogin(Exception):
    """A page asked for without a session: each panel's handler redirects it to the login page."""


def login_redirect() -> RedirectResponse:
    return RedirectResponse("/login", status_code=303)


def clean(text: str) -> str:
    """Form text as UTF-8 can carry it (a lone surrogate becomes '?'): it is logged and compared."""
    return text.encode("utf-8", "replace").decode("utf-8")


def tokens_equal(sent: str, expected: str) -> bool:
    """A CSRF token compared in constant time (any text a client sent, encodable or not)."""
    return secrets.compare_digest(sent.encode("utf-8", "replace"), expected.encode("utf-8", "replace"))


def login_page(
    request: Request, render: Callable[[str], str], *, cookie: str, status: int = 200
) -> HTMLResponse:
    """The login page with a fresh double-submit token: ``render(token)`` puts it in the form, and the
    cookie ``cookie`` holds it too. A login POST must carry both, equal: another site's form can send
    the field but cannot read or set this site's cookie, so it cannot log a browser into the
    attacker's account (login CSRF)."""
    token = secrets.token_urlsafe(24)
    response = HTMLResponse(render(token), status, headers={"Cache-Control": "no-store"})
    set_cookie(response, request, cookie, token, LOGIN_CSRF_MAX_AGE_S)
    return response


def login_csrf_ok(request: Request, cookie: str, sent: str) -> bool:
    """The form's token is the login page's cookie (checked before the budget: a forged form costs no
    one's budget)."""
    cookie_token = request.cookies.get(cookie, "")
    return bool(cookie_token) and tokens_equal(cookie_token, sent)


@dataclass(frozen=True, slots=True)
class LoginFields:
    """The login form as both panels read it (FastAPI's form handling): the name as typed, truncated (it
    is logged, and a log line stays one short line), the password within its bound, the form's token."""

    name: str
    password: str
    csrf_token: str


def login_fields(
    user: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    csrf_token: Annotated[str, Form()] = "",
) -> LoginFields:
    return LoginFields(clean(user)[:USER_NAME_MAX_CHARS], clean(password)[:MAX_PASSWORD_CHARS], csrf_token)


LoginForm = Annotated[LoginFields, Depends(login_fields)]


@dataclass(frozen=True, slots=True)
class LoginResult(Generic[UserT]):
    """One login attempt: the user it logged in, or why not."""

    user: UserT | None
    retry_after_s: int = 0  # > 0: refused unchecked, a budget is locked for this long
    filled_budget: bool = False  # this failure filled a budget and locked its name or address

    @property
    def failure(self) -> FailureReason | None:
        if self.user is not None:
            return None
        if self.retry_after_s:
            return "locked_out"
        return "rate_limited" if self.filled_budget else "bad_credentials"

    @property
    def message(self) -> str:
        """The login page's words for a refused attempt."""
        if self.retry_after_s:
            return f"Too many failed logins. Try again in {self.retry_after_s} s."
        return WRONG_LOGIN


async def check_login(
    budget: LoginBudget, keys: Iterable[str], authenticate: Callable[[], UserT | None]
) -> LoginResult[UserT]:
    """``authenticate`` (a scrypt check: tens of milliseconds, run off the event loop) if the budgets
    allow it. The budget is taken before the check, so however many logins arrive at once at most the
    budget of checks run; it is settled however the request ends (a client gone mid-check counts as a
    failure)."""
    ticket = budget.take(keys)
    if not isinstance(ticket, LoginTicket):
        return LoginResult(None, retry_after_s=int(ticket) + 1)
    found: UserT | None = None
    try:
        found = await asyncio.to_thread(authenticate)
    finally:
        locked = budget.settle(ticket, succeeded=found is not None)
    return LoginResult(found, filled_budget=locked)


def refused_login(result: "LoginResult[Any]", page: Callable[[str, int], Response]) -> Response:
    """The login page again for a refused attempt: 429 with Retry-After when a budget is locked, else
    401. ``page(message, status)`` draws the panel's own login page."""
    status = 429 if result.retry_after_s else 401
    response = page(result.message, status)
    if result.retry_after_s:
        response.headers["Retry-After"] = str(result.retry_after_s)
    return response
