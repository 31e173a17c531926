"""The real daemon (controller/daemon.py) on its simulated devices with its panel on 127.0.0.1 (a port
the system picks), its JSON logs at debug level captured, and a viewer watching (capture.py); then every
capture checked against the journal's cards (rounds.py, matching.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import shutil
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from controller.config import TableConfig
from controller.daemon import TableDaemon
from controller.journal.store import Journal
from controller.logs import configure_logging
from controller.panel.auth import UserStore
from controller.simulation.table import SimulatedTable
from tests.daemon.harness import simulated_table
from tests.device_harness.leaks import run_async
from tests.privacy.capture import MANAGER, VIEWER, Captured, LogCapture, Recorder, Viewer, Watermark
from tests.privacy.matching import Leak, html_mentions, json_mentions, leaks_in, text_mentions
from tests.privacy.rounds import DealtCard, RoundCards, TableCards, read_table_cards

PANEL_READY_TIMEOUT_S = 15.0
POLL_S = 0.01
SSE_CATCH_UP_TIMEOUT_S = 30.0  # the viewer's live stream catches up with the journal


def make_users_file(directory: Path) -> Path:
    """The panel's user file with a viewer and a manager (scrypt: made once, copied to each run)."""
    path = directory / "panel-users.json"
    store = UserStore(path)
    store.add(VIEWER[0], "viewer", VIEWER[1])
    store.add(MANAGER[0], "manager", MANAGER[1])
    return path


@dataclass(slots=True)
class TableRun:
    name: str
    journal_path: Path
    captures: list[Captured]
    routes: list[str]
    skipped_routes: list[str]
    failed_requests: list[str]
    passes: int
    cli_runs: int
    seconds: float


class _Out:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None


@contextlib.contextmanager
def _debug_logs(stream: LogCapture) -> Iterator[None]:
    saved = structlog.get_config()
    configure_logging(level="debug", json_lines=True, stream=stream)  # type: ignore[arg-type]
    try:
        yield
    finally:
        structlog.configure(**saved)


class DealCheckpoint:
    """The round in play once its deal is complete and before it closes, read from the journal (in
    the viewer's command thread): when the journal and recall commands are worth running."""

    def __init__(self, journal_path: Path) -> None:
        self.journal_path = journal_path
        self._journal: Journal | None = None
        self._seq = 0
        self._open: set[str] = set()
        self._dealt: list[str] = []

    def __call__(self) -> str | None:
        if self._journal is None:
            if not self.journal_path.exists():
                return None
            self._journal = Journal.open_existing(self.journal_path)
        for entry in self._journal.entries(since_seq=self._seq):
            self._seq = entry.seq
            if entry.round_id is None:
                continue
            if entry.kind == "round_started":
                self._open.add(entry.round_id)
            elif entry.kind in ("round_settled", "round_dead", "round_voided"):
                self._open.discard(entry.round_id)
            elif entry.kind == "state_changed" and entry.payload.get("from") == "dealing":
                self._dealt.append(entry.round_id)
        for round_id in reversed(self._dealt):
            if round_id in self._open:
                return round_id
        return None

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()


def play_table(
    name: str,
    directory: Path,
    users_file: Path,
    config: TableConfig,
    options: dict[str, Any],
    *,
    done: Callable[[TableDaemon], bool],
    alongside: Callable[[SimulatedTable], Coroutine[Any, Any, None]] | None = None,
    timeout_s: float = 60.0,
) -> TableRun:
    """Run the daemon (in the simulation harness, with ``options``: tests/daemon/harness.py's
    simulated_table) until ``done(daemon)`` (checked every POLL_S, bounded by ``timeout_s``) with a
    viewer at its panel (and ``alongside(table)`` as a task once the table runs: a fault injector),
    then let the viewer make its last pass and stop the daemon."""
    journal_path = directory / "journal.sqlite"
    shutil.copy(users_file, directory / "panel-users.json")
    recorder = Recorder(Watermark(journal_path))
    options = {**options, "panel_bind": ("127.0.0.1", 0), "print_rounds": False}
    state: dict[str, Any] = {}

    async def main() -> None:
        table = simulated_table(config, journal_path, _Out(), **options)
        daemon = table.daemon
        running = asyncio.get_running_loop().create_task(table.run(), name="daemon")
        helper: asyncio.Task[None] | None = None
        checkpoint = DealCheckpoint(journal_path)
        try:
            deadline = time.monotonic() + PANEL_READY_TIMEOUT_S
            while daemon.panel is None or not daemon.running:
                assert not running.done(), "the daemon stopped before its panel started"
                assert time.monotonic() < deadline, "the panel never started"
                await asyncio.sleep(POLL_S)
            if alongside is not None:
                helper = asyncio.get_running_loop().create_task(alongside(table), name="alongside")
            viewer = await asyncio.to_thread(
                Viewer,
                daemon.panel.url,
                daemon.panel.server.app,
                journal_path,
                recorder,
                cli_checkpoint=checkpoint,
            )
            state["viewer"] = viewer
            viewer.start()
            deadline = time.monotonic() + timeout_s
            while not done(daemon):
                assert not running.done(), "the daemon stopped by itself"
                assert time.monotonic() < deadline, f"{name}: not done in {timeout_s} s"
                await asyncio.sleep(POLL_S)
            # The live stream has delivered everything journaled so far (on a loaded machine its
            # reader may not even have connected yet when a short scenario is done): bounded.
            last = daemon.journal.last_entry()
            head_seq = 0 if last is None else last.seq
            async with asyncio.timeout(SSE_CATCH_UP_TIMEOUT_S):
                while viewer.sse_seq < head_seq:
                    await asyncio.sleep(POLL_S)
            await asyncio.to_thread(viewer.finish)
        finally:
            if helper is not None:
                helper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await helper
            daemon.request_stop()
            await running
            checkpoint.close()

    started_s = time.monotonic()
    with _debug_logs(LogCapture(recorder)):
        run_async(main, timeout_s=timeout_s + 60.0)
    viewer = state["viewer"]
    return TableRun(
        name,
        journal_path,
        list(recorder.items),
        [route.path for route in viewer.routes],
        viewer.skipped,
        viewer.failed,
        viewer.passes,
        viewer.cli_runs,
        time.monotonic() - started_s,
    )


# --- the check -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Finding:
    capture: Captured
    leak: Leak


def find_leaks(run: TableRun, table: TableCards | None = None) -> list[Finding]:
    """Every leak in every capture of the run (matching.py's rules)."""
    table = table or read_table_cards(run.journal_path)
    known = list(table.rounds)
    findings: list[Finding] = []
    for capture in run.captures:
        mentions = list(_mentions(capture, known))
        for leak in leaks_in(iter(mentions), table, capture.watermark):
            findings.append(Finding(capture, leak))
    return findings


def _mentions(capture: Captured, known: list[str]) -> Iterator[Any]:
    text = capture.text
    if capture.format == "json":
        try:
            value = json.loads(text)
        except ValueError:
            yield from text_mentions(text, None)
            return
        yield from json_mentions(value, None, known)
    elif capture.format == "jsonlines":
        for line in text.splitlines():
            if line.strip():
                yield from json_mentions(json.loads(line), None, known)
    elif capture.format == "html":
        yield from html_mentions(text)
    elif capture.format == "journal_text":
        # `journal show` / `tail`: one entry a line, "seq time round source kind payload".
        for line in text.splitlines():
            fields = line.split(None, 3)
            round_id = fields[2] if len(fields) > 2 and fields[2] in known else None
            yield from text_mentions(line, round_id)
    else:
        yield from text_mentions(text, None)


def describe(run: TableRun, findings: list[Finding], table: TableCards, limit: int = 30) -> str:
    """What leaked, where and when: by channel and place, the cards leaked in each encoding and the
    first time; then the earliest example of each (channel, place, encoding)."""
    if not findings:
        return f"{run.name}: no leak"
    start_s = min(capture.mono_s for capture in run.captures)
    texts = {finding.capture.order for finding in findings}
    lines = [
        f"{run.name}: cards shown before their reveal: {len(findings)} findings in {len(texts)} of "
        f"{len(run.captures)} texts captured (t: seconds into the run; seq<=N: the journal's last "
        "entry when the text was received)"
    ]
    if run.failed_requests:
        lines.append(
            f"  (and the panel failed {len(run.failed_requests)} requests: {run.failed_requests[:3]})"
        )
    groups: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        groups.setdefault((finding.capture.channel, _place(finding.capture)), []).append(finding)
    for (channel, place), group in sorted(groups.items()):
        by_encoding: dict[str, set[str]] = {}
        for finding in group:
            codes = by_encoding.setdefault(finding.leak.mention.encoding, set())
            codes.update(card.code for card in finding.leak.cards)
        first = min(group, key=lambda finding: finding.capture.order).capture
        leaked = "; ".join(
            f"{encoding}: {len(codes)} cards ({_some(sorted(codes))})"
            for encoding, codes in sorted(by_encoding.items())
        )
        lines.append(
            f"  {channel:<5} {place:<52} {leaked}; first at t={first.mono_s - start_s:.2f}s "
            f"seq<={first.watermark}"
        )
    lines.append("  the first example of each:")
    examples: dict[tuple[str, str, str], Finding] = {}
    for finding in sorted(findings, key=lambda finding: finding.capture.order):
        key = (finding.capture.channel, _place(finding.capture), finding.leak.mention.encoding)
        examples.setdefault(key, finding)
    for finding in sorted(examples.values(), key=lambda finding: finding.capture.order)[:limit]:
        capture, leak = finding.capture, finding.leak
        round_ = table.rounds[leak.cards[0].round_id]
        reveal = _reveal_text(round_, leak.cards[0])
        names = ", ".join(card.name for card in leak.cards[:3])
        lines.append(
            f"  - {capture.channel} {capture.where} t={capture.mono_s - start_s:.2f}s "
            f"seq<={capture.watermark}: "
            f"{leak.mention.encoding} {leak.mention.value!r} = {names} of {round_.round_id} ({reveal}) "
            f"in {leak.mention.snippet[:150]!r}"
        )
    return "\n".join(lines)


def _reveal_text(round_: RoundCards, card: DealtCard) -> str:
    if card.public_seq is not None:
        return f"shown from seq {card.public_seq}"
    if card.position in round_.dead_positions:
        return f"never shown: position {card.position}'s hand is dead"
    return f"never shown: {round_.closing or 'the round was left open'}"


def _some(codes: list[str], most: int = 6) -> str:
    return ", ".join(codes[:most]) + (", …" if len(codes) > most else "")


def _place(capture: Captured) -> str:
    """Where a text was shown, its query and status left out (``GET /api/alerts``, ``flushtable recall``)."""
    if capture.channel == "log":
        return "JSON log lines"
    if capture.channel == "route":
        return capture.where.split(" -> ")[0].split("?")[0]
    if capture.channel == "cli":
        return capture.where.replace(" --journal", "").split(" (")[0]
    return capture.where


# --- the runs --------------------------------------------------------------------------------------
def scenario_done(stop_on_held: bool) -> Callable[[TableDaemon], bool]:
    def done(daemon: TableDaemon) -> bool:
        return daemon.summary.rounds_closed >= 1 or (stop_on_held and daemon.engine.view().held)

    return done


async def soak_faults(table: SimulatedTable, *, seed: int, fault_rate: float) -> None:
    """bench/soak_table.py's fault injector on this table (loaded as tests/daemon/test_soak.py does)."""
    from tests.daemon.test_soak import load_soak

    injector = load_soak().Injector(table, random.Random(seed), fault_rate)
    await injector.run()
