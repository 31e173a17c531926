"""The panel's answers to what goes wrong: a clear 4xx for anything a client sent, and handlers that
cannot fail themselves.

Every error body is ASCII JSON (``ensure_ascii``), so no text a client sent — a lone surrogate such as
``"\\ud800"``, which JSON allows and UTF-8 cannot encode — can make the handler raise while answering.
A request that does not validate answers 422 naming the fields, without echoing the input back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from controller.errors import UserError
from controller.panel.backend import ActionUnavailable, NotFound
from controller.panel.context import PASSWORD_PAGE, NeedLogin, NeedNewPassword

log = structlog.get_logger("controller.panel")

MAX_DETAIL_CHARS = 500


class SafeJSONResponse(Response):
    """JSON that encodes any Python string (surrogates become \\udXXX escapes, never an error)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":"), default=str).encode("ascii")


def error_response(status: int, detail: object, headers: Mapping[str, str] | None = None) -> Response:
    if isinstance(detail, str):
        detail = detail[:MAX_DETAIL_CHARS]
    return SafeJSONResponse({"detail": detail}, status_code=status, headers=dict(headers or {}))


def _field_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """pydantic's errors without the input (which may be huge, or not encodable): where and what."""
    out = []
    for error in list(errors)[:20]:
        if not isinstance(error, Mapping):
            continue
        out.append(
            {
                "loc": [str(part)[:80] for part in error.get("loc", ())],
                "msg": str(error.get("msg", ""))[:200],
                "type": str(error.get("type", ""))[:60],
            }
        )
    return out


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(NeedLogin)
    async def _to_login(_request: Request, _error: NeedLogin) -> Response:
        return RedirectResponse("/login", status_code=303)

    @app.exception_handler(NeedNewPassword)
    async def _to_password(_request: Request, _error: NeedNewPassword) -> Response:
        return RedirectResponse(PASSWORD_PAGE, status_code=303)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, error: RequestValidationError) -> Response:
        return error_response(422, _field_errors(error.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, error: StarletteHTTPException) -> Response:
        return error_response(error.status_code, error.detail, error.headers)

    @app.exception_handler(NotFound)
    async def _not_found(_request: Request, error: NotFound) -> Response:
        return error_response(404, str(error))

    @app.exception_handler(ActionUnavailable)
    async def _unavailable(_request: Request, error: ActionUnavailable) -> Response:
        return error_response(503, str(error))

    @app.exception_handler(UserError)
    async def _refused(_request: Request, error: UserError) -> Response:
        return error_response(409, str(error))

    @app.exception_handler(Exception)
    async def _bug(request: Request, error: Exception) -> Response:
        # A fault of ours, not of the request: one log line with the route, one line to the client.
        log.error(
            "panel_internal_error",
            path=request.url.path[:200],
            error=f"{type(error).__name__}: {error!r}"[:300],
        )
        return error_response(500, "internal error (logged)")
