"""Every channel a person or another system reads without ``--private``, read in process over a real
journal file, and the words of each private part that may not be shown yet.

The channels (each read as the text it would emit, with the journal's last seq as its watermark):

- the panel: its FastAPI app over the journal (``JournalPanelBackend``, read-only, as ``flushtable
  panel`` serves it) through Starlette's TestClient, logged in as a viewer and as a supervisor: the
  routes in ``STEP_ROUTES`` (and ``PAGE_ROUTES`` on the steps that read pages), or every GET route
  (pages and JSON, round pages for every round the API lists) in a full pass;
- its SSE stream: what a subscriber connected since the panel started receives live (each entry
  passed through the gate when the panel folds it in), and what a reconnecting browser is replayed
  (the backend's own ``public_entry`` for each entry since the seq it names, as ``subscribe`` sends it);
- the commands through ``controller.cli.main``: ``journal show`` / ``tail`` (text and JSON),
  ``recall`` (text and JSON, every round), ``meters`` (text and JSON);
- the log lines (structlog's JSON lines, debug level: every append logs its public part);
- what the engine sends the dealer's display and the alerts (``ShowText``, ``Alert``, ``Refused``);
- the uplink's outbox: every message the uplink would publish to the floor (``Outbox.feed``).
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.from_thread
from fastapi.testclient import TestClient

from controller.cli import main as flushtable
from controller.journal import entries as e
from controller.journal.store import Journal, JournalEntry
from controller.panel.app import create_panel_app
from controller.panel.auth import UserStore
from controller.panel.backend import JournalPanelBackend, _Subscriber
from controller.uplink.outbox import Outbox
from tests.privacy.capture import Format, get_routes
from tests.privacy.cli_batch import run_batch

VIEWER = ("vera", "viewer-pass-prop-1")
SUPERVISOR = ("sam", "supervisor-pass-prop-1")
MANAGER = ("max", "manager-pass-prop-1")  # so the panel makes no bootstrap user
SSE_PATH = "/api/events"
STEP_ROUTES = (
    "/api/table",
    "/api/journal?limit=100",
    "/api/recall?last=3",
    "/api/devices",
    "/api/alerts?include_cleared=true",
)
# The pages (HTML) cost more: read every PAGE_EVERY_STEPS steps and at the end of each example.
PAGE_ROUTES = ("/", "/log?limit=1000", "/alerts?show=all", "/api/journal?limit=1000", "/api/recall?last=50")
# The private fields that are words about a hand or a device (not cards): never shown before the reveal.
_WORD_FIELDS = ("limit_detail", "refusal_detail", "device_detail")
MIN_WORDS_CHARS = 12
_TAG_RE = re.compile(r"<[^>]*>")


def make_users(directory: Path) -> Path:
    """The panel's users (scrypt hashes: made once a session, copied to each run)."""
    path = directory / "panel-users.json"
    store = UserStore(path)
    store.add(VIEWER[0], "viewer", VIEWER[1])
    store.add(SUPERVISOR[0], "supervisor", SUPERVISOR[1])
    store.add(MANAGER[0], "manager", MANAGER[1])
    return path


@dataclass(frozen=True, slots=True)
class Text:
    channel: str
    where: str
    text: str
    format: Format
    watermark: int


# --- private words: the oracle for "no word about it" -------------------------------------------
@dataclass(frozen=True, slots=True)
class PrivateWords:
    """The words of one entry's private part that are about a hand or a device's report."""

    seq: int
    round_id: str | None
    words: tuple[str, ...]
    positions: frozenset[int]  # the seats (positions) the words are about


def _telling(value: object) -> bool:
    """Words that say something of their own (a phrase, not a fault's one-word kind such as
    "misread", which the public part names anyway)."""
    return isinstance(value, str) and len(value.strip()) >= MIN_WORDS_CHARS and " " in value.strip()


def private_words(entry: JournalEntry) -> PrivateWords | None:
    """The words of a trusted entry's private part (read with ``entry.payload``: both parts)."""
    typed = entry.entry
    part = typed.private_part()
    if part is None:
        return None
    words: list[str] = []
    for name in _WORD_FIELDS:
        value = getattr(part, name, None)
        if _telling(value):
            words.append(str(value))
    if isinstance(part, e.ReasonDetail) and _telling(part.message):
        public_reason = getattr(typed, "reason", None)
        if part.message != getattr(public_reason, "message", None):
            words.append(str(part.message))
    # Words the entry's public part says too are public (a fault's public message may say "index 0
    # reported twice" where its private one says the same of a position): not a leak.
    public_text = json.dumps(entry.public)
    words = [word for word in words if word not in public_text]
    if not words:
        return None
    positions = set(part.positions())
    seat = getattr(typed, "seat", None)
    if isinstance(typed, e.DecisionRefused) and isinstance(seat, int):
        positions.add(seat)
    return PrivateWords(entry.seq, entry.round_id, tuple(words), frozenset(positions))


@dataclass(slots=True)
class RoundFacts:
    """An independent reading of one round (not the reducer's): when it was revealed, whether it
    died, its dead seats."""

    reveal_seq: int | None = None
    closing: str | None = None
    dead_seats: set[int] = field(default_factory=set)


def round_facts(entries: list[JournalEntry]) -> dict[str, RoundFacts]:
    facts: dict[str, RoundFacts] = {}
    for entry in entries:
        if entry.round_id is None:
            continue
        fact = facts.setdefault(entry.round_id, RoundFacts())
        if entry.kind == "state_changed" and entry.payload.get("to") == "reveal" and fact.closing is None:
            fact.reveal_seq = fact.reveal_seq or entry.seq
        elif entry.kind == "dead_hand" and entry.payload.get("seat") is not None:
            fact.dead_seats.add(int(entry.payload["seat"]))
        elif entry.kind in ("round_settled", "round_dead", "round_voided"):
            fact.closing = entry.kind
            if entry.kind == "round_settled" and fact.reveal_seq is None:
                fact.reveal_seq = entry.seq
    return facts


def hidden_words(entries: list[JournalEntry], watermark: int) -> list[tuple[str, PrivateWords]]:
    """Each private word not shown at ``watermark``: its round not revealed by then (or dead), or
    about a dead seat, or outside any round; unless a part shown by then says the same words."""
    facts = round_facts(entries)
    hidden: list[tuple[str, PrivateWords]] = []
    shown_words: set[str] = set()
    for entry in entries:
        if entry.seq > watermark:
            break
        words = private_words(entry)
        if words is None:
            continue
        fact = facts.get(entry.round_id or "")
        shown = (
            fact is not None
            and fact.closing != "round_dead"
            and fact.reveal_seq is not None
            and fact.reveal_seq <= watermark
            and not (words.positions & fact.dead_seats)
        )
        if not shown:
            hidden.extend((word, words) for word in words.words)
        else:
            shown_words.update(words.words)
    # The same words shown by a revealed part explain a text that has them (as for cards: matching.py).
    return [(word, owner) for word, owner in hidden if word not in shown_words]


def strings_of(text: Text) -> Iterator[str]:
    """The text as a reader reads it: JSON's string values decoded, HTML rendered (entities too)."""
    if text.format == "json":
        try:
            yield from _json_strings(json.loads(text.text))
        except ValueError:
            yield text.text
    elif text.format == "jsonlines":
        for line in text.text.splitlines():
            if line.strip():
                yield from _json_strings(json.loads(line))
    elif text.format == "html":
        yield html.unescape(text.text)
        yield html.unescape(_TAG_RE.sub("", text.text))
    else:
        yield text.text


def _json_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
        with contextlib.suppress(ValueError):  # JSON in a string (a private_text, a log's payload)
            inner = json.loads(value)
            if isinstance(inner, dict | list):
                yield from _json_strings(inner)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)


# --- the readers ---------------------------------------------------------------------------------
class LogLines:
    """The stream structlog writes JSON lines to: whole lines kept until taken."""

    def __init__(self) -> None:
        self._partial = ""
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        self._partial += text
        *lines, self._partial = self._partial.split("\n")
        self.lines.extend(line for line in lines if line.strip())
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def take(self) -> list[str]:
        taken, self.lines = self.lines, []
        return taken


class Panel:
    """The panel's app over the journal, a viewer and a supervisor logged in, an SSE subscriber."""

    def __init__(self, journal: Journal, users_file: Path) -> None:
        self.backend = JournalPanelBackend(journal, read_only=True)
        self.app = create_panel_app(self.backend, users=UserStore(users_file))
        self.routes = get_routes(self.app)
        self._users = {"viewer": VIEWER, "supervisor": SUPERVISOR}
        self.clients: dict[str, TestClient] = {}  # logged in when first used (scrypt is slow)
        # One event loop in a thread serves every request of the panel's clients, as a server's one loop
        # does: a TestClient not entered as a context manager (which would run the app's lifespan: the
        # backend's own poller) starts a thread and a loop for each request, milliseconds each.
        self._portals = contextlib.ExitStack()
        self._portal = self._portals.enter_context(anyio.from_thread.start_blocking_portal())
        # The live stream: a subscriber since the panel started, fed as the backend folds entries in.
        self.subscriber = _Subscriber()
        self.backend._subscribers.add(self.subscriber)

    def _login(self, name: str, password: str) -> TestClient:
        client = TestClient(self.app, base_url="http://127.0.0.1")
        client.portal = self._portal
        client.get("/login")
        token = client.cookies.get("ft_login_csrf") or ""
        answer = client.post(
            "/login", data={"user": name, "password": password, "csrf_token": token}, follow_redirects=False
        )
        assert answer.status_code in (200, 303), answer.text
        return client

    def live_frames(self) -> list[dict[str, Any]]:
        self.backend.refresh()
        frames: list[dict[str, Any]] = []
        while not self.subscriber.queue.empty():
            item = self.subscriber.queue.get_nowait()
            if item is not None:
                frames.append(item)
        return frames

    def replay(self, journal: Journal, since_seq: int = 0) -> list[dict[str, Any]]:
        """What ``GET /api/events?since=N`` replays now (the backend's subscribe, entry by entry)."""
        self.backend.refresh()
        return [self.backend._view.public_entry(entry) for entry in journal.entries(since_seq=since_seq)]

    def get(self, role: str, path: str) -> tuple[int, str, Format]:
        client = self.clients.get(role)
        if client is None:
            client = self.clients[role] = self._login(*self._users[role])
        response = client.get(path, follow_redirects=False)
        kind = response.headers.get("content-type", "")
        format_: Format = "json" if "json" in kind else "html" if "html" in kind else "text"
        return response.status_code, response.text, format_

    def targets(self) -> list[str]:
        """Every GET route, round pages for every round the API lists (the SSE stream aside)."""
        _, listed, _ = self.get("viewer", "/api/recall?last=50")
        round_ids = [record["round_id"] for record in json.loads(listed)] if listed.startswith("[") else []
        paths: list[str] = []
        for route in self.routes:
            if route.path == SSE_PATH:
                continue
            if route.path_params:
                if route.path_params == {"round_id"}:
                    paths += [route.path.replace("{round_id}", rid) for rid in round_ids]
                continue
            paths.append(route.path)
        return [*paths, *STEP_ROUTES, *PAGE_ROUTES]

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
        self._portals.close()


def command_texts(
    journal_path: Path, round_ids: list[str], watermark: int, *, text: bool = True
) -> list[Text]:
    """`journal show/tail`, `recall` (``round_ids``: each round's too) and `meters`, as the CLI prints
    them; without ``text`` only the JSON forms of the recent entries and rounds (`journal tail -n 60
    --json`, `recall --last 3 --json`, `meters --json`): a step's cheap read."""
    texts: list[Text] = []
    if text:
        items = run_batch(str(journal_path), None)
    else:
        items = []
        for arguments in (["journal", "tail", "-n", "60", "--json"], ["recall", "--last", "3", "--json"]):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = flushtable([*arguments, "--journal", str(journal_path)])
            items.append(
                {
                    "command": "flushtable " + " ".join(arguments),
                    "status": status,
                    "stdout": out.getvalue(),
                    "stderr": err.getvalue(),
                    "format": "jsonlines" if "tail" in arguments else "json",
                }
            )
    for round_id in round_ids:
        items += run_batch(str(journal_path), round_id, json_only=not text, round_only=True)
    for arguments, format_ in ([(["meters"], "text")] if text else []) + [(["meters", "--json"], "json")]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = flushtable([*arguments, "--journal", str(journal_path)])
        items.append(
            {
                "command": "flushtable " + " ".join(arguments),
                "status": status,
                "stdout": out.getvalue(),
                "stderr": err.getvalue(),
                "format": format_,
            }
        )
    for item in items:
        texts.append(Text("cli", item["command"], item["stdout"], item["format"], watermark))
        if item["stderr"]:
            texts.append(Text("cli", item["command"] + " (stderr)", item["stderr"], "text", watermark))
    return texts


class Uplink:
    """The uplink's outbox over the journal: every message it would publish, in order."""

    def __init__(self, table_id: str) -> None:
        self.outbox = Outbox(table_id)
        self.published: list[tuple[int, bytes, bool]] = []  # (watermark, body, private)

    def follow(self, journal: Journal) -> list[Text]:
        texts: list[Text] = []
        for entry in journal.entries(since_seq=self.outbox.last_seq):
            for message in self.outbox.feed(entry):
                self.published.append((entry.seq, message.body, message.private))
                texts.append(
                    Text("uplink", f"publish {message.msg_id}", message.body.decode(), "json", entry.seq)
                )
        return texts
