"""schemathesis against the panel's OpenAPI schema: generated requests to every operation, logged in
as each role (viewer, supervisor, manager) with a valid session and CSRF token (so they reach the
handlers and the role checks), and with neither; no 5xx.

Strings are drawn from schemathesis' full strategies (``codec=None``: any code point, NUL included),
as well as the positive and negative modes (wrong types, values out of range, unknown fields).
Bounded: a fixed number of examples per operation (hypothesis settings below), over loopback against
the panel served by uvicorn. The SSE stream is left out: it never ends by design (tested in
test_panel_live.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tests.panel.conftest import PASSWORDS, LiveServer, PanelRig, make_rig
from tests.panel.table_script import ScriptedRound, raise_red_light

EXAMPLES_PER_OPERATION = 12  # per role: about 40 s for the three on this machine
ROLE_USERS = {"viewer": "vera", "supervisor": "sam", "manager": "max"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, users_file: Path) -> Iterator[dict[str, Any]]:
    rig: PanelRig = make_rig(tmp_path_factory.mktemp("schema"), users_file)
    ScriptedRound(rig.journal).play_all()
    raise_red_light(rig.journal)
    server = LiveServer(rig)
    url = server.start()
    logged_in: dict[str, dict[str, str]] = {}
    for role, user in ROLE_USERS.items():
        with httpx.Client(base_url=url, timeout=10) as client:
            client.get("/login")
            client.post(
                "/login",
                data={
                    "user": user,
                    "password": PASSWORDS[user],
                    "csrf_token": client.cookies.get("ft_login_csrf") or "",
                },
            )
            session = client.get("/api/session").json()
            schema_document = client.get("/openapi.json").json()
            logged_in[role] = {
                "csrf": session["csrf_token"],
                "cookie": client.cookies.get("ft_session") or "",
            }
    yield {"url": url, "roles": logged_in, "schema": schema_document, "rig": rig}
    server.stop()
    rig.journal.close()


def _schema() -> Any:
    """The schema as the app generates it (the served one is compared to it below)."""
    import tempfile

    from controller.journal import Journal
    from controller.panel import JournalPanelBackend, UserStore, create_panel_app

    with tempfile.TemporaryDirectory() as scratch, Journal.open(Path(scratch) / "j.sqlite", "T1") as journal:
        document = create_panel_app(
            JournalPanelBackend(journal), users=UserStore(Path(scratch) / "u.json")
        ).openapi()
    loaded = schemathesis.openapi.from_dict(document).exclude(path="/api/events")
    # Full strings: any code point (NUL included), not only the UTF-8 codec's. schemathesis never draws
    # lone surrogates (its own choice: a wire codec cannot carry them); test_panel_hardening.py sends
    # them as JSON escapes, which is how they arrive.
    loaded.config.generation.codec = None
    loaded.config.generation.allow_x00 = True
    return loaded


schema = _schema()


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
@pytest.mark.parametrize("role", list(ROLE_USERS))
def test_no_server_error_with_a_session(case: Any, served: dict[str, Any], role: str) -> None:
    session = served["roles"][role]
    response = case.call(
        base_url=served["url"],
        headers={"X-CSRF-Token": session["csrf"], "Cookie": f"ft_session={session['cookie']}"},
        timeout=10,
    )
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:300]}"
    )


@schema.parametrize()
@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# The parametrize gives each operation's item an id of its own (schemathesis names an item by its
# operation only beside another parametrize; tests/conftest.py refuses repeated ids).
@pytest.mark.parametrize("session", ["no_session"])
def test_no_server_error_and_no_entry_without_a_session(
    case: Any, served: dict[str, Any], session: str
) -> None:
    response = case.call(base_url=served["url"], timeout=10)
    assert response.status_code < 500
    if case.path != "/healthz":
        # 401 without a session; 405 for a method the path lacks; 400/422 for a body that cannot be read.
        assert response.status_code in (400, 401, 405, 422), (case.path, response.status_code)


def test_served_schema_is_the_generated_one(served: dict[str, Any]) -> None:
    assert set(served["schema"]["paths"]) == set(schema.raw_schema["paths"])
