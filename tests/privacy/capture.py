"""Everything a viewer is shown while the table plays, each text with when it was emitted.

- :class:`Watermark`: the journal's last committed seq, read on a read-only connection of its own. Read
  just after a text is received, it bounds what the text can know: it was produced no later than that.
- :class:`Captured`: one text, its channel (``route``, ``sse``, ``log``, ``cli``), where (the route, the
  command), its order of capture, monotonic time and watermark.
- :class:`LogCapture`: the stream structlog writes the daemon's JSON lines to (controller/logs.py).
- :class:`Viewer`: a viewer, logged in to the daemon's panel as the lowest role: one thread reads the
  SSE stream, one polls every GET route and page of the FastAPI app (round ids filled from what the API
  lists), one runs the journal and recall commands (cli_batch.py) when a round is in play past its deal.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from tests.daemon.harness import REPO

Channel = Literal["route", "sse", "log", "cli"]
Format = Literal["json", "html", "text", "jsonlines", "journal_text"]
VIEWER = ("vera", "viewer-pass-leak-1")
MANAGER = ("max", "manager-pass-leak-1")  # so the panel creates no bootstrap user at start
SSE_PATH = "/api/events"
# Query variants that reach more of what the panel holds, used where the route declares the parameter.
QUERY_VARIANTS: dict[str, list[dict[str, str]]] = {
    "/alerts": [{"show": "all"}],
    "/partials/alerts": [{"show": "all"}],
    "/log": [{"limit": "1000"}],
    "/api/alerts": [{"include_cleared": "true"}],
    "/api/recall": [{"last": "50"}],
    "/api/journal": [{"limit": "1000"}, {"since_seq": "1", "limit": "1000"}],
}


class Watermark:
    """The journal's last committed seq (0 before the journal exists), one connection per thread."""

    def __init__(self, journal_path: Path) -> None:
        self.journal_path = journal_path
        self._local = threading.local()

    def __call__(self) -> int:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            if not self.journal_path.exists():
                return 0
            connection = sqlite3.connect(
                f"file:{self.journal_path}?mode=ro", uri=True, timeout=5.0, check_same_thread=False
            )
            self._local.connection = connection
        row = connection.execute("SELECT max(seq) FROM journal").fetchone()
        return int(row[0] or 0)


@dataclass(frozen=True, slots=True)
class Captured:
    channel: Channel
    where: str
    order: int
    mono_s: float
    watermark: int
    text: str
    format: Format


@dataclass(slots=True)
class Recorder:
    """Every capture of one run, in the order received (thread-safe)."""

    watermark: Watermark
    started_s: float = field(default_factory=time.monotonic)
    items: list[Captured] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _counter: itertools.count[int] = field(default_factory=itertools.count)

    def record(self, channel: Channel, where: str, text: str, format_: Format) -> None:
        mark = self.watermark()  # after the text arrived: it was produced no later than this
        with self._lock:
            self.items.append(
                Captured(channel, where, next(self._counter), time.monotonic(), mark, text, format_)
            )


class LogCapture:
    """A text stream for structlog's PrintLogger: each whole line recorded as it is written."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self._partial = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._partial += text
            *lines, self._partial = self._partial.split("\n")
        for line in lines:
            if line.strip():
                self.recorder.record("log", "log", line, "json")
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False


def login(base_url: str) -> httpx.Client:
    client = httpx.Client(base_url=base_url, timeout=10.0, trust_env=False)
    client.get("/login")
    token = client.cookies.get("ft_login_csrf") or ""
    answer = client.post("/login", data={"user": VIEWER[0], "password": VIEWER[1], "csrf_token": token})
    assert answer.status_code in (200, 303), answer.text
    session = client.get("/api/session")
    assert session.status_code == 200, session.text
    assert session.json()["role"] == "viewer"
    return client


@dataclass(frozen=True, slots=True)
class Route:
    path: str
    params: frozenset[str]  # query parameters it declares
    path_params: frozenset[str]


def get_routes(app: FastAPI) -> list[Route]:
    """Every GET route of the app (mounted static files aside: they hold no table data)."""
    routes: list[Route] = []
    for route in (context.original_route for context in iter_route_contexts(app.routes)):  # routers' too
        if isinstance(route, APIRoute) and "GET" in (route.methods or set()):
            routes.append(
                Route(
                    route.path,
                    frozenset(param.name for param in route.dependant.query_params),
                    frozenset(param.name for param in route.dependant.path_params),
                )
            )
    return routes


class Viewer:
    """A viewer at the panel while the table plays (the module docstring); ``finish`` makes one last
    full pass of every route, runs the commands once more, and stops the threads."""

    def __init__(
        self,
        base_url: str,
        app: FastAPI,
        journal_path: Path,
        recorder: Recorder,
        *,
        cli_checkpoint: Callable[[], str | None],
        max_cli_checkpoints: int = 3,
    ) -> None:
        self.base_url = base_url
        self.journal_path = journal_path
        self.recorder = recorder
        self.routes = get_routes(app)
        self.cli_checkpoint = cli_checkpoint
        self.max_cli_checkpoints = max_cli_checkpoints
        self.skipped: list[str] = []
        self.failed: list[str] = []  # requests the panel did not answer, or answered 5xx
        self.passes = 0
        self.cli_runs = 0
        self.sse_seq = 0  # the last event id (journal seq) the SSE reader has received
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._client = login(base_url)
        self._sse_client = login(base_url)
        self._cli = CliBatch(journal_path)
        self._threads = [
            threading.Thread(target=self._guard(self._read_events), name="viewer-sse", daemon=True),
            threading.Thread(target=self._guard(self._poll), name="viewer-poll", daemon=True),
            threading.Thread(target=self._guard(self._commands), name="viewer-cli", daemon=True),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def _guard(self, body: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                body()
            except Exception as error:  # reported by finish(): a viewer that died saw nothing
                self.errors.append(f"{threading.current_thread().name}: {type(error).__name__}: {error}")

        return run

    # --- SSE -----------------------------------------------------------------------------------
    def _read_events(self) -> None:
        last_id = "0"
        while not self._stop.is_set():
            try:
                with self._sse_client.stream(
                    "GET", SSE_PATH, params={"since": last_id}, timeout=httpx.Timeout(10.0, read=1.0)
                ) as response:
                    assert response.status_code == 200, response.status_code
                    data: list[str] = []
                    for line in response.iter_lines():
                        if line.startswith("id: "):
                            last_id = line[4:]
                            self.sse_seq = max(self.sse_seq, int(last_id))
                        elif line.startswith("data: "):
                            data.append(line[6:])
                        elif line == "" and data:
                            self.recorder.record("sse", SSE_PATH, "\n".join(data), "json")
                            data = []
                        if self._stop.is_set():
                            return
            except (httpx.ReadTimeout, httpx.RemoteProtocolError, httpx.ReadError):
                continue  # reconnect after the last event seen
            except httpx.ConnectError:
                return  # the panel has stopped

    # --- routes and pages ----------------------------------------------------------------------
    def _targets(self) -> list[tuple[str, dict[str, str]]]:
        targets: list[tuple[str, dict[str, str]]] = []
        round_ids: list[str] | None = None
        for route in self.routes:
            if route.path == SSE_PATH:
                continue
            if route.path_params:
                if route.path_params != {"round_id"}:
                    self.skipped.append(route.path)
                    continue
                if round_ids is None:
                    round_ids = self._listed_rounds()
                targets.extend((route.path.replace("{round_id}", rid), {}) for rid in round_ids)
                continue
            targets.append((route.path, {}))
            for variant in QUERY_VARIANTS.get(route.path, []):
                if set(variant) <= route.params:
                    targets.append((route.path, variant))
        return targets

    def _get(self, path: str, params: dict[str, str]) -> httpx.Response:
        """One GET; once more on a new connection if the kept-alive one was closed under it (after a
        500 the server drops the connection the next request would have reused)."""
        try:
            return self._client.get(path, params=params, follow_redirects=False)
        except httpx.TransportError:
            return self._client.get(path, params=params, follow_redirects=False)

    def _listed_rounds(self) -> list[str]:
        try:
            listed = self._client.get("/api/recall", params={"last": "50"})
        except httpx.TransportError as error:
            self.failed.append(f"GET /api/recall?last=50: {type(error).__name__}: {error}")
            return []
        return [record["round_id"] for record in listed.json()] if listed.is_success else []

    def _poll_once(self) -> None:
        for path, params in self._targets():
            where = path + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")
            try:
                response = self._get(path, params)
            except httpx.TransportError as error:  # the panel failed this request (its log says why)
                self.failed.append(f"GET {where}: {type(error).__name__}: {error}")
                continue
            if response.status_code >= 500:
                self.failed.append(f"GET {where}: {response.status_code}")
            content_type = response.headers.get("content-type", "")
            format_: Format = (
                "json" if "json" in content_type else "html" if "html" in content_type else "text"
            )
            self.recorder.record("route", f"GET {where} -> {response.status_code}", response.text, format_)
        self.passes += 1

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._poll_once()

    # --- the commands ----------------------------------------------------------------------------
    def _commands(self) -> None:
        done: set[str] = set()
        while not self._stop.is_set() and self.cli_runs < self.max_cli_checkpoints:
            round_id = self.cli_checkpoint()
            if round_id is not None and round_id not in done:
                done.add(round_id)
                self._run_cli(round_id)
            self._stop.wait(0.01)

    def _run_cli(self, round_id: str | None) -> None:
        for command, output, format_ in self._cli.run(round_id):
            self.recorder.record("cli", command, output, format_)
        self.cli_runs += 1

    def finish(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self._poll_once()  # the last pass, while the panel still serves
        self._run_cli(None)
        self._client.close()
        self._sse_client.close()
        self._cli.close()
        alive = [thread.name for thread in self._threads if thread.is_alive()]
        assert not alive, f"viewer threads did not stop: {alive}"
        assert not self.errors, f"the viewer failed: {self.errors}"


class CliBatch:
    """`flushtable journal show/tail` and `recall` (text and --json), run through the command line's
    own entry point (controller.cli.main) in one child process started ahead, so a batch runs within
    milliseconds of being asked (a new process per command takes most of a second)."""

    def __init__(self, journal_path: Path) -> None:
        self.journal_path = journal_path
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.privacy.cli_batch", str(journal_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )

    def run(self, round_id: str | None) -> list[tuple[str, str, Format]]:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write(json.dumps({"round_id": round_id}) + "\n")
        self._process.stdin.flush()
        answer = self._process.stdout.readline()
        assert answer, "the command batch process exited"
        results: list[tuple[str, str, Format]] = []
        for item in json.loads(answer):
            # A refusal is an answer too (recall of a round in play): its message is checked as well.
            results.append((f"{item['command']} (exit {item['status']})", item["stdout"], item["format"]))
            if item["stderr"]:
                results.append((f"{item['command']} (standard error)", item["stderr"], "text"))
        return results

    def close(self) -> None:
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


def parse_json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
