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
how a Ctrl-C or SIGTERM stops it (what it says, how long it waits) is controller/daemon_stop.py.

Simulation wraps this daemon from outside (controller/simulation/): simulated devices are served by
the harness and reached through ``DeviceLinks``; simulated people act through ``submit``/``perform``
like any other caller; an accelerated clock is a ``TableClock`` with a scale. Nothing here knows them.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import sys
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import structlog

from controller import systemd
from controller.config import TableConfig
from controller.daemon_controls import DaemonControls, LoopWork
from controller.daemon_devices import DaemonDevices, DeviceLinks
from controller.daemon_journal import DaemonJournal
from controller.daemon_stop import StopRequest
from controller.daemon_watches import DaemonWatches
from controller.engine import Alert, JournalRecord, Refused, TableEngine
from controller.engine import TableConfig as EngineConfig
from controller.engine.actions import AdoptClear, OperatorAction, RaiseAlert, Tick
from controller.engine.outputs import Output
from controller.engine.state import RecoveredState
from controller.errors import UserError
from controller.integrity_watch import DEFAULT_EVERY_ROUNDS
from controller.journal import entries
from controller.journal.noise import (
    FORGED_FRAME,
    NOISE_SUPPRESSED,
    OTHER_SOURCES,
    NoiseBudget,
    NoiseSummary,
    utc_text,
)
from controller.journal.recall import recall_from
from controller.journal.recovery import recover
from controller.journal.render import render_record
from controller.journal.segments import Seal
from controller.journal.store import Journal, JournalError
from controller.logs import bind_round, bind_table
from controller.one_queue import OneReaderQueue
from controller.panel.backend import ActionRefused
from controller.software import VerifiedRelease, seeded_digests_of_root
from drivers.events import DomainEvent, SecurityEvent
from drivers.supervisor import DeviceDriver, DeviceHealth

log = structlog.get_logger("flushtable.daemon")

TICK_INTERVAL_S = 0.1  # how often the decision clock is checked (table-clock timeouts are seconds)
MIN_TICK_INTERVAL_S = 0.005  # the most often it is checked on an accelerated clock
PANEL_STOP_S = 0.5  # shutdown: the longest the panel's server may take to stop (its streams end first)
LATENCIES_KEPT = 100_000
BURST_ITEMS = 64  # the most queued items handled before a commit that is due is made
DRAIN_TIMEOUT_S = 10.0  # shutdown: the longest the queue's last items may take to be handled
SEAL_WAIT_BY = "journal-seal"  # who raises (and clears) the alert of a seal that waits past its bound


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What an operator sets for `flushtable run` beyond the configuration (its command line)."""

    journal_path: Path | None = None  # overrides the configuration's
    rounds: int | None = None  # play this many rounds (closed: settled, dead or voided), then exit 0
    panel_bind: tuple[str, int] | None = None  # None: no panel
    print_rounds: bool = True  # print each closed round readably on standard output
    # The integrity watch: check the journal's last rounds after every N closed rounds; 0: never.
    integrity_every_rounds: int = DEFAULT_EVERY_ROUNDS
    # `flushtable run --new-journal`: start a new journal where none with content exists (controller/
    # journal/proof.py); without it a missing or empty journal is refused where its anchor names entries.
    new_journal: bool = False
    # The signed release the start verified (controller/software.py), journaled before the table opens;
    # None: no [software] configured and no development release (nothing verified, nothing journaled).
    software: VerifiedRelease | None = None
    # Seal the open segment between rounds while the table runs when it is due (docs/journal.md
    # "Segments and seals"); False: only at a start (a test of the start's seal alone).
    seal_while_running: bool = True


@dataclass(frozen=True, slots=True)
class TableClock:
    """The table clock the engine is fed: the wall clock, or (``scale`` > 1, simulations only) one
    running ``scale`` times faster, so decision timeouts and the like pass in a fraction of the time.
    Device links keep their own protocol clock."""

    scale: float = 1.0
    origin_wall_s: float = field(default_factory=time.time)
    origin_mono_s: float = field(default_factory=time.monotonic)

    def now_s(self) -> float:
        return self.origin_wall_s + (time.monotonic() - self.origin_mono_s) * self.scale


@dataclass(slots=True)
class RunSummary:
    rounds_closed: int = 0
    rounds_settled: int = 0
    rounds_dead: int = 0
    rounds_voided: int = 0
    recovered_voided: list[str] = field(default_factory=list)
    # Device event -> its records committed, the last LATENCIES_KEPT (a table runs for weeks).
    commit_latencies_s: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCIES_KEPT))


QueueItem = DomainEvent | OperatorAction | LoopWork
ActionListener = Callable[[object, str], None]  # (the item just handled, the engine's state before it)


@dataclass(slots=True)
class _Waited:
    """An item whose caller awaits the outputs of its handling, once they are committed."""

    item: QueueItem
    answer: asyncio.Future[list[Output]]


class QueuedTableActions:
    """The panel's TableActions (controller/panel/backend.py) on the daemon's queue: an action goes on
    the one queue like every other caller's, and the answer comes once its effect is committed; the
    engine's refusal is ActionRefused with the engine's own reason."""

    def __init__(self, daemon: TableDaemon) -> None:
        self._daemon = daemon

    async def perform(self, action: OperatorAction) -> None:
        outputs = await self._daemon.perform(action)
        refused = [output for output in outputs if isinstance(output, Refused)]
        if refused:
            raise ActionRefused(refused[0].reason)

    async def run(self, work: Callable[[TableEngine, float], list[Output]]) -> list[Output]:
        """A step of the daemon's own on the queue (controller/daemon_controls.py LoopWork)."""
        return await self._daemon.perform(LoopWork(getattr(work, "__name__", "work"), work))


def engine_config_for(config: TableConfig, *, time_scale: float = 1.0) -> EngineConfig:
    """The engine's view of the table's configuration."""

    def device_name(kind: str, default: str) -> str:
        devices = config.devices_of_kind(kind)
        return devices[0].name if devices else default

    base = config.settle_base()
    rake = config.rake_json() if config.banking.mode == "designated-player" else None
    return EngineConfig(
        table_id=config.table_id,
        game=config.game,
        banking_mode=config.banking.mode,
        seats=tuple(range(1, config.seats + 1)),
        min_ante_cents=config.limits.min_ante_cents,
        max_ante_cents=config.limits.max_ante_cents,
        paytables=dict(base.get("paytables", {}))
        if config.banking.mode == "house"
        else config.paytables_json(),
        rake=rake,
        bonus_cap_cents=config.limits.aggregate_bonus_cap_cents,
        max_bonus_cents=dict(config.limits.max_bonus_cents),
        min_bank_cents=config.min_bank_cents or 1,
        house_may_bank=config.banking.house_banks_when_nobody_accepts,
        decision_timeout_s=config.timeouts.decision_s,
        dp_offer_timeout_s=config.timeouts.dp_offer_s,
        # The shoe's silence is device time, not table time: on an accelerated clock an unscaled deal
        # timeout would pass in milliseconds and kill healthy deals.
        deal_timeout_s=config.timeouts.deal_s * time_scale,
        config_digest=config.digest,
        shuffler_device=device_name("shuffler", "shuffler"),
        sensors_device=device_name("bet_sensors", "sensors"),
        display_device=device_name("dealer_display", "display"),
        progressive=config.progressive_parameters,
        property_settings=config.property_settings,
    )


def start_record(config: TableConfig, engine: TableEngine) -> JournalRecord:
    """The daemon's start in the journal: opened, or still closed when a manager closed the table
    before the restart (the engine recovered that; the panel's view must match it)."""
    if engine.table_open:
        return daemon_record(
            entries.TableOpened(
                game=config.game, banking_mode=config.banking.mode, config_digest=config.digest, by="daemon"
            )
        )
    reason = f"closed by a manager before the restart: {engine.closed_reason or 'no reason given'}"
    return daemon_record(entries.TableClosed(by="daemon", reason=reason))


class StartCancelled(Exception):
    """A Ctrl-C or SIGTERM while the journal proved itself at the start."""


def _cancel_start(signal_number: int, _frame: object) -> None:
    raise StartCancelled(f"{signal.Signals(signal_number).name} while the journal proved itself")


def daemon_record(entry: entries.Entry) -> JournalRecord:
    """One of the daemon's own entries (no round), typed where it is decided."""
    return JournalRecord(entry.kind, entry, None, "engine")


def software_record(verified: VerifiedRelease) -> JournalRecord:
    """The release the start verified, in the journal before the table opens: the panel shows it, and
    the floor learns it from the stream (docs/operations.md "Software verification")."""
    payload = verified.to_json()
    return JournalRecord.of("software_verified", payload, None, "engine")


def log_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Errors asyncio reports on its own (a serial transport's write failing as a cable is pulled):
    one structured log line, not a traceback on the operator's console. The drivers already turn
    the loss itself into DeviceLost and reconnect."""
    error = context.get("exception")
    log.error(
        "event_loop_error",
        message=str(context.get("message", "")),
        error=repr(error) if error is not None else None,
    )


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
        self.link_client: Any = None  # a linked progressive's LinkClient (the panel shows its meter)
        self._tasks: list[asyncio.Task[None]] = []
        # Ctrl-C / SIGTERM: the round in play may take up to the decision timeout (controller/daemon_stop.py).
        self.stop_request = StopRequest(config.timeouts.decision_s / max(self.clock.scale, 1.0))
        self._stop = self.stop_request.asked
        self._stopping = False
        self._engine: TableEngine | None = None
        self._listeners: list[ActionListener] = []
        self._event_received_mono_s: dict[int, float] = {}
        delay_s = commit_delay_s if commit_delay_s is not None else config.journal_commit_delay_ms / 1000
        self._seal_wait_alerts: list[str] = []  # the open alerts of a seal that waits (fault ids)
        self.ledger = DaemonJournal(
            options.journal_path or config.journal_path,
            config.table_id,
            commit_delay_s=delay_s,
            idle=self.events.empty,
            act=self._act_committed,
            notify=self._notify_panel,
            halt=self._halt,
            latencies_s=self.summary.commit_latencies_s,
            anchor_key=config.journal_anchor_key,
        )
        self.devices = DaemonDevices()
        self.watches = DaemonWatches(
            self.journal_path,
            journal=lambda: self.journal,
            latched=lambda: self.engine.latched,
            submit=self.submit,
            perform=self.perform,
        )
        self._tick_queued = False  # one Tick at a time on the queue
        self.failure: str | None = None  # why the daemon stopped on an error, if it did
        # Forged and replayed frames (security events) per device within a budget (journal/noise.py).
        self.noise = NoiseBudget()
        self._noise_clock = noise_clock or time.monotonic
        # The regulatory controls: the configuration's check at start, the clock watch and the
        # two-person changes (controller/daemon_controls.py).
        self.controls = DaemonControls(self)

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
        if isinstance(item, SecurityEvent) and not self._admit_security_event(item):
            if answer is not None and not answer.done():
                answer.set_result([])
            return
        state_before = self.engine.state
        now_s = self.now_s()
        if isinstance(item, Tick):
            self._tick_queued = False
            self._journal_noise(self.noise.due(self._noise_clock()))
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

    def _admit_security_event(self, event: SecurityEvent) -> bool:
        """Whether a forged or replayed frame goes to the engine (a security_event entry and an alert):
        within its device's noise budget, yes; past it, it is only counted for a noise_suppressed
        summary (journaled where the entry would have been, with the device as its source)."""
        now = utc_text(datetime.now(UTC))
        verdict = self.noise.admit(FORGED_FRAME, event.device, self._noise_clock(), now)
        self._journal_noise(verdict.summaries)
        return verdict.journal

    def _journal_noise(self, summaries: Sequence[NoiseSummary]) -> None:
        if summaries:
            self.ledger.add(
                [
                    JournalRecord.of(
                        NOISE_SUPPRESSED,
                        summary.payload(),
                        None,
                        "engine" if summary.source == OTHER_SOURCES else summary.source,
                    )
                    for summary in summaries
                ]
            )

    # --- committed outputs (handed back by DaemonJournal once their records are in the journal) -----
    def _act_committed(self, outputs: Sequence[Output]) -> None:
        records = [item for item in outputs if isinstance(item, JournalRecord)]
        for item in outputs:
            if isinstance(item, JournalRecord):
                continue
            if isinstance(item, Alert):
                log.warning(
                    "alert",
                    kind=item.kind,
                    severity=item.severity,
                    message=item.message,
                    round_id=item.round_id,
                )
            elif isinstance(item, Refused):
                log.info("refused", action=item.action, reason=item.reason)
            else:
                self.devices.send(item)
        for record in records:
            self._after_record(record)

    def _after_record(self, record: JournalRecord) -> None:
        # Read as the typed entry the engine built (not its payload merged back into a dict).
        entry = record.entry
        if isinstance(entry, entries.RoundStarted):
            bind_round(record.round_id)
        if not isinstance(entry, entries.RoundSettled | entries.RoundDead | entries.RoundVoided):
            return
        bind_round(None)
        self.summary.rounds_closed += 1
        if isinstance(entry, entries.RoundSettled):
            self.summary.rounds_settled += 1
        elif isinstance(entry, entries.RoundDead):
            self.summary.rounds_dead += 1
        else:
            self.summary.rounds_voided += 1
        settlement = entry.settlement  # the public settlement: banker_net and rake are in it
        log.info(
            record.kind,
            round_id=record.round_id,
            banker_net=settlement.get("banker_net"),
            rake=settlement.get("rake"),
            rounds=self.summary.rounds_closed,
        )
        if self.options.print_rounds:
            for recalled in recall_from(self.journal, round_id=record.round_id):
                prop = self.config.property_settings
                print(render_record(recalled, prop.money, prop), file=self.out, flush=True)
        every = self.options.integrity_every_rounds
        if every > 0 and self.summary.rounds_closed % every == 0:
            self.watches.start_integrity_check()
        if self.options.rounds is not None and self.summary.rounds_closed >= self.options.rounds:
            self.request_stop()

    def _notify_panel(self) -> None:
        if self.panel is not None:
            self.panel.backend.notify()

    # --- start and stop -------------------------------------------------------------------------------
    async def run(self) -> int:  # noqa: PLR0912, PLR0915 - the start-up order in one place; each step is one call, split they would hide the order
        bind_table(self.config.table_id)
        # Ctrl-C and SIGTERM are the daemon's from its first step. While the journal proves itself
        # (synchronous, seconds on a long open segment: the loop cannot run a handler then) a signal
        # cancels the start at once, before anything is appended; from then on it stops the table
        # cleanly (daemon_stop.py), never by the signal's default, where no exit path runs.
        loop = asyncio.get_running_loop()
        for signal_number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signal_number, self._signalled)
        self.journal_path.parent.mkdir(parents=True, exist_ok=True)
        during_proof = {
            signal_number: signal.signal(signal_number, _cancel_start)
            for signal_number in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            self.ledger.open(new_journal=self.options.new_journal)
        except BaseException as error:
            for signal_number in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signal_number)
            if not isinstance(error, StartCancelled):
                raise
            if self.ledger.opened:
                self.ledger.close()
            print(f"stopping: {error} before the table opened (nothing appended)", file=sys.stderr)
            return 0
        finally:
            for signal_number, handler in during_proof.items():
                signal.signal(signal_number, handler)  # back to the loop's (asyncio's own) handler
        try:
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
            claims_wait = self._unanswered_claims_wait if self.config.progressive_link is not None else None
            # A seal that fails (a full disk, a segments directory it may not write) is an alert on the
            # panel, journaled as its fault_raised (not latched: the table goes on with its open
            # segment); one raised at the start waits in the queue for the engine.
            self.ledger.on_seal_failed = lambda line: self.submit(
                RaiseAlert("journal_error", f"segment not sealed: {line}", by="journal")
            )
            # A due seal that waits past its bound (a claim the floor has not answered, say) is an
            # alert too, cleared once a seal proceeds (controller/daemon_journal.py): one left open by
            # an earlier run is cleared by this run's first seal.
            self._seal_wait_alerts = [
                fault_id
                for fault_id, alert in report.state.open_alerts.items()
                if alert.raised_by == SEAL_WAIT_BY
            ]
            self.ledger.on_seal_waiting = self._seal_waiting
            self.ledger.on_sealed = self._sealed
            sealed_at_start = self.ledger.seal_if_due(
                report.state, self.config.journal_segments, datetime.now(UTC), waits=claims_wait
            )
            if sealed_at_start is not None:
                self._sealed(sealed_at_start)
            if self.options.seal_while_running:
                # Sealed between rounds while the table runs, too (the uplink reads the file only under
                # its lock, which the seal waits for; the linked progressive's lookups open the file per
                # read, on the loop, where the seal runs: docs/journal.md "Segments and seals").
                self.ledger.seal_while_running(report.state, self.config.journal_segments)
                if claims_wait is not None:
                    self.ledger.file_users.append(claims_wait)
            self._engine = TableEngine(
                engine_config_for(self.config, time_scale=self.clock.scale),
                recovered=RecoveredState.from_table_state(report.state),
            )
            opening = [start_record(self.config, self.engine)]
            if self.options.software is not None:
                opening.insert(0, software_record(self.options.software))
            self.ledger.append(opening)
            self.controls.start(report.state)
            if self.engine.held:
                log.warning(
                    "table_held",
                    reason="latched faults from before the restart: a supervisor must clear them",
                )
            previous_handler = loop.get_exception_handler()
            loop.set_exception_handler(log_loop_exception)
            self.ledger.start_checkpoints()
            try:
                self._spawn(self.ledger.committer(), "committer")
                await self.devices.start(self.config, self.links, self._publish)
                await self._start_panel()
                self._spawn(self._engine_loop(), "engine")
                self._spawn(self._ticker(), "ticker")
                self._spawn(self.watches.journal_watch(), "journal-watch")
                self._spawn(self.watches.segments_watch(self.config.journal_anchor_key), "segments-watch")
                self.controls.spawn(self._spawn)
                if self.config.uplink is not None:  # the journal streamed to the floor (docs/floor.md)
                    from controller.uplink.uplink import start_uplink  # noqa: PLC0415 (nats: floor only)

                    uplink_lock = asyncio.Lock()  # held while the uplink reads the file: no seal then
                    self.ledger.file_users.append(
                        lambda: "the uplink is reading the journal" if uplink_lock.locked() else None
                    )
                    uplink = start_uplink(
                        self.journal_path,
                        self.config.table_id,
                        self.config.uplink,
                        self._stop,
                        on_verify=self.answer_software_check,
                        file_lock=uplink_lock,
                    )
                    self._spawn(uplink, "uplink")
                    if self.config.progressive_link is not None:  # docs/floor.md "Linked progressive"
                        self._spawn(self._progressive_link(), "progressive-link")
                for companion in self._companions:
                    self._spawn(companion(self), getattr(companion, "__name__", "companion"))
                watchdog_s = systemd.watchdog_interval_s()
                if watchdog_s is not None:
                    self._spawn(self.watches.watchdog(watchdog_s), "watchdog")
                systemd.notify("READY=1")
                log.info("table_running", journal=str(self.journal_path), game=self.config.game)
                if self._on_ready is not None:
                    self._on_ready(self)
                await self._stop.wait()
                await self._finish_round()
            finally:
                systemd.notify("STOPPING=1")
                try:
                    await self._shutdown()  # a second Ctrl-C meanwhile is still ours (no traceback)
                finally:
                    for signal_number in (signal.SIGTERM, signal.SIGINT):
                        loop.remove_signal_handler(signal_number)
                    loop.set_exception_handler(previous_handler)
        finally:
            for signal_number in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signal_number)  # False if the inner finally did it
            self.ledger.close()
        if self.journal_failure is not None and self.failure is None:
            raise UserError(f"the table stopped: {self.journal_failure}")
        if self.failure is not None:
            raise UserError(f"the table stopped on an internal error: {self.failure} (see the log)")
        return 0

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

    def _seal_waiting(self, line: str) -> None:
        """The ledger's due seal has waited past its bound: a non-latching alert, journaled (its
        fault_raised), on the queue; not raised if a seal proceeded before the queue got to it."""
        alerts = self._seal_wait_alerts

        def seal_waiting(engine: TableEngine, now_s: float) -> list[Output]:
            if not self.ledger.seal_wait_alerted:
                return []  # sealed meanwhile: nothing to say
            outputs = engine.handle(
                RaiseAlert("journal_error", f"segment not sealed: {line}", by=SEAL_WAIT_BY), now_s
            )
            alerts.extend(
                record.entry.fault_id
                for record in outputs
                if isinstance(record, JournalRecord) and isinstance(record.entry, entries.FaultRaised)
            )
            return outputs

        self.submit(LoopWork("seal_waiting", seal_waiting))

    def _sealed(self, seal: Seal) -> None:
        """A seal proceeded: the alerts of its wait are cleared (journaled fault_cleared, on the queue)."""
        if not self._seal_wait_alerts:
            return
        cleared = list(self._seal_wait_alerts)
        self._seal_wait_alerts.clear()
        reason = f"segment {seal.segment} sealed (entries {seal.first_seq} to {seal.last_seq})"

        def seal_proceeded(_engine: TableEngine, _now_s: float) -> list[Output]:
            return [
                JournalRecord(
                    "fault_cleared",
                    entries.FaultCleared(fault_id=fault_id, by=SEAL_WAIT_BY, reason=reason),
                    None,
                    "daemon",
                )
                for fault_id in cleared
            ]

        self.submit(LoopWork("seal_proceeded", seal_proceeded))

    def _unanswered_claims_wait(self) -> str | None:
        """Why a seal must wait for a linked table's claims (None: it need not): a claim sent and not
        answered, or a settled round's claim the journal shows unanswered. Only the open segment is read
        back for them at a start, so a seal never moves one into the sealed past."""
        from controller.progressive import linked  # noqa: PLC0415 (nats: floor only)

        client = self.link_client
        if client is not None and client.pending:
            return f"{len(client.pending)} progressive claim(s) wait for the floor's answer"
        try:
            unanswered = linked.unanswered_claims(self.journal_path)
        except sqlite3.Error as error:
            return f"the journal's progressive claims cannot be read: {error}"
        if unanswered:
            return f"{len(unanswered)} progressive claim(s) in the journal wait for the floor's answer"
        return None

    async def _progressive_link(self) -> None:
        """A linked table's link to the floor's progressive: over [uplink]'s servers and credentials;
        the engine's claims go through it and its link state refuses Progressive wagers when lost."""
        from controller.progressive import linked  # noqa: PLC0415 (nats: floor only)

        uplink = self.config.uplink
        link = self.config.progressive_link
        parameters = self.config.progressive_parameters
        assert uplink is not None
        assert link is not None
        assert parameters is not None
        client = linked.LinkClient(
            linked.LinkConfig(
                link_id=link,
                table_id=self.config.table_id,
                servers=uplink.servers,
                user=uplink.user,
                password=uplink.password,
                ca_file=uplink.ca_file,
                link_timeout_s=self.config.progressive_link_timeout_s,
                backoff_initial_s=uplink.backoff_initial_s,
                backoff_max_s=uplink.backoff_max_s,
            )
        )
        controller = linked.LinkedTableController(
            client, parameters, linked.journal_settled_seq(self.journal_path)
        )
        self.link_client = client
        self.engine.progressive.controller = controller  # type: ignore[assignment]
        self.engine.set_progressive_link(controller.link_state)
        # A claim left unanswered by an earlier run (the link was down, then the table stopped) is asked
        # again from the journal: the floor answers a replay with its first answer (never paid twice).
        unanswered = await asyncio.to_thread(linked.unanswered_claims, self.journal_path)
        self.engine.progressive.resume_claims([(c.round_id, c.wagers, c.hits) for c in unanswered])
        await client.run(self._stop)

    def progressive_panel_view(self) -> dict[str, Any] | None:
        """A linked table's Progressive card from its link client; None (the journal's card) otherwise."""
        client = self.link_client
        return None if client is None else dict(client.panel_view())

    async def _start_panel(self) -> None:
        if self.options.panel_bind is None:
            return
        # The web stack loads only when a panel is wanted.
        from controller.panel.embed import start_panel  # noqa: PLC0415

        host, port = self.options.panel_bind
        self.panel = await start_panel(
            self.journal,
            bind=f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
            panel_config=self.config.panel,  # users: controller.panel.auth.users_file_for; trusted_proxies
            actions=QueuedTableActions(self),
            device_health=self.device_health,
            changes=self.controls.changes,
            progressive_live=self.progressive_panel_view,
            property_settings=self.config.property_settings,
        )
        log.info("panel_listening", url=self.panel.url)
        print(f"panel: {self.panel.url}", file=self.out, flush=True)

    async def answer_software_check(self, seed: bytes, requested_by: str) -> dict[str, Any]:
        """The floor's seeded software verification (controller/uplink/uplink.py asks): HMAC-SHA256 with
        its seed over every product file that runs here, journaled (software_checked) before it is
        answered. Hashing runs in a thread: the table plays on meanwhile."""
        result = await asyncio.to_thread(seeded_digests_of_root, seed)
        entry = entries.SoftwareChecked(
            seed=seed.hex(), aggregate=result.aggregate, files=len(result.files), requested_by=requested_by
        )
        committed: asyncio.Future[list[Output]] = asyncio.get_running_loop().create_future()
        self.ledger.add([daemon_record(entry)], answer=committed)
        self.ledger.after_burst()
        await committed
        verified = self.options.software
        return {
            **entries.public_dict(entry),  # the answer carries the entry's fields as journaled
            "table_id": self.config.table_id,
            "release": None if verified is None else verified.release,
            "release_digest": None if verified is None else verified.digest,
            "development": None if verified is None else verified.development,
        }

    async def _finish_round(self) -> None:
        """Let the round in play close (the people at the table keep playing) for up to the decision
        timeout, or until a second Ctrl-C; it closes when the queue's loop journals its closing."""
        if self._engine is None or self.journal_failure is not None:
            return  # a round cannot close without its journal
        await self.stop_request.wait_round(self.round_in_play)
        if self.round_in_play():
            log.warning("round_left_open", reason="shutdown: the round will be voided at the next start")

    def round_in_play(self) -> bool:
        live = self.engine.round
        return live is not None and not live.closed and self.engine.state not in ("idle", "held", "complete")

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
            self._journal_noise(self.noise.flush())  # nothing counted is left behind
            with contextlib.suppress(JournalError):  # logged, and the table is stopping anyway
                self.ledger.commit()
        if self.panel is not None:
            with contextlib.suppress(Exception):  # TimeoutError: a stream that would not end
                async with asyncio.timeout(PANEL_STOP_S):
                    await self.panel.stop()
        await self.devices.stop()
        await asyncio.to_thread(self.ledger.stop_checkpoints)
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
    "engine_config_for",
    "run_table",
]
