"""Run the panel with uvicorn on the daemon's own event loop, leaving the daemon its signals.

uvicorn.Server.serve() normally wraps itself in ``capture_signals()``, which replaces the process's
SIGINT and SIGTERM handlers with its own. The daemon owns those signals (it finishes or holds the round
and flushes the journal), so :class:`EmbeddedServer` overrides ``capture_signals`` with a context that
installs nothing. The daemon stops the panel with :meth:`PanelServer.stop` from its own shutdown path.

    panel = PanelServer(app, host="127.0.0.1", port=8080)
    await panel.start()          # a task on the running loop; returns once the socket listens
    ...
    await panel.stop()           # ends SSE streams, closes connections, waits for the task
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Generator
from typing import Any

import uvicorn
from fastapi import FastAPI

from controller.errors import UserError

START_TIMEOUT_S = 10.0


class EmbeddedServer(uvicorn.Server):
    """uvicorn without its signal handlers: the daemon's own stay in place."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def parse_bind(text: str, *, field: str = "--panel") -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6) -> (host, port); UserError naming ``field`` otherwise."""
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise UserError(f"{field}: {text!r} is not HOST:PORT with a port from 0 to 65535")
    return host, int(port_text)


class PanelServer:
    def __init__(
        self, app: FastAPI, *, host: str = "127.0.0.1", port: int = 8080, log_level: str = "warning"
    ) -> None:
        self.app = app
        panel = getattr(app.state, "panel", None)
        settings = panel.settings if panel is not None else None
        self.config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            access_log=False,
            lifespan="on",
            # SSE streams never end by themselves; the backend ends them at shutdown, this bounds the wait.
            timeout_graceful_shutdown=2,
            log_config=None,
            # Past this many open connections uvicorn answers 503 (docs/panel.md "Limits").
            # uvicorn would otherwise take X-Forwarded-For from any loopback peer as the client; the
            # panel keeps the real peer and believes only [panel] trusted_proxies (panel/client.py).
            proxy_headers=False,
            limit_concurrency=settings.max_connections if settings is not None else None,
        )
        self.server = EmbeddedServer(self.config)
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        """The port really bound (useful with port 0)."""
        servers: list[Any] = getattr(self.server, "servers", [])
        for server in servers:
            for sock in server.sockets:
                return int(sock.getsockname()[1])
        return int(self.config.port)

    @property
    def url(self) -> str:
        host = self.config.host
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}"

    async def start(self) -> None:
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
        self._task = asyncio.get_running_loop().create_task(self.server.serve(), name="panel-http")
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT_S
        while not self.server.started:
            if self._task.done():
                error = self._task.exception()
                raise UserError(f"panel: cannot listen on {self.config.host}:{self.config.port}: {error}")
            if asyncio.get_running_loop().time() > deadline:
                raise UserError(f"panel: did not start within {START_TIMEOUT_S} s")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        if self._task is None:
            return
        backend = getattr(self.app.state, "backend", None)
        if backend is not None:
            await backend.aclose()  # ends every SSE stream, so the graceful shutdown is quick
        self.server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
