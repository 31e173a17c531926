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
which recovery voids at the next start with every wager returned.

Simulation wraps this daemon from outside (controller/simulation/): simulated devices are served by
the harness and reached through ``DeviceLinks``; simulated people act through ``submit``/``perform``
like any other caller; an accelerated clock is a ``TableClock`` with a scale. Nothing here knows them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import structlog

from controller import systemd
from controller.config import TableConfig
from controller.engine import Alert, JournalRecord, Refused, TableEngine
from controller.engine import TableConfig as EngineConfig
from controller.engine.actions import AdoptClear, OperatorAction, RaiseAlert, Tick
from controller.engine.outputs import Output
from controller.engine.state import RecoveredState
from controller.errors import UserError
from controller.integrity_watch import (
    DEFAULT_EVERY_ROUNDS,
    WINDOW_ROUNDS,
    alert_for_verdict,
    check_journal_in_process,
)
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.group_commit import CommitFailed, Committed, GroupCommit
from controller.journal.kinds import CLOSING_KINDS, FAULT_CLEARED
from controller.journal.noise import (
    FORGED_FRAME,
    NOISE_SUPPRESSED,
    OTHER_SOURCES,
    NoiseBudget,
    NoiseSummary,
    utc_text,
)
from controller.journal.proof import prepare_for_run
from controller.journal.recall import recall_from
from controller.journal.recovery import recover
from controller.journal.render import render_record
from controller.journal.store import Journal, JournalEntry, JournalError
from controller.logs import bind_round, bind_table
from controller.panel.backend import ActionRefused
from drivers.events import DomainCommand, DomainEvent, SecurityEvent
from drivers.factory import make_driver
from drivers.supervisor import DeviceDriver, DeviceHealth, DeviceUnavailable, DriverTiming

log = structlog.get_logger("flushtable.daemon")

TICK_INTERVAL_S = 0.1  # how often the decision clock is checked (table-clock timeouts are seconds)
MIN_TICK_INTERVAL_S = 0.005  # the most often it is checked on an accelerated clock
DEVICE_READY_TIMEOUT_S = 15.0
SHUTDOWN_GRACE_S = 20.0  # SIGTERM: how long a round in play may take to finish before we stop anyway
JOURNAL_WATCH_INTERVAL_S = 0.25  # how often the journal is read for clearings other processes wrote
LATENCIES_KEPT = 100_000
BURST_ITEMS = 64  # the most queued items handled before a commit that is due is made
DRAIN_TIMEOUT_S = 10.0  # shutdown: the longest the queue's last items may take to be handled


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


@dataclass(frozen=True, slots=True)
class DeviceLinks:
    """Devices served by someone else than their configuration says (the simulation harness): the URL
    and key each device's driver uses instead, and the in-process hubs its transports reach."""

    urls: Mapping[str, str] = field(default_factory=dict)
    keys: Mapping[str, bytes] = field(default_factory=dict)
    usb_backend: Any = None
    sim_hub: Any = None


@dataclass(slots=True)
class RunSummary:
    rounds_closed: int = 0
    rounds_settled: int = 0
    rounds_dead: int = 0
    rounds_voided: int = 0
    recovered_voided: list[str] = field(default_factory=list)
    # Device event -> its records committed, the last LATENCIES_KEPT (a table runs for weeks).
    commit_latencies_s: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCIES_KEPT))


QueueItem = DomainEvent | OperatorAction
ActionListener = Callable[[object, str], None]  # (the item just handled, the engine's state before it)


@dataclass(slots=True)
class _Waited:
    """An item whose caller awaits the outputs of its handling, once they are committed."""

    item: QueueItem
    answer: asyncio.Future[list[Output]]


@dataclass(frozen=True, slots=True)
class _Effect:
    """One engine call's outputs and who waits for them: what the group commit hands back."""

    outputs: Sequence[Output]
    answer: asyncio.Future[list[Output]] | None = None


def _urgent(outputs: Sequence[Output]) -> bool:
    """A call whose outputs release a command, an alert or a refusal: the table (or a person) waits."""
    return any(not isinstance(item, JournalRecord) for item in outputs)


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
    )


class TableDaemon:
    """One table: its journal, engine, devices, the one queue and the panel."""

    def __init__(
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
        self.journal_path = options.journal_path or config.journal_path
        self.summary = RunSummary()
        self.events: asyncio.Queue[QueueItem | _Waited] = asyncio.Queue()
        self.drivers: dict[str, DeviceDriver] = {}
        self.panel: Any = None
        self._command_queues: dict[str, asyncio.Queue[DomainCommand]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()
        self._stopping = False
        self._journal: Journal | None = None
        self._engine: TableEngine | None = None
        self._listeners: list[ActionListener] = []
        self._event_received_mono_s: dict[int, float] = {}
        delay_s = commit_delay_s if commit_delay_s is not None else config.journal_commit_delay_ms / 1000
        self._group: GroupCommit[_Effect] = GroupCommit(
            self._append_records, clock=time.monotonic, max_delay_s=delay_s
        )
        self._commit_wake = asyncio.Event()  # records wait: the committer sees when they are due
        self._tick_queued = False  # one Tick at a time on the queue
        self._anchor_writer: concurrent.futures.ThreadPoolExecutor | None = None
        self._watched_seq = 0  # the journal watch has read every entry up to here
        self.failure: str | None = None  # why the daemon stopped on an error, if it did
        self.journal_failure: str | None = None  # the journal refused an append: nothing more is written
        self._integrity_task: asyncio.Task[None] | None = None
        self.integrity_status: str | None = None  # the last integrity verdict's status this run
        # Forged and replayed frames (security events) per device within a budget (journal/noise.py).
        self.noise = NoiseBudget()
        self._noise_clock = noise_clock or time.monotonic

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
        assert self._journal is not None, "the journal opens in run()"
        return self._journal

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
            # Commit at once what someone waits for, and a lone event's records as soon as the queue is
            # idle; bursts that follow share commits, at most one per commit delay (controller/journal/
            # group_commit.py). The committer's timer commits what waits when it falls due.
            if self._group.due(idle=self.events.empty()):
                self._commit()
            elif self._group.waiting:
                self._commit_wake.set()

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
        outputs = self.engine.handle(item, now_s)
        self._add(outputs, answer=answer, received_mono_s=received)
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

    async def _journal_watch(self) -> None:
        """Clearings another process journaled while the table runs (`flushtable clear`, for a table
        whose panel is off or out of reach): a ``fault_cleared`` for a fault the engine still holds
        latched is adopted (the engine releases the table as if cleared here, without a second entry).
        The engine's own clearings are journaled after it dropped the fault, so they are skipped."""
        while True:
            await asyncio.sleep(JOURNAL_WATCH_INTERVAL_S)
            try:
                cleared = list(self.journal.entries(since_seq=self._watched_seq, kinds=[FAULT_CLEARED]))
            except JournalError as error:  # read again next time; the table goes on
                log.error("journal_watch_failed", error=str(error))
                continue
            for entry in cleared:
                self._watched_seq = max(self._watched_seq, entry.seq)
                fault_id = str(entry.payload.get("fault_id"))
                if fault_id not in self.engine.latched:
                    continue
                by = str(entry.payload.get("by", ""))
                reason = str(entry.payload.get("reason", ""))
                log.warning("fault_cleared_elsewhere", fault_id=fault_id, by=by, journal_seq=entry.seq)
                self.submit(AdoptClear(fault_id, by, reason))

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
            self._add(
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

    # --- start and stop -------------------------------------------------------------------------------
    async def run(self) -> int:
        bind_table(self.config.table_id)
        self.journal_path.parent.mkdir(parents=True, exist_ok=True)
        # The journal proves itself (chain, triggers, SQLite's integrity, its anchor) before anything,
        # recovery included, is appended to it; a journal that fails is refused in one line.
        prepare_for_run(self.journal_path, self.config.table_id, new_journal=self.options.new_journal)
        self._journal = Journal.open(self.journal_path, self.config.table_id)
        try:
            # Clearings other processes write from now on are the journal watch's: recovery applies
            # everything up to here (a clearing written in between is seen by both, harmlessly).
            last = self.journal.last_entry()
            self._watched_seq = 0 if last is None else last.seq
            report = recover(self.journal)
            self.summary.recovered_voided = list(report.voided)
            for round_id in report.voided:
                log.warning("round_voided", round_id=round_id, reason="interrupted: voided at start")
            self._engine = TableEngine(
                engine_config_for(self.config, time_scale=self.clock.scale),
                recovered=RecoveredState.from_table_state(report.state),
            )
            self._append([self._start_record()])
            if self.engine.held:
                log.warning(
                    "table_held",
                    reason="latched faults from before the restart: a supervisor must clear them",
                )
            loop = asyncio.get_running_loop()
            previous_handler = loop.get_exception_handler()
            loop.set_exception_handler(self._loop_exception)
            for signal_number in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signal_number, self.request_stop)
            self._anchor_writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="anchor")
            try:
                self._spawn(self._committer(), "committer")
                await self._start_devices()
                await self._start_panel()
                self._spawn(self._engine_loop(), "engine")
                self._spawn(self._ticker(), "ticker")
                self._spawn(self._journal_watch(), "journal-watch")
                for companion in self._companions:
                    self._spawn(companion(self), getattr(companion, "__name__", "companion"))
                watchdog_s = systemd.watchdog_interval_s()
                if watchdog_s is not None:
                    self._spawn(self._watchdog(watchdog_s), "watchdog")
                systemd.notify("READY=1")
                log.info("table_running", journal=str(self.journal_path), game=self.config.game)
                if self._on_ready is not None:
                    self._on_ready(self)
                await self._stop.wait()
                await self._finish_round()
            finally:
                systemd.notify("STOPPING=1")
                for signal_number in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(signal_number)
                loop.set_exception_handler(previous_handler)
                await self._shutdown()
        finally:
            self.journal.close()
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
            # Already said in one line by _journal_failed, and the table is stopping: not an internal
            # error, and no traceback for an operator to read (a full disk, a read-only file).
            self.request_stop()
            return
        if error is not None:
            self.failure = f"{task.get_name()}: {type(error).__name__}: {error}"
            log.critical("daemon_task_failed", task=task.get_name(), error=repr(error), exc_info=error)
            self.request_stop()

    def _start_record(self) -> JournalRecord:
        """The daemon's start in the journal: opened, or still closed when a manager closed the table
        before the restart (the engine recovered that; the panel's view must match it)."""
        if self.engine.table_open:
            payload: dict[str, Any] = {
                "game": self.config.game,
                "banking_mode": self.config.banking.mode,
                "config_digest": self.config.digest,
                "by": "daemon",
            }
            return JournalRecord.of("table_opened", payload, None, "engine")
        reason = f"closed by a manager before the restart: {self.engine.closed_reason or 'no reason given'}"
        return JournalRecord.of("table_closed", {"by": "daemon", "reason": reason}, None, "engine")

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Errors asyncio reports on its own (a serial transport's write failing as a cable is pulled):
        one structured log line, not a traceback on the operator's console. The drivers already turn
        the loss itself into DeviceLost and reconnect."""
        error = context.get("exception")
        log.error(
            "event_loop_error",
            message=str(context.get("message", "")),
            error=repr(error) if error is not None else None,
        )

    def request_stop(self) -> None:
        """SIGTERM / SIGINT: no new round; the round in play finishes (or stays open for recovery)."""
        if not self._stopping:
            log.info("stop_requested")
        self._stopping = True
        self._stop.set()

    async def _start_devices(self) -> None:
        for device in self.config.devices.values():
            url = self.links.urls.get(device.name, device.url)
            key = self.links.keys.get(device.name, device.key)
            if device.simulated and device.name not in self.links.urls:
                raise UserError(
                    f"devices.{device.name}: {device.url} is a simulated device: `flushtable run` serves "
                    "simulated devices itself; a table daemon alone drives real devices only"
                )
            if key is None:
                raise UserError(f"devices.{device.name}: no key")
            driver = make_driver(
                device.name,
                device.kind,
                url,
                key,
                publish=self._publish,
                timing=DriverTiming(),
                usb_backend=self.links.usb_backend,
                sim_hub=self.links.sim_hub,
            )
            self.drivers[device.name] = driver
            queue: asyncio.Queue[DomainCommand] = asyncio.Queue()
            self._command_queues[device.name] = queue
            driver.start()
            self._tasks.append(
                asyncio.get_running_loop().create_task(
                    self._command_sender(driver, queue), name=f"send {device.name}"
                )
            )
            log.info("device_listening", device=device.name, kind=device.kind, url=url)
        try:
            await asyncio.gather(
                *(driver.wait_ready(DEVICE_READY_TIMEOUT_S) for driver in self.drivers.values())
            )
        except TimeoutError:
            missing = [name for name, driver in self.drivers.items() if not driver.ready]
            # Not fatal: a device may come later. The engine starts no round while one is lost.
            log.warning("devices_not_ready", devices=missing, timeout_s=DEVICE_READY_TIMEOUT_S)

    async def _command_sender(self, driver: DeviceDriver, queue: asyncio.Queue[DomainCommand]) -> None:
        """Commands to one device go out one at a time, in the engine's order, each acknowledged."""
        while True:
            command = await queue.get()
            try:
                await driver.send(command)
            except DeviceUnavailable as error:
                # The driver has published DeviceLost; the engine holds the round if it matters.
                log.error(
                    "command_not_delivered",
                    device=driver.name,
                    command=type(command).__name__,
                    error=str(error),
                )

    def device_health(self) -> list[DeviceHealth]:
        """The panel's view of the links."""
        return [driver.health for driver in self.drivers.values()]

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
        )
        log.info("panel_listening", url=self.panel.url)
        print(f"panel: {self.panel.url}", file=self.out, flush=True)

    async def _finish_round(self) -> None:
        """Let the round in play close (the people at the table keep playing) for up to
        SHUTDOWN_GRACE_S; it closes when the queue's loop journals its closing."""
        if self._engine is None or self.journal_failure is not None:
            return  # a round cannot close without its journal
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        while self.round_in_play() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.round_in_play():
            log.warning("round_left_open", reason="shutdown: the round will be voided at the next start")

    def round_in_play(self) -> bool:
        live = self.engine.round
        return live is not None and not live.closed and self.engine.state not in ("idle", "held", "complete")

    async def _shutdown(self) -> None:
        if self._integrity_task is not None:
            # Cancelling the wait kills the check's child process (check_journal_in_process): it only
            # ever read the journal, through its own read-only connection.
            self._integrity_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._integrity_task
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        # What the loop had not reached yet is handled now (bounded), and everything committed.
        if self._engine is not None:
            self._drain_queue()
            self._journal_noise(self.noise.flush())  # nothing counted is left behind
            with contextlib.suppress(JournalError):  # logged, and the table is stopping anyway
                self._commit()
        if self.panel is not None:
            with contextlib.suppress(Exception):
                await self.panel.stop()
        for driver in self.drivers.values():
            await driver.stop()
        await asyncio.to_thread(self._stop_anchor_writer)
        if self._journal is not None and self._engine is not None:
            with contextlib.suppress(JournalError):
                self._append(
                    [JournalRecord.of("table_closed", {"by": "daemon", "reason": "shutdown"}, None, "engine")]
                )
        log.info("table_stopped", rounds=self.summary.rounds_closed)

    def _drain_queue(self) -> None:
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while not self.events.empty() and time.monotonic() < deadline:
            self._handle(self.events.get_nowait())
        while not self.events.empty():  # past the deadline: whoever waits is told
            left = self.events.get_nowait()
            if isinstance(left, _Waited) and not left.answer.done():
                left.answer.set_exception(JournalError("the table stopped before this was handled"))

    async def _watchdog(self, interval_s: float) -> None:
        while True:
            systemd.notify("WATCHDOG=1")
            await asyncio.sleep(interval_s)

    # --- outputs: the group commit (controller/journal/group_commit.py) ----------------------------
    # Each engine call's outputs wait in call order; a commit writes the records of everything waiting
    # in ONE transaction and only then acts on those calls' commands, alerts, logs and answers, in
    # order. "Journal first" holds for every command and every answer: nothing goes out before the
    # records of the engine call that decided it, and of every call before it, are committed. With
    # synchronous=FULL each commit is an fsync, done on the loop: a worker thread was measured and was
    # slower (its SQLite calls wait for the busy loop to let go of the GIL; docs/engine.md).
    #
    # When: at once when a call waiting has a command, an alert, a refusal or a caller waiting for its
    # answer; records alone as soon as the queue is idle unless a commit was made less than [journal]
    # commit_delay_ms ago, and at the latest commit_delay_ms after the oldest record waiting (the
    # committer's timer). A lone event is committed at once; a burst shares one fsync per delay.
    def _add(
        self,
        outputs: Sequence[Output],
        *,
        answer: asyncio.Future[list[Output]] | None = None,
        received_mono_s: float | None = None,
        urgent: bool = False,
    ) -> None:
        records = [item for item in outputs if isinstance(item, JournalRecord)]
        if self.journal_failure is not None:
            if answer is not None and not answer.done():
                answer.set_exception(JournalError(self.journal_failure))
            if records:
                log.critical("journal_failed_dropped", engine_calls=1, entries=len(records))
            return
        self._group.add(
            records,
            _Effect(outputs, answer),
            urgent=urgent or answer is not None or _urgent(outputs),
            received_s=received_mono_s,
        )

    async def _committer(self) -> None:
        """Commits records that wait while the queue stays busy, at the latest when they are due."""
        while True:
            await self._commit_wake.wait()
            self._commit_wake.clear()
            while (due_in_s := self._group.due_in_s(idle=self.events.empty())) is not None:
                if due_in_s > 0:
                    await asyncio.sleep(due_in_s)
                    continue
                self._commit()

    def _commit(self) -> None:
        """Commit every waiting call's records in one transaction, then act on each in order."""
        if not self._group.waiting:
            return
        try:
            committed: Committed[_Effect] = self._group.commit()
        except JournalError as error:
            self._journal_failed(error)
            return
        self.summary.commit_latencies_s.extend(committed.latencies_s)
        if committed.entries and self.panel is not None:
            self.panel.backend.notify()
        for effect in committed.effects:
            self._act_committed(effect.outputs)
            if effect.answer is not None and not effect.answer.done():
                effect.answer.set_result(list(effect.outputs))
        if any(entry.kind in CLOSING_KINDS for entry in committed.entries):
            self._keep_anchor(committed.entries[-1])

    def _append_records(self, records: Sequence[Any]) -> list[JournalEntry]:
        return self.journal.append_many(records)

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
                queue = self._command_queues.get(item.device)
                if queue is None:
                    log.error("command_for_unknown_device", device=item.device, command=type(item).__name__)
                else:
                    queue.put_nowait(item)
        for record in records:
            self._after_record(record)

    def _append(self, records: Sequence[JournalRecord]) -> None:
        """Outside the group commit: the daemon's own entries at start and at the very end."""
        if self.journal_failure is not None:
            raise JournalError(self.journal_failure)
        try:
            written = self.journal.append_many(records)
        except JournalError as error:
            self._journal_failed(error)
            raise
        if self.panel is not None:
            self.panel.backend.notify()
        if written:
            self._keep_anchor(written[-1])

    def _keep_anchor(self, last: JournalEntry) -> None:
        """The anchor beside the journal follows its head (controller/journal/anchor.py): after the
        table opens, at every round close and at shutdown. One that cannot be written stops the table
        as a journal failure does: entries lost after it could no longer be detected.

        While the table runs, the anchor is written by a thread of its own, in order (its two fsyncs
        took about a tenth of the loop's time at the benchmark's pace); it only ever names entries
        already committed, so writing it a moment later loses nothing."""
        anchor = Anchor.of(self.config.table_id, last.seq, last.hash)
        if self._anchor_writer is None:
            try:
                write_anchor(self.journal_path, anchor)
            except JournalError as error:
                self._journal_failed(error)
            return
        loop = asyncio.get_running_loop()
        written = self._anchor_writer.submit(write_anchor, self.journal_path, anchor)
        written.add_done_callback(lambda done: loop.call_soon_threadsafe(self._anchor_written, done))

    def _anchor_written(self, done: concurrent.futures.Future[None]) -> None:
        error = done.exception()
        if isinstance(error, JournalError) and self.journal_failure is None:
            self._journal_failed(error)
        elif error is not None:
            log.error("anchor_write_failed", error=repr(error))

    def _stop_anchor_writer(self) -> None:
        """Every anchor submitted is written before the last one (shutdown) is written here."""
        if self._anchor_writer is not None:
            self._anchor_writer.shutdown(wait=True)
            self._anchor_writer = None

    def _journal_failed(self, error: JournalError) -> None:
        # Nothing may happen at the table that the journal did not record: stop the table now, and
        # write nothing more (a later entry committed after a lost one would leave a hole in the
        # round: even if the journal works again a moment later, this run appends no more). What was
        # decided and not committed is dropped, never acted on; whoever waits for it is told. Open
        # rounds are voided with every wager returned at the next start.
        log.critical("journal_error", error=str(error))
        self.journal_failure = str(error)
        dropped = error.dropped if isinstance(error, CommitFailed) else self._group.fail(str(error))
        if dropped.effects:
            log.critical("journal_failed_dropped", engine_calls=len(dropped.effects), entries=dropped.entries)
        for effect in dropped.effects:
            if effect.answer is not None and not effect.answer.done():
                effect.answer.set_exception(JournalError(self.journal_failure))
        self._stopping = True
        self._stop.set()

    def _after_record(self, record: JournalRecord) -> None:
        if record.kind == "round_started":
            bind_round(record.round_id)
        if record.kind not in CLOSING_KINDS:
            return
        bind_round(None)
        self.summary.rounds_closed += 1
        status = record.kind.removeprefix("round_")
        if status == "settled":
            self.summary.rounds_settled += 1
        elif status == "dead":
            self.summary.rounds_dead += 1
        else:
            self.summary.rounds_voided += 1
        settlement: Mapping[str, Any] = record.payload.get("settlement", {})
        log.info(
            record.kind,
            round_id=record.round_id,
            banker_net=settlement.get("banker_net"),
            rake=settlement.get("rake"),
            rounds=self.summary.rounds_closed,
        )
        if self.options.print_rounds:
            for recalled in recall_from(self.journal, round_id=record.round_id):
                print(render_record(recalled), file=self.out, flush=True)
        every = self.options.integrity_every_rounds
        if every > 0 and self.summary.rounds_closed % every == 0:
            self._start_integrity_check()
        if self.options.rounds is not None and self.summary.rounds_closed >= self.options.rounds:
            self.request_stop()

    # --- the integrity watch (controller/integrity_watch.py) ---------------------------------------
    def _start_integrity_check(self) -> None:
        """Start a check in the background unless one is still running (then this one is skipped: the
        next comes N rounds later). Never stops the table."""
        if self._integrity_task is not None and not self._integrity_task.done():
            log.info("integrity_check_skipped", reason="the previous check is still running")
            return
        self._integrity_task = asyncio.get_running_loop().create_task(
            self.check_integrity(), name="integrity"
        )

    async def check_integrity(self) -> None:
        """One check: the journal's last WINDOW_ROUNDS closed rounds in a child process (its own
        read-only connection; killed if the daemon stops first), the verdict logged, and an ``integrity``
        alert raised on the queue when the verdict turns to alarm (not again while it stays one)."""
        started_s = time.monotonic()
        try:
            verdict = await check_journal_in_process(self.journal_path, WINDOW_ROUNDS)
        except Exception as error:  # a failed check is logged; it must never stop the table
            log.error("integrity_check_failed", error=f"{type(error).__name__}: {error}")
            return
        say = log.warning if verdict.alarm else log.info
        say(
            "integrity_checked",
            status=verdict.status,
            summary=verdict.summary,
            rounds_checked=verdict.rounds_checked,
            rounds_skipped=verdict.rounds_skipped,
            tests=len(verdict.tests),
            flagged=[test.name for test in verdict.tests if test.flagged],
            elapsed_s=round(time.monotonic() - started_s, 3),
        )
        detail = alert_for_verdict(verdict, self.integrity_status)
        self.integrity_status = verdict.status
        if detail is not None:
            with contextlib.suppress(JournalError):  # logged where it failed, and the table stopped
                await self.perform(RaiseAlert("integrity", detail, by="integrity"))


async def run_table(config: TableConfig, options: RunOptions, *, out: TextIO | None = None) -> RunSummary:
    """The daemon on a table of real devices, to the end."""
    daemon = TableDaemon(config, options, out=out)
    await daemon.run()
    return daemon.summary


__all__ = [
    "AdoptClear",
    "DeviceLinks",
    "QueuedTableActions",
    "RaiseAlert",
    "RunOptions",
    "RunSummary",
    "TableClock",
    "TableDaemon",
    "engine_config_for",
    "run_table",
]
