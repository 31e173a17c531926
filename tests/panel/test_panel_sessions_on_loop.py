"""The table panel's session store is not made for threads (a touch, an expired session's removal, a
login's sweep of the ended ones: plain dict work): every request's use of it, a page's, an API poll's, an
action's, is on the server's event loop. The floor panel's split found it (its dependencies had become
plain functions, which FastAPI runs in its thread pool, and a test raced); the table panel's page and API
session dependencies were plain functions too."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient

from tests.panel.conftest import FakeClock, PanelRig, login


class ThreadNoting(FakeClock):
    """The sessions' clock, noting the thread of every call: the store reads it on every use."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.now_s = clock.now_s
        self.threads: set[int] = set()

    def __call__(self) -> float:
        self.threads.add(threading.get_ident())
        return super().__call__()


def test_the_sessions_are_used_on_the_event_loop_only(rig: PanelRig, client: TestClient) -> None:
    noting = ThreadNoting(rig.clock)
    rig.app.state.panel.sessions.clock = noting
    csrf = login(client, "sam")
    assert client.get("/").status_code == 200  # a page
    assert client.get("/alerts").status_code == 200
    assert client.get("/api/session").status_code == 200  # the API
    assert client.get("/api/table").status_code == 200
    answer = client.post("/api/table/hold", headers={"X-CSRF-Token": csrf}, json={"reason": "a test"})
    assert answer.status_code < 500
    assert len(noting.threads) == 1, f"the session store was used from {len(noting.threads)} threads"
