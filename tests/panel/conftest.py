"""Panel fixtures: a real journal file, real users (scrypt hashes in a real user file), the real app,
and a live uvicorn server on 127.0.0.1 in a thread of its own for the browser, SSE and schema tests."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import structlog
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient

from controller.journal import Journal
from controller.panel import (
    DeviceHealth,
    JournalPanelBackend,
    PanelServer,
    PanelSettings,
    UserStore,
    create_panel_app,
)
from tests.panel.table_script import JournalTableActions

PASSWORDS = {
    "vera": "viewer-pass-1",
    "sam": "supervisor-pass-1",
    "max": "manager-pass-1",
    "mia": "manager-pass-2",
}
ROLES = {
    "vera": "viewer",
    "sam": "supervisor",
    "max": "manager",
    "mia": "manager",
}  # two managers: two-person control


class FakeClock:
    """The sessions' and limiter's monotonic clock, moved by the test (time, not a part, is faked)."""

    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


@dataclass
class DeviceLinks:
    """The device supervisors' health reports (drivers.supervisor.DeviceHealth on the devices branch),
    as the daemon hands them to the panel; tests set them. A stand-in until the lead connects drivers."""

    reports: list[DeviceHealth] = field(default_factory=list)

    def __call__(self) -> list[DeviceHealth]:
        return list(self.reports)


@dataclass
class PanelRig:
    journal: Journal
    users: UserStore
    actions: JournalTableActions
    backend: JournalPanelBackend
    app: FastAPI
    clock: FakeClock
    links: DeviceLinks
    url: str = ""
    extra: dict[str, object] = field(default_factory=dict)


def _users(path: Path) -> UserStore:
    store = UserStore(path)
    for name, password in PASSWORDS.items():
        store.add(name, ROLES[name], password)  # type: ignore[arg-type]
    return store


@pytest.fixture(scope="session")
def users_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One user file for the session: scrypt is deliberately slow, so hash each password once."""
    path = tmp_path_factory.mktemp("users") / "panel-users.json"
    _users(path)
    return path


def make_rig(tmp_path: Path, users_file: Path, *, poll_interval_s: float = 0.05, **settings: Any) -> PanelRig:
    """The panel over a fresh journal; ``settings``: PanelSettings fields beyond the rig's own."""
    journal = Journal.open(tmp_path / "var" / "journal.sqlite", "T1")
    store = UserStore(users_file)
    actions = JournalTableActions(journal)
    links = DeviceLinks()
    clock = FakeClock()
    panel_settings = PanelSettings(clock=clock, idle_timeout_s=600, **settings)
    # As controller/panel/embed.py builds it: the backend's sentences in the pages' money.
    backend = JournalPanelBackend(
        journal,
        actions=actions,
        device_health=links,
        poll_interval_s=poll_interval_s,
        money_format=panel_settings.property_settings.money,
    )
    app = create_panel_app(backend, users=store, settings=panel_settings)
    return PanelRig(journal, store, actions, backend, app, clock, links)


@pytest.fixture
def rig(tmp_path: Path, users_file: Path) -> Iterator[PanelRig]:
    made = make_rig(tmp_path, users_file)
    yield made
    made.journal.close()


@pytest.fixture
def client(rig: PanelRig) -> Iterator[TestClient]:
    with TestClient(rig.app, base_url="http://127.0.0.1") as test_client:
        yield test_client


def api_routes(app: FastAPI) -> list[APIRoute]:
    """Every route of the app, those of its included routers too (FastAPI keeps them per router)."""
    routes = (context.original_route for context in iter_route_contexts(app.routes))
    return [route for route in routes if isinstance(route, APIRoute)]


def login(client: TestClient, name: str, password: str | None = None) -> str:
    """Log in through the form as a browser does; the session's CSRF token."""
    page = client.get("/login")
    assert page.status_code == 200
    token = client.cookies.get("ft_login_csrf")
    answer = client.post(
        "/login",
        data={
            "user": name,
            "password": PASSWORDS[name] if password is None else password,
            "csrf_token": token or "",
        },
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
    session = client.get("/api/session")
    assert session.status_code == 200
    csrf: str = session.json()["csrf_token"]
    return csrf


class LiveServer:
    """The panel served by uvicorn (PanelServer, as the daemon runs it) on an event loop in a thread."""

    def __init__(self, rig: PanelRig) -> None:
        self.rig = rig
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="panel-server", daemon=True)
        self.server: PanelServer | None = None
        self.error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self.stopped = False

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve())
        except BaseException as error:  # reported by start()
            self.error = error
            self.ready.set()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self.server = PanelServer(self.rig.app, host="127.0.0.1", port=0)
        await self.server.start()
        self.ready.set()
        await self._stop.wait()
        await self.server.stop()

    def start(self) -> str:
        self.thread.start()
        assert self.ready.wait(30), "panel server did not start"
        if self.error is not None:
            raise self.error
        assert self.server is not None
        return self.server.url

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(30)
        assert not self.thread.is_alive(), "panel server did not stop"
        self.loop.close()


@pytest.fixture
def live(rig: PanelRig) -> Iterator[PanelRig]:
    server = LiveServer(rig)
    rig.url = server.start()
    rig.extra["server"] = server
    yield rig
    server.stop()  # a test may have stopped it already


@pytest.fixture(autouse=True)
def _quiet_structlog() -> Iterator[None]:
    """The journal logs every append; keep test output to failures and put structlog back after."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
