"""The panel against what an attacker and a hurried client send (issue 14): logins that cannot be
raced, X-Forwarded-For believed only from a trusted proxy, requests bounded while they arrive, every
malformed input a 4xx, and the users file found by one rule.

Real parts throughout: the panel served by uvicorn on 127.0.0.1 (in a thread, or as `flushtable panel`
in a process of its own where its memory is measured), real scrypt hashes, a real journal. The one
hook is the password verifier injected into the UserStore: the real scrypt check, counted and held at
a gate so the test can see how many checks a burst gets."""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.journal import Journal
from controller.panel.actions import PANEL_ACTIONS
from controller.panel.auth import verify_password
from tests.panel.conftest import PASSWORDS, LiveServer, PanelRig, login, make_rig

WAIT_S = 30.0  # the bound on every wait for a condition below (never a sleep that has to be long enough)
MiB = 1024 * 1024


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class GatedVerifier:
    """The real scrypt check, counted, each held until the gate opens (the burst's checks overlap)."""

    def __init__(self) -> None:
        self.checks = 0
        self.lock = threading.Lock()
        self.gate = threading.Event()

    def __call__(self, password: str, password_hash: str) -> bool:
        with self.lock:
            self.checks += 1
        self.gate.wait(WAIT_S)
        return verify_password(password, password_hash)


@pytest.fixture
def served(tmp_path: Path, users_file: Path) -> Iterator[tuple[PanelRig, LiveServer]]:
    rig = make_rig(tmp_path, users_file)
    server = LiveServer(rig)
    rig.url = server.start()
    yield rig, server
    server.stop()
    rig.journal.close()


def _login_token(url: str) -> str:
    with httpx.Client(base_url=url, timeout=WAIT_S) as client:
        client.get("/login")
        return client.cookies["ft_login_csrf"]


def _login_form(token: str, user: str, password: str) -> dict[str, Any]:
    # The cookie is set by hand on every request: each answer sets a fresh one, which would race.
    return {
        "data": {"user": user, "password": password, "csrf_token": token},
        "headers": {"Cookie": f"ft_login_csrf={token}"},
    }


def _failed_logins(journal: Journal) -> int:
    """Failed logins journaled one by one plus those counted in noise summaries (docs/journal.md)."""
    one_by_one = sum(1 for _ in journal.entries(kinds=["login_failed"]))
    summarized = sum(
        int(e.payload["count"])
        for e in journal.entries(kinds=["noise_suppressed"])
        if e.payload["category"] == "login_failed"
    )
    return one_by_one + summarized


def test_fifty_simultaneous_wrong_passwords_get_the_budget_of_checks_and_the_right_one_is_refused(
    served: tuple[PanelRig, LiveServer],
) -> None:
    rig, server = served
    budget = 5  # PanelSettings.login_max_failures
    verifier = GatedVerifier()
    rig.users.verify = verifier
    token = _login_token(rig.url)
    outcome: dict[str, Any] = {}

    async def burst() -> None:
        async with httpx.AsyncClient(base_url=rig.url, timeout=WAIT_S) as client:
            wrong = [
                asyncio.create_task(client.post("/login", **_login_form(token, "sam", f"wrong-{n}")))
                for n in range(50)
            ]
            # The budget's checks are running (held at the gate); every other attempt is answered.
            deadline = time.monotonic() + WAIT_S
            while verifier.checks < budget or sum(task.done() for task in wrong) < 50 - budget:
                assert time.monotonic() < deadline, (verifier.checks, sum(t.done() for t in wrong))
                await asyncio.sleep(0.01)
            right = await client.post("/login", **_login_form(token, "sam", PASSWORDS["sam"]))
            outcome["right_during"] = right.status_code
            verifier.gate.set()
            outcome["wrong"] = sorted(response.status_code for response in await asyncio.gather(*wrong))
            right = await client.post("/login", **_login_form(token, "sam", PASSWORDS["sam"]))
            outcome["right_after"] = (right.status_code, right.headers.get("retry-after"))

    asyncio.run(burst())
    assert verifier.checks == budget  # 50 wrong and 2 right: 5 password checks in all
    assert outcome["wrong"] == [401] * budget + [429] * (50 - budget)
    assert outcome["right_during"] == 429  # the budget was spent by the checks still running
    status, retry_after = outcome["right_after"]
    assert status == 429  # locked: the right password is not even checked
    assert retry_after is not None
    assert int(retry_after) >= 1
    assert not list(rig.journal.entries(kinds=["login"]))
    server.stop()  # flushes the noise budget's pending summaries
    assert _failed_logins(rig.journal) == 52  # every attempt journaled, one by one or counted


def test_forwarded_for_is_ignored_from_a_peer_that_is_not_a_trusted_proxy(
    served: tuple[PanelRig, LiveServer],
) -> None:
    rig, _server = served
    token = _login_token(rig.url)
    statuses = []
    with httpx.Client(base_url=rig.url, timeout=WAIT_S) as client:
        # Rotating the header and the user name: the peer's own budget still counts every attempt.
        for n in range(8):
            form = _login_form(token, f"user{n}", "wrong-password")
            form["headers"]["X-Forwarded-For"] = f"10.9.9.{n}"
            statuses.append(client.post("/login", **form).status_code)
    assert statuses == [401] * 5 + [429] * 3
    failed = [e.payload for e in rig.journal.entries(kinds=["login_failed"])]
    assert {p["remote"] for p in failed} == {"127.0.0.1"}
    assert all("forwarded_for" not in p or p["forwarded_for"] is None for p in failed)


def test_forwarded_for_is_honoured_from_a_trusted_proxy_and_journaled_beside_the_peer(
    tmp_path: Path, users_file: Path
) -> None:
    rig = make_rig(tmp_path, users_file, trusted_proxies=("127.0.0.0/8",))
    server = LiveServer(rig)
    rig.url = server.start()
    try:
        token = _login_token(rig.url)
        with httpx.Client(base_url=rig.url, timeout=WAIT_S) as client:

            def attempt(client_address: str, user: str, password: str = "wrong-password") -> int:
                form = _login_form(token, user, password)
                # A chain: the client's own claim first, the address the proxy saw last.
                form["headers"]["X-Forwarded-For"] = f"6.6.6.6, {client_address}"
                return client.post("/login", **form).status_code

            # Each forwarded address has its own budget, as behind a proxy it should.
            assert [attempt("10.9.9.1", f"user{n}") for n in range(6)] == [401] * 5 + [429]
            assert attempt("10.9.9.2", "user9") == 401
            assert attempt("10.9.9.2", "sam", PASSWORDS["sam"]) == 303
    finally:
        server.stop()
        rig.journal.close()
    failed = [e.payload for e in Journal.open_existing(rig.journal.path).entries(kinds=["login_failed"])]
    assert {(p["remote"], p["forwarded_for"]) for p in failed} == {
        ("127.0.0.1", "10.9.9.1"),
        ("127.0.0.1", "10.9.9.2"),
    }
    (logged_in,) = [e.payload for e in Journal.open_existing(rig.journal.path).entries(kinds=["login"])]
    assert logged_in["remote"] == "127.0.0.1"
    assert logged_in["forwarded_for"] == "10.9.9.2"


# --- bounded requests -----------------------------------------------------------------------------
def _rss_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    assert match, status
    return int(match.group(1)) * 1024


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["FLUSHTABLE_SUPERVISOR_PASSWORD"] = "bootstrap-pass-1"
    return env


@pytest.fixture
def panel_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`flushtable panel` in a process of its own, so its memory is its alone."""
    journal = tmp_path / "journal.sqlite"
    Journal.open(journal, "T9").close()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "panel",
            "--journal",
            str(journal),
            "--panel",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=tmp_path,
    )
    assert process.stdout is not None
    match = re.search(r"http://127\.0\.0\.1:(\d+)", process.stdout.readline())
    assert match, process.stderr.read() if process.stderr else ""
    yield process, match.group(1)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=WAIT_S)


def _stream_body(port: int, path: str, total_bytes: int, rss: Callable[[], int]) -> tuple[bytes, int, int]:
    """POST a chunked body of up to ``total_bytes`` over a raw socket, 1 MiB a chunk, reading the answer
    as soon as one comes; the answer, the bytes sent and the highest RSS seen while sending."""
    chunk = b"a" * MiB
    frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    sent = 0
    peak = rss()
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        try:
            while sent < total_bytes:
                readable, _, _ = select.select([sock], [], [], 0)
                if readable:
                    break
                sock.sendall(frame)
                sent += len(chunk)
                peak = max(peak, rss())
        except (BrokenPipeError, ConnectionResetError):
            pass  # the panel answered and closed: read what it said
        sock.settimeout(WAIT_S)
        try:
            while b"\r\n\r\n" not in answer:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        except ConnectionResetError:
            pass
    return answer, sent, max(peak, rss())


def test_a_300_mib_body_is_refused_with_413_while_it_arrives_and_memory_stays_flat(
    panel_process: tuple[subprocess.Popen[str], str],
) -> None:
    process, port_text = panel_process
    port = int(port_text)
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=WAIT_S).status_code == 200
    before = _rss_bytes(process.pid)
    for path in ("/login", "/api/actions/void_round"):
        answer, sent, peak = _stream_body(port, path, 300 * MiB, lambda: _rss_bytes(process.pid))
        print(f"{path}: {sent / MiB:.0f} MiB sent before the answer, RSS +{(peak - before) / MiB:.1f} MiB")
        assert answer.startswith(b"HTTP/1.1 413"), (path, answer[:200], sent)
        assert peak - before < 20 * MiB, (path, (peak - before) / MiB)
    # Declared too large up front: refused before a byte of the body is read.
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(
            f"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {300 * MiB}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n\r\n".encode()
        )
        assert sock.recv(65536).startswith(b"HTTP/1.1 413")
    assert _rss_bytes(process.pid) - before < 20 * MiB
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=WAIT_S).status_code == 200


def test_headers_past_the_limit_are_refused_with_431(client: TestClient) -> None:
    answer = client.get("/healthz", headers={f"X-Filler-{n}": "x" * 1000 for n in range(20)})
    assert answer.status_code == 431
    assert client.get("/healthz").status_code == 200


def test_live_streams_per_user_are_capped(tmp_path: Path, users_file: Path) -> None:
    rig = make_rig(tmp_path, users_file, max_streams_per_user=2)
    server = LiveServer(rig)
    rig.url = server.start()
    try:
        with httpx.Client(base_url=rig.url, timeout=WAIT_S) as client:
            token = client.get("/login") and client.cookies["ft_login_csrf"]
            client.post("/login", data={"user": "vera", "password": PASSWORDS["vera"], "csrf_token": token})
            with client.stream("GET", "/api/events") as first, client.stream("GET", "/api/events") as second:
                assert (first.status_code, second.status_code) == (200, 200)
                third = client.get("/api/events")
                assert third.status_code == 429
                assert "live streams" in third.json()["detail"]
            # Both closed: their slots come back once the server has seen them go.
            _wait_until(lambda: rig.app.state.panel.streams.get("vera", 0) == 0, "the streams to end")
            with client.stream("GET", "/api/events") as again:
                assert again.status_code == 200
    finally:
        server.stop()
        rig.journal.close()


# --- malformed input: a 4xx, never a 5xx ------------------------------------------------------------
def test_malformed_bodies_are_4xx_and_the_error_handler_does_not_fail(
    served: tuple[PanelRig, LiveServer],
) -> None:
    rig, _server = served
    with httpx.Client(base_url=rig.url, timeout=WAIT_S) as client:
        token = client.get("/login") and client.cookies["ft_login_csrf"]
        client.post("/login", data={"user": "max", "password": PASSWORDS["max"], "csrf_token": token})
        csrf = client.get("/api/session").json()["csrf_token"]
        headers = {"X-CSRF-Token": csrf, "Content-Type": "application/json"}
        bodies: list[tuple[str, bytes]] = [
            ("/api/actions/void_round", b'{"reason": "\\ud800"}'),  # a lone surrogate: valid JSON
            ("/api/actions/move_button", b'{"seat": "\\udfff"}'),
            ("/api/actions/close_table", b'{"reason": "\\ud800\\udc00 ok \\udc00"}'),
            ("/api/actions/void_round", b'{"reason": "\xff\xfe not UTF-8"}'),
            ("/api/actions/void_round", b"\xed\xa0\x80"),
            ("/api/actions/move_button", b'{"seat": 1' + b"0" * 5000 + b"}"),  # past int's digit limit
            ("/api/actions/move_button", b'{"seat": 1e400}'),
            ("/api/actions/move_button", b'{"seat": [4]}'),
            ("/api/actions/move_button", b'{"seat": 4, "by": "someone"}'),
            ("/api/actions/set_limits", b'{"min_ante_cents": -1, "max_ante_cents": true}'),
            ("/api/actions/set_paytable", b'{"wager": "flush", "spec": {"7": 300}}'),
            ("/api/actions/open_table", b"[]"),
            ("/api/actions/open_table", b"null"),
            ("/api/actions/void_round", b'{"reason": "' + b"x" * 300 + b'"}'),
            ("/api/actions/void_round", b"{" * 10_000),
        ]
        for path, body in bodies:
            answer = client.post(path, content=body, headers=headers)
            assert 400 <= answer.status_code < 500, (path, body[:40], answer.status_code, answer.text[:200])
            assert isinstance(json.loads(answer.text)["detail"], str | list)
        # The surrogate really did reach validation (and is refused there, named, not echoed back).
        answer = client.post("/api/actions/void_round", content=b'{"reason": "\\ud800"}', headers=headers)
        assert answer.status_code == 422
        assert answer.json()["detail"][0]["loc"] == ["body", "reason"]
        assert "\\ud800" not in answer.text
        assert client.get("/api/table").status_code == 200  # the connection and the panel are fine
    assert rig.actions.calls == []


TEXT = st.text(
    st.one_of(st.characters(), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)), max_size=30
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from([declared.url for declared in PANEL_ACTIONS]),
    body=st.dictionaries(
        st.sampled_from(["reason", "seat", "fault_id", "spec", "wager", "by"]) | TEXT, JSON_VALUES
    ),
)
def test_any_json_body_with_any_text_is_a_4xx(client: TestClient, path: str, body: dict[str, Any]) -> None:
    """Any JSON object, lone surrogates included (json.dumps writes them as \\udXXX escapes), to every
    action as a manager: a 4xx, or done. Never a 5xx, never a handler that fails (the test client
    raises what the app raises)."""
    session = client.get("/api/session")
    csrf = session.json()["csrf_token"] if session.status_code == 200 else login(client, "max")
    answer = client.post(
        path,
        content=json.dumps(body).encode("ascii"),
        headers={"X-CSRF-Token": csrf, "Content-Type": "application/json"},
    )
    assert answer.status_code < 500, (path, body, answer.status_code, answer.text[:200])


def test_a_stream_whose_client_reads_nothing_is_dropped_and_its_slot_released(
    tmp_path: Path, users_file: Path
) -> None:
    rig = make_rig(tmp_path, users_file, sse_send_timeout_s=0.5, max_streams_per_user=1)
    server = LiveServer(rig)
    rig.url = server.start()
    port = int(rig.url.rsplit(":", 1)[1])
    try:
        with httpx.Client(base_url=rig.url, timeout=WAIT_S) as client:
            token = client.get("/login") and client.cookies["ft_login_csrf"]
            client.post("/login", data={"user": "vera", "password": PASSWORDS["vera"], "csrf_token": token})
            cookie = client.cookies["ft_session"]
            with socket.socket() as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window, never read
                sock.connect(("127.0.0.1", port))
                request = (
                    f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ft_session={cookie}\r\n\r\n"
                )
                sock.sendall(request.encode())
                _wait_until(lambda: rig.app.state.panel.streams.get("vera") == 1, "the stream to open")
                assert client.get("/api/events").status_code == 429  # its one slot is taken
                # Entries the client never reads, until the server's buffers are full and a send waits.
                for n in range(400):
                    rig.journal.append("panel_request", _filler(n), round_id=None, source="operator:test")
                server.loop.call_soon_threadsafe(rig.backend.notify)  # its loop is the server's
                _wait_until(
                    lambda: "vera" not in rig.app.state.panel.streams, "the stalled stream to be dropped"
                )
            with client.stream("GET", "/api/events") as again:  # the slot came back
                assert again.status_code == 200
    finally:
        server.stop()
        rig.journal.close()


def _filler(n: int) -> dict[str, Any]:
    return {"action": "note", "by": "test", "request": {"n": n, "text": "x" * 10_000}, "outcome": "done"}


def test_connections_past_the_cap_are_answered_503(tmp_path: Path, users_file: Path) -> None:
    rig = make_rig(tmp_path, users_file, max_connections=2)
    server = LiveServer(rig)
    rig.url = server.start()
    try:
        with httpx.Client(base_url=rig.url, timeout=WAIT_S) as client:
            token = client.get("/login") and client.cookies["ft_login_csrf"]
            client.post("/login", data={"user": "vera", "password": PASSWORDS["vera"], "csrf_token": token})
            with (
                client.stream("GET", "/api/events"),  # a live stream: one connection in use
                httpx.Client(base_url=rig.url, timeout=WAIT_S) as other,
                other.stream("GET", "/healthz") as second,  # kept alive: the second
                httpx.Client(base_url=rig.url, timeout=WAIT_S) as third,
            ):
                second.read()
                assert third.get("/healthz").status_code == 503
            # The streams gone, the panel answers again.
            _wait_until(lambda: httpx.get(f"{rig.url}/healthz", timeout=WAIT_S).status_code == 200, "room")
    finally:
        server.stop()
        rig.journal.close()
