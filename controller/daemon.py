"""The table daemon: `flushtable run` on a table's real devices. One asyncio process around the
synchronous table engine, and one queue in front of it.

    drivers (device events) ─┐
    panel (operator actions) ├─> one queue ─> TableEngine.handle(item, now_s) ─> outputs
    journal watch, integrity ┘      (in arrival order, one at a time, on the loop)
    outputs: JournalRecord -> the group commit (journal first)   commands -> per-device send queues
             Alert/Refused -> log (the panel reads the journal)  an operator's action -> its answer

Nothing calls the engine but the queue's loop. Every call's journal records are committed before any
of its commands goes out, or its answer is given (controller/journal/group_commit.py), so the journal
always holds a decision before the table acts on it; a crash between the two leaves an open round,
which recovery voids at the next start with every wager returned. A commit holding a round's close is
also anchored (the anchor beside the journal, durably) before the round is printed, shown or paid, so
a settlement anyone acted on cannot vanish from the journal without the next start refusing it
(controller/daemon_journal.py).

``TableDaemon`` owns the one queue, its loop and the run/shutdown lifecycle, and composes three parts:
the journal side (controller/daemon_journal.py: the group commit, the anchor, the journal's failure),
the device side (controller/daemon_devices.py: drivers, send queues, health) and the watches
(controller/daemon_watches.py: clearings from other processes, the integrity check, systemd's watchdog);
what a commit's outputs lead to once journaled (controller/daemon_outputs.py: commands sent, rounds
counted), the uplink and the floor's software check (controller/daemon_uplink.py) and the panel's start
(controller/daemon_panel.py) are modules of their own, each given what it acts on; how a Ctrl-C or
SIGTERM stops it (what it says, how long it waits, the journal's open it cancels) is
controller/daemon_stop.py.

Simulation wraps this daemon from outside (controller/simulation/): simulated devices are served by
the harness and reached through ``DeviceLinks``; simulated people act through ``submit``/``perform``
like any other caller; an accelerated clock is a ``TableClock`` with a scale. Nothing here knows them.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import structlog

from controller import systemd
from controller.config import TableConfig
from controller.daemon_controls import DaemonControls, LoopWork
from controller.daemon_devices import DaemonDevices, DeviceLinks, DeviceNoise
from controller.daemon_journal import DaemonJournal
from controller.daemon_link import DaemonProgressiveLink
from controller.daemon_outputs import CommittedOutputs
from controller.daemon_panel import QueuedTableActions, start_table_panel
from controller.daemon_seals import SealWaitAlerts
from controller.daemon_start import (
    RunOptions,
    RunSummary,
    TableClock,
    daemon_record,
    engine_config_for,
    log_loop_exception,
    software_record,
    start_record,
)
from controller.daemon_stop import (
    STOP_SIGNALS,
    StopRequest,
    open_journal_unless_cancelled,
    remove_stop_signal_handlers,
)
from controller.daemon_uplink import uplink_task
from controller.daemon_watches import DaemonWatches
from controller.engine import TableEngine
from controller.engine.actions import AdoptClear, OperatorAction, RaiseAlert, Tick
from controller.engine.outputs import Output
from controller.engine.state import RecoveredState
from controller.errors import UserError
from controller.journal import entries
from controller.journal.recovery import RecoveryReport, recover
from controller.journal.store import Journal, JournalError
from controller.logs import bind_table
from controller.one_queue import OneReaderQueue
from drivers.events import DomainEvent, SecurityEvent
from drivers.supervisor import DeviceDriver, DeviceHealth

log = structlog.get_logger("flushtable.daemon")

TICK_INTERVAL_S = 0.1  # how often the decision clock is checked (table-clock timeouts are seconds)
MIN_TICK_INTERVAL_S = 0.005  # the most often it is checked on an accelerated clock
PANEL_STOP_S = 0.5  # shutdown: the longest the panel's server may take to stop (its streams end first)
BURST_ITEMS = 64  # the most queued items handled before a commit that is due is made
DRAIN_TIMEOUT_S = 10.0  # shutdown: the longest the queue's last items may take to be handled


QueueItem = DomainEvent | OperatorAction | LoopWork
ActionListener = Callable[[object, str], None]  # (the item just handled, the engine's state before it)


@dataclass(slots=True)
class _Waited:
    """An item whose caller awaits the outputs of its handling, once they are committed."""

    item: QueueItem
    answer: asyncio.Future[list[Output]]


class TableDaemon:
    """One table: the one queue in front of its engine, and the run/shutdown lifecycle around its
    journal (``DaemonJournal``), devices (``DaemonDevices``), watches (``DaemonWatches``) and panel."""

    def __init__(  # noqa: PLR0913 - keyword-only injection points (clock, links, companions) the tests and the simulation set
        self,
        config: TableConfig,
        options: RunOptions,
        *,
        out: TextIO | None = None,
        clock: TableClock | None = None,
        links: DeviceLinks | None = None,
        companions: Sequence[Callable[[TableDaemon], Coroutine[Any, Any, None]]] = (),
        on_ready: Callable[[TableDaemon], None] | None = None,
        commit_delay_s: float | None = None,
        noise_clock: Callable[[], float] | None = None,
    ) -> None:
        """``clock``: the table clock (default: the wall clock). ``links``: devices served elsewhere
        (the simulation harness). ``companions``: tasks started once the table runs and stopped with
        it, each given the daemon (simulated people, a scenario); if one fails the table stops.
        ``on_ready``: called once running. ``commit_delay_s``: overrides [journal] commit_delay_ms
        (benchmarks). ``noise_clock``: the noise budget's clock (tests; default monotonic)."""
        self.config = config
        self.options = options
        self.out = out if out is not None else sys.stdout
        self.clock = clock or TableClock()
        self.links = links or DeviceLinks()
        self._companions = list(companions)
        self._on_ready = on_ready
        self.summary = RunSummary()
        self.events: OneReaderQueue[QueueItem | _Waited] = OneReaderQueue()  # the engine loop reads it
        self.panel: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        # Ctrl-C / SIGTERM: the round in play may take up to the decision timeout (controller/daemon_stop.py).
        self.stop_request = StopRequest(config.timeouts.decision_s / max(self.clock.scale, 1.0))
        self._stop = self.stop_request.asked
        self._stopping = False
        self._engine: TableEngine | None = None
        self._listeners: list[ActionListener] = []
        self._event_received_mono_s: dict[int, float] = {}
        delay_s = commit_delay_s if commit_delay_s is not None else config.journal_commit_delay_ms / 1000
        journal_path = options.journal_path or config.journal_path
        self.devices = DaemonDevices()
        self.watches = DaemonWatches(
            journal_path,
            journal=lambda: self.journal,
            latched=lambda: self.engine.view().latched,
            submit=self.submit,
            perform=self.perform,
        )
        # What a commit's outputs lead to once in the journal: commands sent, rounds counted.
        self.committed = CommittedOutputs(
            self, send=self.devices.send, start_integrity_check=self.watches.start_integrity_check
        )
        self.ledger = DaemonJournal(
            journal_path,
            config.table_id,
            commit_delay_s=delay_s,
            idle=self.events.empty,
            act=self.committed.act,
            notify=self._notify_panel,
            halt=self._halt,
            latencies_s=self.summary.commit_latencies_s,
            anchor_key=config.journal_anchor_key,
        )
        # A due seal that waits past its bound raises an alert, cleared once a seal proceeds.
        self.seal_alerts = SealWaitAlerts(self.submit, lambda: self.ledger.seals.seal_wait_alerted)
        self._tick_queued = False  # one Tick at a time on the queue
        self.failure: str | None = None  # why the daemon stopped on an error, if it did
        # Forged and replayed frames (security events) per device within a budget (journal/noise.py).
        self.noise = DeviceNoise(self.ledger.add, noise_clock or time.monotonic)
        # The regulatory controls: the configuration's check at start, the clock watch and the
        # two-person changes (controller/daemon_controls.py).
        self.controls = DaemonControls(self)
        # A linked progressive's link to the floor (controller/daemon_link.py); idle without a link.
        self.progressive_link = DaemonProgressiveLink(config, self.journal_path, lambda: self.engine)

    def now_s(self) -> float:
        return self.clock.now_s()

    @property
    def engine(self) -> TableEngine:
        """The engine, to read (state, spots, the round): only the queue's loop calls it."""
        assert self._engine is not None, "the engine starts in run()"
        return self._engine

    @property
    def running(self) -> bool:
        return self._engine is not None

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def journal(self) -> Journal:
        return self.ledger.journal

    @property
    def journal_path(self) -> Path:
        """The table's journal file: RunOptions.journal_path, else the configuration's."""
        return self.ledger.path

    @property
    def journal_failure(self) -> str | None:
        """The journal refused an append: nothing more is written (DaemonJournal)."""
        return self.ledger.failure

    @property
    def drivers(self) -> dict[str, DeviceDriver]:
        return self.devices.drivers

    @property
    def integrity_status(self) -> str | None:
        """The last integrity verdict's status this run."""
        return self.watches.integrity_status

    async def check_integrity(self) -> None:
        """One integrity check now (DaemonWatches.check_integrity)."""
        await self.watches.check_integrity()

    def device_health(self) -> list[DeviceHealth]:
        """The panel's view of the links."""
        return self.devices.health()

    # --- the one queue: every caller's way in -------------------------------------------------------
    def submit(self, item: QueueItem) -> None:
        """Put an event or an action on the queue; it is handled in arrival order."""
        self.events.put_nowait(item)

    async def perform(self, item: QueueItem) -> list[Output]:
        """Put an item on the queue and wait until it is handled and its outputs committed (an
        operator's action: "done" only once the journal holds its effect). JournalError if the journal
        failed first."""
        answer: asyncio.Future[list[Output]] = asyncio.get_running_loop().create_future()
        self.events.put_nowait(_Waited(item, answer))
        return await answer

    def add_companion(self, companion: Callable[[TableDaemon], Coroutine[Any, Any, None]]) -> None:
        """One more task to start once the table runs (before run())."""
        self._companions.append(companion)

    def add_listener(self, listener: ActionListener) -> None:
        """Called on the loop after each item is handled (item, the engine's state before it)."""
        self._listeners.append(listener)

    def _publish(self, event: DomainEvent) -> None:
        """A driver's domain event: onto the one queue (called on the loop's thread)."""
        self._event_received_mono_s[id(event)] = time.monotonic()
        self.events.put_nowait(event)

    async def _engine_loop(self) -> None:
        while True:
            item = await self.events.get()
            # Everything already waiting is handled before anything is committed: what arrived
            # together shares one commit (bounded: BURST_ITEMS).
            for _ in range(BURST_ITEMS):
                self._handle(item)
                if self.events.empty():
                    break
                item = self.events.get_nowait()
            # Commit at once what someone waits for, and whatever records wait as soon as the queue is
            # idle (what arrived during the last commit shares this one); while it stays busy, the
            # committer's timer commits them commit_delay_ms after the oldest (controller/journal/
            # group_commit.py).
            self.ledger.after_burst()

    def _handle(self, queued: QueueItem | _Waited) -> None:
        answer = queued.answer if isinstance(queued, _Waited) else None
        item = queued.item if isinstance(queued, _Waited) else queued
        received = self._event_received_mono_s.pop(id(item), None)
        if self.journal_failure is not None:
            if answer is not None and not answer.done():
                answer.set_exception(JournalError(self.journal_failure))
            return
        if isinstance(item, SecurityEvent) and not self.noise.admit(item):
            if answer is not None and not answer.done():
                answer.set_result([])
            return
        # Read only for the listeners (the simulation's people): a table without any takes no view per item.
        state_before = self.engine.view().state if self._listeners else ""
        now_s = self.now_s()
        if isinstance(item, Tick):
            self._tick_queued = False
            self.noise.tick()
        if isinstance(item, LoopWork):
            outputs = item.work(self.engine, now_s)
        else:
            outputs = self.engine.handle(item, now_s)
        self.ledger.add(outputs, answer=answer, received_mono_s=received)
        for listener in self._listeners:
            listener(item, state_before)

    async def _ticker(self) -> None:
        # On an accelerated clock the decision timeouts are that much shorter in wall time: check them
        # as much more often (down to MIN_TICK_INTERVAL_S), or each walk-away costs a whole tick.
        interval_s = max(MIN_TICK_INTERVAL_S, TICK_INTERVAL_S / max(self.clock.scale, 1.0))
        while True:
            await asyncio.sleep(interval_s)
            if not self._tick_queued:  # a busy queue gets no pile of ticks
                self._tick_queued = True
                self.submit(Tick())

    def _notify_panel(self) -> None:
        if self.panel is not None:
            self.panel.backend.notify()

    # --- start and stop -------------------------------------------------------------------------------
    async def run(self) -> int:
        """The start, in its order (each step below), the table until a stop, and the shutdown."""
        bind_table(self.config.table_id)
        # Ctrl-C and SIGTERM are the daemon's from its first step. While the journal proves itself
        # (synchronous, seconds on a long open segment: the loop cannot run a handler then) a signal
        # cancels the start at once, before anything is appended; from then on it stops the table
        # cleanly (daemon_stop.py), never by the signal's default, where no exit path runs.
        loop = asyncio.get_running_loop()
        for signal_number in STOP_SIGNALS:
            loop.add_signal_handler(signal_number, self._signalled)
        self.journal_path.parent.mkdir(parents=True, exist_ok=True)
        if not open_journal_unless_cancelled(self.ledger, loop, new_journal=self.options.new_journal):
            return 0
        try:
            report = self._recover_and_seal()
            self._open_table(report)
            previous_handler = loop.get_exception_handler()
            loop.set_exception_handler(log_loop_exception)
            self.ledger.checkpoints.start()
            try:
                await self._start_parts()
                await self._stop.wait()
                await self._finish_round()
            finally:
                systemd.notify("STOPPING=1")
                try:
                    await self._shutdown()  # a second Ctrl-C meanwhile is still ours (no traceback)
                finally:
                    remove_stop_signal_handlers(loop)
                    loop.set_exception_handler(previous_handler)
        finally:
            remove_stop_signal_handlers(loop)  # False if the inner finally did it
            self.ledger.close()
        if self.journal_failure is not None and self.failure is None:
            raise UserError(f"the table stopped: {self.journal_failure}")
        if self.failure is not None:
            raise UserError(f"the table stopped on an internal error: {self.failure} (see the log)")
        return 0

    def _recover_and_seal(self) -> RecoveryReport:
        """Recovery (open rounds voided), then the seal of a segment that is due, and the seals while the
        table runs set up."""
        # Clearings other processes write from now on are the journal watch's: recovery applies
        # everything up to here (a clearing written in between is seen by both, harmlessly).
        last = self.journal.last_entry()
        self.watches.watched_seq = 0 if last is None else last.seq
        report = recover(self.journal, anchored=self.ledger.anchored)
        self.summary.recovered_voided = list(report.voided)
        for round_id in report.voided:
            log.warning("round_voided", round_id=round_id, reason="interrupted: voided at start")
        # No round is open now (recovery closed them): the moment to seal a segment that is due.
        # A linked table's claims still unanswered are read back from the open segment at its start
        # (controller/progressive/linked.py unanswered_claims): a seal waits while one is.
        claims_wait = (
            self.progressive_link.unanswered_claims_wait if self.config.progressive_link is not None else None
        )
        # A seal that fails (a full disk, a segments directory it may not write) is an alert on the
        # panel, journaled as its fault_raised (not latched: the table goes on with its open
        # segment); one raised at the start waits in the queue for the engine.
        self.ledger.seals.on_seal_failed = lambda line: self.submit(
            RaiseAlert("journal_error", f"segment not sealed: {line}", by="journal")
        )
        # A due seal that waits past its bound (a claim the floor has not answered, say) is an
        # alert too, cleared once a seal proceeds (controller/daemon_sealing.py): one left open by
        # an earlier run is cleared by this run's first seal.
        self.seal_alerts.resume(report.state.open_alerts)
        self.ledger.seals.on_seal_waiting = self.seal_alerts.waiting
        self.ledger.seals.on_sealed = self.seal_alerts.sealed
        sealed_at_start = self.ledger.seals.seal_if_due(
            report.state, self.config.journal_segments, datetime.now(UTC), waits=claims_wait
        )
        if sealed_at_start is not None:
            self.seal_alerts.sealed(sealed_at_start)
        if self.options.seal_while_running:
            # Sealed between rounds while the table runs, too (the uplink reads the file only under
            # its lock, which the seal waits for; the linked progressive's lookups open the file per
            # read, on the loop, where the seal runs: docs/journal.md "Segments and seals").
            self.ledger.seals.seal_while_running(report.state, self.config.journal_segments)
            if claims_wait is not None:
                self.ledger.seals.file_users.append(claims_wait)
        return report

    def _open_table(self, report: RecoveryReport) -> None:
        """The engine from the recovered state, and the start's records (the release, the table opened)."""
        self._engine = TableEngine(
            engine_config_for(self.config, time_scale=self.clock.scale),
            recovered=RecoveredState.from_table_state(report.state),
        )
        opening = [start_record(self.config, self.engine)]
        if self.options.software is not None:
            opening.insert(0, software_record(self.options.software))
        self.ledger.append(opening)
        self.controls.start(report.state)
        if self.engine.view().held:
            log.warning(
                "table_held", reason="latched faults from before the restart: a supervisor must clear them"
            )

    async def _start_parts(self) -> None:
        """The committer, the devices, the panel, the loops and the companions; then READY."""
        self._spawn(self.ledger.committer(), "committer")
        await self.devices.start(self.config, self.links, self._publish)
        self.panel = await start_table_panel(self)
        self._spawn(self._engine_loop(), "engine")
        self._spawn(self._ticker(), "ticker")
        self._spawn(self.watches.journal_watch(), "journal-watch")
        self._spawn(self.watches.segments_watch(self.config.journal_anchor_key), "segments-watch")
        self.controls.spawn(self._spawn)
        uplink = self.config.uplink
        if uplink is not None:  # the journal streamed to the floor (docs/floor.md)
            verified = self.options.software
            work = uplink_task(
                self.ledger, uplink, table_id=self.config.table_id, verified=verified, stop=self._stop
            )
            self._spawn(work, "uplink")
            if self.config.progressive_link is not None:  # docs/floor.md "Linked progressive"
                self._spawn(self.progressive_link.run(self._stop), "progressive-link")
        for companion in self._companions:
            self._spawn(companion(self), getattr(companion, "__name__", "companion"))
        watchdog_s = systemd.watchdog_interval_s()
        if watchdog_s is not None:
            self._spawn(self.watches.watchdog(watchdog_s), "watchdog")
        systemd.notify("READY=1")
        log.info("table_running", journal=str(self.journal_path), game=self.config.game)
        if self._on_ready is not None:
            self._on_ready(self)

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """A task of the daemon's own. If one dies of an error the table stops: a table whose engine,
        clock or command path is gone must not look alive. (Open rounds are voided at the next start.)"""
        task = asyncio.get_running_loop().create_task(work, name=name)
        task.add_done_callback(self._task_done)
        self._tasks.append(task)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if isinstance(error, JournalError) and self.journal_failure is not None:
            # Already said in one line by the journal side (DaemonJournal), and the table is stopping:
            # not an internal error, and no traceback for an operator to read (a full disk, a read-only
            # file).
            self.request_stop()
            return
        if error is not None:
            self.failure = f"{task.get_name()}: {type(error).__name__}: {error}"
            log.critical("daemon_task_failed", task=task.get_name(), error=repr(error), exc_info=error)
            self.request_stop()

    def _signalled(self) -> None:
        """SIGINT / SIGTERM: said at once on the terminal; a second one stops now (daemon_stop.py)."""
        self.stop_request.signalled(self._engine is not None and self.round_in_play())
        self.request_stop()

    def request_stop(self) -> None:
        """No new round; the round in play finishes (or stays open for recovery)."""
        if not self._stopping:
            log.info("stop_requested")
        self._stopping = True
        self._stop.set()

    def _halt(self) -> None:
        """The journal failed (DaemonJournal said so in one line): stop now, without a second line."""
        self._stopping = True
        self._stop.set()

    async def _finish_round(self) -> None:
        """Let the round in play close (the people at the table keep playing) for up to the decision
        timeout, or until a second Ctrl-C; it closes when the queue's loop journals its closing."""
        if self._engine is None or self.journal_failure is not None:
            return  # a round cannot close without its journal
        await self.stop_request.wait_round(self.round_in_play)
        if self.round_in_play():
            log.warning("round_left_open", reason="shutdown: the round will be voided at the next start")

    def round_in_play(self) -> bool:
        view = self.engine.view()
        live = view.round
        return live is not None and not live.closed and view.state not in ("idle", "held", "complete")

    async def _shutdown(self) -> None:
        await self.watches.stop_integrity_check()
        tasks = [*self._tasks, *self.devices.senders]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        self.devices.senders.clear()
        # What the loop had not reached yet is handled now (bounded), and everything committed.
        if self._engine is not None:
            self._drain_queue()
            self.noise.flush()  # nothing counted is left behind
            with contextlib.suppress(JournalError):  # logged, and the table is stopping anyway
                self.ledger.commit()
        if self.panel is not None:
            with contextlib.suppress(Exception):  # TimeoutError: a stream that would not end
                async with asyncio.timeout(PANEL_STOP_S):
                    await self.panel.stop()
        await self.devices.stop()
        await asyncio.to_thread(self.ledger.checkpoints.stop)
        if self.ledger.opened and self._engine is not None:
            with contextlib.suppress(JournalError):
                self.ledger.append([daemon_record(entries.TableClosed(by="daemon", reason="shutdown"))])
        log.info("table_stopped", rounds=self.summary.rounds_closed)

    def _drain_queue(self) -> None:
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while not self.events.empty() and time.monotonic() < deadline:
            self._handle(self.events.get_nowait())
        while not self.events.empty():  # past the deadline: whoever waits is told
            left = self.events.get_nowait()
            if isinstance(left, _Waited) and not left.answer.done():
                left.answer.set_exception(JournalError("the table stopped before this was handled"))


async def run_table(config: TableConfig, options: RunOptions, *, out: TextIO | None = None) -> RunSummary:
    """The daemon on a table of real devices, to the end."""
    daemon = TableDaemon(config, options, out=out)
    await daemon.run()
    return daemon.summary


__all__ = [
    "AdoptClear",
    "DeviceLinks",
    "LoopWork",
    "QueuedTableActions",
    "RaiseAlert",
    "RunOptions",
    "RunSummary",
    "TableClock",
    "TableDaemon",
    "daemon_record",
    "engine_config_for",
    "run_table",
]
