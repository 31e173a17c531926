"""The panel served by uvicorn on 127.0.0.1 (as the daemon runs it): SSE whose event id is the journal
seq, a reconnect with Last-Event-ID resumes with no gap, no card in the stream before its reveal, and
uvicorn leaves the daemon's signal handlers alone."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controller.journal import Journal
from controller.panel import JournalPanelBackend, PanelServer, UserStore, create_panel_app
from tests.panel.conftest import PASSWORDS, LiveServer, PanelRig
from tests.panel.table_script import ScriptedRound, all_cards

WAIT_S = 30.0  # the bound on every wait for a condition below: only a failing test waits this long


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {WAIT_S} s waiting for {what}"
        time.sleep(0.01)


def http_login(base_url: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=base_url, timeout=WAIT_S)
    client.get("/login")
    token = client.cookies.get("ft_login_csrf") or ""
    answer = client.post("/login", data={"user": name, "password": PASSWORDS[name], "csrf_token": token})
    assert answer.status_code in (200, 303), answer.text
    assert client.get("/api/session").status_code == 200
    return client


def sse_events(
    client: httpx.Client,
    *,
    count: int,
    since: int | None = None,
    last_event_id: str | None = None,
    timeout_s: float = WAIT_S,
) -> Iterator[dict[str, Any]]:
    """Read ``count`` events (id, event, data) from /api/events, then hang up."""
    headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
    params = {"since": since} if since is not None else {}
    deadline = time.monotonic() + timeout_s
    got = 0
    with client.stream("GET", "/api/events", params=params, headers=headers, timeout=timeout_s) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        event: dict[str, Any] = {}
        for line in response.iter_lines():
            assert time.monotonic() < deadline, "SSE: not enough events in time"
            if line.startswith("id: "):
                event["id"] = line[4:]
            elif line.startswith("event: "):
                event["event"] = line[7:]
            elif line.startswith("data: "):
                event["data"] = json.loads(line[6:])
            elif line == "" and "data" in event:
                yield event
                event = {}
                got += 1
                if got >= count:
                    return


def test_sse_ids_are_journal_seqs_and_a_reconnect_resumes_without_a_gap(live: PanelRig) -> None:
    client = http_login(live.url, "vera")
    start = live.journal.last_entry()
    assert start is not None
    script = ScriptedRound(live.journal)
    steps = script.steps()
    next(steps)  # betting: the round machine leaves idle
    next(steps)  # bets locked: the round starts
    betting = list(live.journal.entries(since_seq=start.seq))
    assert len(betting) >= 3
    first = list(sse_events(client, count=len(betting), since=start.seq))
    assert [int(e["id"]) for e in first] == [e.seq for e in betting]
    assert all(int(e["id"]) == e["data"]["seq"] for e in first)
    assert [e["data"]["kind"] for e in first] == [e.kind for e in betting]
    assert "round_started" in [e["data"]["kind"] for e in first]
    # Disconnected: the table goes on. The browser comes back with Last-Event-ID.
    next(steps)  # dealt
    next(steps)  # decisions
    last = live.journal.last_entry()
    assert last is not None
    missed = last.seq - int(first[-1]["id"])
    resumed = list(sse_events(client, count=missed, last_event_id=first[-1]["id"]))
    assert [int(e["id"]) for e in resumed] == list(range(int(first[-1]["id"]) + 1, last.seq + 1))
    # Live: entries appended while connected arrive too, in order. Appended only once the stream is
    # subscribed (waited for, not slept for: after a fixed 0.3 s a slow stream was not yet connected,
    # and the entries came by its replay instead). The two streams above, hung up, are gone first, so
    # the subscriber counted is this one.
    wait_until(lambda: live.backend.subscriber_count == 0, "the streams hung up to end")
    seen: list[int] = []

    def read_live() -> None:
        seen.extend(int(e["id"]) for e in sse_events(client, count=3, last_event_id=str(last.seq)))

    reader = threading.Thread(target=read_live)
    reader.start()
    wait_until(lambda: live.backend.subscriber_count > 0, "the event stream to open")
    for n in range(3):
        live.journal.append("dealer_key", {"key": "next", "seat": n}, round_id=None, source="display")
    reader.join(WAIT_S)
    assert seen == [last.seq + 1, last.seq + 2, last.seq + 3]


def test_event_stream_carries_no_card_before_its_reveal(live: PanelRig) -> None:
    """Watched live, a round's cards never travel before the reveal; a card entry goes out face down."""
    client = http_login(live.url, "max")
    start = live.journal.last_entry()
    assert start is not None
    events: list[dict[str, Any]] = []
    script = ScriptedRound(live.journal)
    entries_in_round = len(script.records())  # what the engine writes for the round, counted below

    def read() -> None:
        events.extend(sse_events(client, count=entries_in_round, since=start.seq))

    reader = threading.Thread(target=read)
    reader.start()
    # Watched live from before the round: a stream opened after the reveal would rightly replay the
    # cards (they are public by then). It used to go on after 2 s whether the stream was open or not.
    wait_until(lambda: live.backend.subscriber_count > 0, "the event stream to open")
    for _step in script.steps():
        # The panel picks each step up by itself (its poll, as from another writer) before the next is
        # written: waited for, not slept for (a loaded machine's poll can take longer than any sleep).
        step_end = live.journal.last_entry()
        assert step_end is not None

        def folded(end_seq: int = step_end.seq) -> bool:
            return live.backend.last_seq >= end_seq

        wait_until(folded, "the panel following the step")
    reader.join(WAIT_S)
    end = live.journal.last_entry()
    assert end is not None
    assert end.seq - start.seq == entries_in_round
    assert [int(e["id"]) for e in events] == list(range(start.seq + 1, end.seq + 1))
    dealt = [e["data"] for e in events if e["data"]["kind"] == "card_dealt"]
    assert len(dealt) == 28
    assert all(d["payload"] == {} and d["hidden"] for d in dealt)  # face down: the private part withheld
    everything = "\n".join(json.dumps(e["data"]) for e in events)
    reveal_at = everything.index('"to": "reveal"')
    assert not any(f'"{card}"' in everything[:reveal_at] for card in all_cards())
    # After the reveal the page reads the table, which now shows them.
    table = client.get("/api/table").json()
    assert {c for seat in table["round"]["seats"] for c in seat["cards"]} | set(
        table["round"]["dealer_cards"]
    ) == all_cards()


def test_a_journal_written_by_another_connection_reaches_the_stream(live: PanelRig, tmp_path: Path) -> None:
    """The panel follows the file, not only its own process's appends (e.g. `flushtable panel`)."""
    client = http_login(live.url, "vera")
    other = Journal.open(live.journal.path, "T1")
    try:
        start = other.last_entry()
        assert start is not None
        other.append("dealer_key", {"key": "call_floor", "seat": None}, round_id=None, source="display")
        got = list(sse_events(client, count=1, since=start.seq))
        assert got[0]["data"]["kind"] == "dealer_key"
    finally:
        other.close()


def test_healthz_over_http(live: PanelRig) -> None:
    answer = httpx.get(f"{live.url}/healthz", timeout=5)
    assert answer.status_code == 200
    assert answer.json()["status"] == "ok"


def test_uvicorn_leaves_the_daemons_signal_handlers_alone(tmp_path: Path, users_file: Path) -> None:
    """The daemon's SIGINT/SIGTERM handlers stay in place while the panel runs, and still fire."""
    received: list[str] = []

    def on_sigint(signum: int, frame: object) -> None:
        received.append("SIGINT")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, lambda: received.append("SIGTERM"))
        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            with Journal.open(tmp_path / "j.sqlite", "T1") as journal:
                app = create_panel_app(JournalPanelBackend(journal), users=UserStore(users_file))
                server = PanelServer(app, host="127.0.0.1", port=0)
                await server.start()
                assert signal.getsignal(signal.SIGINT) is on_sigint
                async with httpx.AsyncClient() as http:
                    assert (await http.get(f"{server.url}/healthz")).status_code == 200
                os.kill(os.getpid(), signal.SIGTERM)
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(100):
                    if len(received) == 2:
                        break
                    await asyncio.sleep(0.01)
                # The server did not take the signals as its own cue to exit.
                assert not server.server.should_exit
                async with httpx.AsyncClient() as http:
                    assert (await http.get(f"{server.url}/healthz")).status_code == 200
                await server.stop()
        finally:
            signal.signal(signal.SIGINT, previous)
            loop.remove_signal_handler(signal.SIGTERM)

    asyncio.run(main())
    assert sorted(received) == ["SIGINT", "SIGTERM"]


def test_stop_ends_open_event_streams_promptly(live: PanelRig) -> None:
    client = http_login(live.url, "vera")
    ended = threading.Event()

    def hold_stream() -> None:
        try:
            with client.stream("GET", "/api/events", timeout=20) as response:
                for _ in response.iter_lines():
                    pass
        except httpx.HTTPError:
            pass
        ended.set()

    reader = threading.Thread(target=hold_stream)
    reader.start()
    wait_until(lambda: live.backend.subscriber_count > 0, "the event stream to open")
    assert live.backend.subscriber_count == 1
    started = time.monotonic()
    server = live.extra["server"]
    assert isinstance(server, LiveServer)
    server.stop()
    # Promptly: not after the stream's 15 s keep-alive (what it waited for before); 10 s leaves a
    # loaded machine room and still tells the two apart.
    assert ended.wait(WAIT_S)
    assert time.monotonic() - started < 10


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback only: never route the test's requests through a proxy from the environment."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
