"""The table daemon: `flushtable run`. One asyncio process around the synchronous table engine.

    devices --(drivers)--> one event queue --> TableEngine.handle --> outputs
    outputs: JournalRecord -> journal (committed first)   commands -> per-device send queues
             Alert/Refused -> log (the panel reads the journal)

The engine is a pure, synchronous core (controller/engine/); everything that waits lives here: reading
the drivers, sending commands, the decision clock, the simulated players, signals and the panel. Every
engine call's journal records are committed (one transaction) **before** any command of that call goes
out, so the journal always holds a decision before the table acts on it; a crash between the two leaves
an open round, which recovery voids at the next start with every wager returned.

Time: the engine is fed ``now_s``, the table clock. Normally that is the wall clock; with
``time_scale`` > 1 (accelerated runs: soak, bench) the table clock runs faster, so decision timeouts
and the like pass in a fraction of the time. Device links keep their own protocol clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import signal
import sys
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import structlog

from controller import systemd
from controller.config import Device, TableConfig
from controller.engine import Alert, JournalRecord, Refused, TableEngine
from controller.engine import TableConfig as EngineConfig
from controller.engine.autoplay import AutoPlayer, PlaceChips, PressKey
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
from controller.uplink.config import UplinkConfig
from controller.uplink.uplink import start_uplink
from drivers.events import CardDealt, DealerKey, DomainCommand, DomainEvent, HandComplete, SecurityEvent
from drivers.factory import make_driver
from drivers.supervisor import DeviceDriver, DeviceHealth, DeviceUnavailable, DriverTiming
from sim_devices.bet_sensors import SimulatedBetSensors
from sim_devices.dealer_display import SimulatedDealerDisplay
from sim_devices.firmware import LinkTiming, SimulatedDevice
from sim_devices.noise import NoiseRates
from sim_devices.remote import RemoteSimError, RemoteSimTable
from sim_devices.scenario import Scenario, ScenarioError, load_scenario, play
from sim_devices.shuffler import SimulatedShuffler
from sim_devices.table import SimDeviceSpec, SimTable, TransportKind

log = structlog.get_logger("flushtable.daemon")

TICK_INTERVAL_S = 0.1  # how often the decision clock is checked (table-clock timeouts are seconds)
MIN_TICK_INTERVAL_S = 0.005  # the most often it is checked on an accelerated clock
DEVICE_READY_TIMEOUT_S = 15.0
SHUTDOWN_GRACE_S = 20.0  # SIGTERM: how long a round in play may take to finish before we stop anyway
JOURNAL_WATCH_INTERVAL_S = 0.25  # how often the journal is read for clearings other processes wrote
AUTOPLAY_SETTLE_S = 2.0  # the longest the simulated people wait to see their last action land
SIM_FIRMWARE: dict[str, type[SimulatedDevice]] = {
    "shuffler": SimulatedShuffler,
    "bet_sensors": SimulatedBetSensors,
    "dealer_display": SimulatedDealerDisplay,
}
SIM_SUPERVISOR = "sim-supervisor"  # who clears latched faults in simulations (sim_supervisor_clear_after_s)
SIM_SCHEMES: dict[str, TransportKind] = {"sim": "sim", "sim+pty": "pty", "sim+tcp": "tcp", "sim+usb": "usb"}


@dataclass(frozen=True, slots=True)
class RunOptions:
    """`flushtable run`'s options, after the command line."""

    journal_path: Path | None = None  # overrides the configuration's
    rounds: int | None = None  # play this many rounds (closed: settled, dead or voided), then exit 0
    seed: int | None = None  # reproducible shuffles and simulated players
    autoplay: bool | None = None  # None: on when every device is simulated
    panel_bind: tuple[str, int] | None = None  # None: no panel
    time_scale: float = 1.0  # > 1: accelerated table clock and instant dealing (bench, soak)
    card_interval_s: float | None = None  # the simulated shoe's pace per card; None: by time_scale
    pace_s: float | None = None  # the simulated people's pause between actions; None: by time_scale
    print_rounds: bool = True  # print each closed round readably on standard output
    # The integrity watch: check the journal's last rounds after every N closed rounds; 0: never.
    integrity_every_rounds: int = DEFAULT_EVERY_ROUNDS
    on_ready: Callable[[TableDaemon], None] | None = None  # tests and benches: called once running
    # Simulation only (tests, soak, `flushtable run --scenario`): a scenario file played on the
    # simulated devices (sim_devices/scenario.py), and a simulated supervisor who clears every latched
    # fault this many (wall) seconds after it latched. Never set on a real table: latched faults are a
    # person's to clear.
    scenario_path: Path | None = None
    sim_supervisor_clear_after_s: float | None = None
    sim_noise: NoiseRates | None = None  # line noise on every simulated device's line (soak)
    # Simulation only: the simulated devices in a child process of their own (sim_devices/remote.py), on
    # the other core as real devices are on their own processors (bench/bench_table.py
    # --devices-process). Pseudo-terminal and TCP devices only; no scenario, and no technician who
    # resets a device by hand (the simulated supervisor still clears latched faults).
    sim_devices_process: bool = False
    # Group commit: how long records that release no command may wait to share an fsync; None: the
    # configuration's [journal] commit_delay_ms.
    commit_delay_s: float | None = None
    noise_clock: Callable[[], float] | None = None  # tests: the noise budget's clock; None: monotonic
    # `flushtable run --new-journal`: start a new journal where none with content exists (controller/
    # journal/proof.py); without it a missing or empty journal is refused where its anchor names entries.
    new_journal: bool = False
    uplink: UplinkConfig | None = None  # the table's [uplink] (docs/floor.md); None: no floor


@dataclass(slots=True)
class RunSummary:
    rounds_closed: int = 0
    rounds_settled: int = 0
    rounds_dead: int = 0
    rounds_voided: int = 0
    recovered_voided: list[str] = field(default_factory=list)
    commit_latencies_s: list[float] = field(default_factory=list)


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
        house_may_bank=config.banking.house_banks_when_nobody_accepts,
        decision_timeout_s=config.timeouts.decision_s,
        # The shoe's silence is device time, not table time: on an accelerated clock an unscaled deal
        # timeout would pass in milliseconds and kill healthy deals.
        deal_timeout_s=config.timeouts.deal_s * time_scale,
        config_digest=config.digest,
        shuffler_device=device_name("shuffler", "shuffler"),
        sensors_device=device_name("bet_sensors", "sensors"),
        display_device=device_name("dealer_display", "display"),
    )


class TableDaemon:
    """One table: its journal, engine, devices (and their simulated twins), players and panel."""

    def __init__(self, config: TableConfig, options: RunOptions, *, out: TextIO | None = None) -> None:
        self.config = config
        self.options = options
        self.out = out if out is not None else sys.stdout
        self.journal_path = options.journal_path or config.journal_path
        self.summary = RunSummary()
        self.events: asyncio.Queue[object] = asyncio.Queue()
        self.drivers: dict[str, DeviceDriver] = {}
        self.sim_table: SimTable | RemoteSimTable | None = None
        self.panel: Any = None
        self._command_queues: dict[str, asyncio.Queue[DomainCommand]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()
        self._stopping = False
        self._rng = random.Random(options.seed)
        self._clock_origin_wall_s = time.time()
        self._clock_origin_mono_s = time.monotonic()
        self._journal: Journal | None = None
        self._engine: TableEngine | None = None
        self._autoplay_wake = asyncio.Event()
        self._autoplay_expect: list[tuple[int, int, int]] = []  # (seat, spot, cents) not yet reported
        self._event_received_mono_s: dict[int, float] = {}
        self._dealer_keys_handled = 0  # the autoplay waits for its key presses to land
        self._uncommitted: list[tuple[list[Output], float | None]] = []  # the group commit's queue
        self._commit_wake = asyncio.Event()  # something waits to be committed
        self._commit_now = asyncio.Event()  # ... and something waiting releases a command or an alert
        self._committer_task: asyncio.Task[None] | None = None
        self._scenario: Scenario | None = None
        self._watched_seq = 0  # the journal watch has read every entry up to here
        self.failure: str | None = None  # why the daemon stopped on an error, if it did
        self.journal_failure: str | None = None  # the journal refused an append: nothing more is written
        self._integrity_task: asyncio.Task[None] | None = None
        self.integrity_status: str | None = None  # the last integrity verdict's status this run
        # Forged and replayed frames (security events) per device within a budget (journal/noise.py).
        self.noise = NoiseBudget()
        self._noise_clock = options.noise_clock or time.monotonic

    # --- the table clock ---------------------------------------------------------------------------------
    def now_s(self) -> float:
        elapsed_s = time.monotonic() - self._clock_origin_mono_s
        return self._clock_origin_wall_s + elapsed_s * self.options.time_scale

    @property
    def engine(self) -> TableEngine:
        assert self._engine is not None, "the engine starts in run()"
        return self._engine

    @property
    def journal(self) -> Journal:
        assert self._journal is not None, "the journal opens in run()"
        return self._journal

    @property
    def simulated(self) -> bool:
        return all(device.simulated for device in self.config.devices.values())

    # --- start and stop -------------------------------------------------------------------------------
    async def run(self) -> int:
        bind_table(self.config.table_id)
        self._load_scenario()
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
                engine_config_for(self.config, time_scale=self.options.time_scale),
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
            try:
                self._spawn(self._committer(), "committer")
                self._committer_task = self._tasks[-1]
                await self._start_devices()
                await self._start_panel()
                self._spawn(self._engine_loop(), "engine")
                self._spawn(self._ticker(), "ticker")
                self._spawn(self._journal_watch(), "journal-watch")
                if self.options.uplink is not None:  # [uplink]: the journal streamed to the floor
                    uplink = start_uplink(
                        self.journal_path, self.config.table_id, self.options.uplink, self._stop
                    )
                    self._spawn(uplink, "uplink")
                if self._autoplay_enabled():
                    self._spawn(self._autoplay_loop(), "autoplay")
                if self._scenario is not None and isinstance(self.sim_table, SimTable):
                    self._spawn(play(self._scenario, self.sim_table.devices), "scenario")
                if self.options.sim_supervisor_clear_after_s is not None:
                    self._spawn(self._sim_supervisor(self.options.sim_supervisor_clear_after_s), "supervisor")
                watchdog_s = systemd.watchdog_interval_s()
                if watchdog_s is not None:
                    self._spawn(self._watchdog(watchdog_s), "watchdog")
                systemd.notify("READY=1")
                log.info("table_running", journal=str(self.journal_path), game=self.config.game)
                if self.options.on_ready is not None:
                    self.options.on_ready(self)
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
        if self.failure is not None:
            raise UserError(f"the table stopped on an internal error: {self.failure} (see the log)")
        return 0

    def _load_scenario(self) -> None:
        """Check the scenario file whole before anything starts (simulated devices only)."""
        if self.options.scenario_path is None:
            return
        if self.options.sim_devices_process:
            raise UserError("--scenario: a scenario plays on devices in the daemon's own process")
        kinds = {
            device.name: SIM_FIRMWARE[device.kind]
            for device in self.config.devices.values()
            if device.simulated
        }
        try:
            self._scenario = load_scenario(self.options.scenario_path, kinds)
        except ScenarioError as error:
            raise UserError(f"--scenario: {error}") from None

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

    def _autoplay_enabled(self) -> bool:
        if self.options.autoplay is not None:
            return self.options.autoplay and self.sim_table is not None
        return self.simulated and self.sim_table is not None

    async def _start_devices(self) -> None:
        scale = self.options.time_scale
        sim_devices = [device for device in self.config.devices.values() if device.simulated]
        keys: dict[str, bytes] = {}
        for device in self.config.devices.values():
            # A simulated device with no key gets a fresh random one per run, shared with its driver.
            keys[device.name] = device.key if device.key is not None else secrets.token_bytes(32)
        if sim_devices:
            card_interval_s = self.options.card_interval_s
            if card_interval_s is None:
                card_interval_s = 0.0 if scale > 1 else 0.03
            specs = [
                SimDeviceSpec(
                    name=device.name,
                    kind=device.kind,
                    key=keys[device.name],
                    transport=SIM_SCHEMES[device.url.split("://", 1)[0]],
                    seats=self.config.seats,
                    spots=4,
                    card_interval_s=card_interval_s if device.kind == "shuffler" else 0.0,
                )
                for device in sim_devices
            ]
            run_dir = self.journal_path.parent / "devices"
            if self.options.sim_devices_process:
                self.sim_table = RemoteSimTable(
                    specs, run_dir=run_dir, seed=self.options.seed, noise=self.options.sim_noise
                )
                try:
                    await self.sim_table.start()
                except RemoteSimError as error:
                    raise UserError(f"the simulated devices' process: {error}") from None
            else:
                self.sim_table = SimTable(
                    specs,
                    run_dir=run_dir,
                    seed=self.options.seed,
                    timing=LinkTiming(),
                    noise=self.options.sim_noise,
                )
                await self.sim_table.start()
        for device in self.config.devices.values():
            url = self._device_url(device)
            driver = make_driver(
                device.name,
                device.kind,
                url,
                keys[device.name],
                publish=self._publish,
                timing=DriverTiming(),
                usb_backend=self.sim_table.usb_backend if isinstance(self.sim_table, SimTable) else None,
                sim_hub=self.sim_table.sim_hub if isinstance(self.sim_table, SimTable) else None,
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
        for device in self.config.devices.values():
            where = self._device_url(device)
            log.info("device_listening", device=device.name, kind=device.kind, url=where)
        try:
            await asyncio.gather(
                *(driver.wait_ready(DEVICE_READY_TIMEOUT_S) for driver in self.drivers.values())
            )
        except TimeoutError:
            missing = [name for name, driver in self.drivers.items() if not driver.ready]
            # Not fatal: a device may come later. The engine starts no round while one is lost.
            log.warning("devices_not_ready", devices=missing, timeout_s=DEVICE_READY_TIMEOUT_S)

    def _device_url(self, device: Device) -> str:
        if device.simulated and self.sim_table is not None:
            return self.sim_table.url(device.name)
        return device.url

    async def _start_panel(self) -> None:
        if self.options.panel_bind is None:
            return
        # The web stack loads only when a panel is wanted.
        from controller.panel.embed import start_panel  # noqa: PLC0415
        from controller.panel.engine_actions import EngineTableActions  # noqa: PLC0415

        host, port = self.options.panel_bind
        self.panel = await start_panel(
            self.journal,
            bind=f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
            users_file=self.journal_path.parent / "panel-users.json",
            config_users=self.config.panel.users,
            actions=EngineTableActions(self.engine, now_s=self.now_s, perform=self.act_and_commit),
            device_health=self.device_health,
        )
        log.info("panel_listening", url=self.panel.url)
        print(f"panel: {self.panel.url}", file=self.out, flush=True)

    async def _finish_round(self) -> None:
        """Let the round in play close (the simulated people keep playing) for up to SHUTDOWN_GRACE_S."""
        if self._engine is None or self.journal_failure is not None:
            return  # a round cannot close without its journal
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        while self._round_in_play() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self._round_in_play():
            log.warning("round_left_open", reason="shutdown: the round will be voided at the next start")

    def _round_in_play(self) -> bool:
        live = self.engine.round
        return live is not None and not live.closed and self.engine.state not in ("idle", "held", "complete")

    async def _shutdown(self) -> None:
        if self._integrity_task is not None:
            # Only the wait is cancelled: a check already in its worker thread finishes on its own
            # (bounded: WINDOW_ROUNDS rounds) on its own read-only connection.
            self._integrity_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._integrity_task
        # Everything but the committer first; then what waits is committed, then the committer goes.
        others = [task for task in self._tasks if task is not self._committer_task]
        for task in others:
            task.cancel()
        for task in others:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._journal_noise(self.noise.flush())  # nothing counted is left behind
        committer = self._committer_task
        if committer is not None and not committer.done():
            await self._drain_commits()
            committer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await committer
        self._tasks.clear()
        if self.panel is not None:
            with contextlib.suppress(Exception):
                await self.panel.stop()
        for driver in self.drivers.values():
            await driver.stop()
        if self.sim_table is not None:
            await self.sim_table.stop()
        if self._journal is not None and self._engine is not None:
            with contextlib.suppress(JournalError):
                self._append(
                    [JournalRecord.of("table_closed", {"by": "daemon", "reason": "shutdown"}, None, "engine")]
                )
        log.info("table_stopped", rounds=self.summary.rounds_closed)

    # --- events in ---------------------------------------------------------------------------------------
    def _publish(self, event: DomainEvent) -> None:
        """A driver's domain event: onto the one queue (called on the loop's thread)."""
        self._event_received_mono_s[id(event)] = time.monotonic()
        self.events.put_nowait(event)

    async def _engine_loop(self) -> None:
        while True:
            item = await self.events.get()
            received = self._event_received_mono_s.pop(id(item), None)
            if isinstance(item, SecurityEvent) and not self._admit_security_event(item):
                continue
            state_before = self.engine.state
            self.act_now(self.engine.handle(item, self.now_s()), received_mono_s=received)
            if isinstance(item, DealerKey):
                self._dealer_keys_handled += 1
            # The simulated people look again after anything they could act on; not after each of a
            # deal's 50-odd cards (that was 150 wake-ups a round), unless the deal changed the state.
            if not isinstance(item, CardDealt | HandComplete) or self.engine.state != state_before:
                self._autoplay_wake.set()

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
            self.act_now(
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

    async def _ticker(self) -> None:
        # On an accelerated clock the decision timeouts are that much shorter in wall time: check them
        # as much more often (down to MIN_TICK_INTERVAL_S), or each walk-away costs a whole tick.
        interval_s = max(MIN_TICK_INTERVAL_S, TICK_INTERVAL_S / max(self.options.time_scale, 1.0))
        while True:
            await asyncio.sleep(interval_s)
            self._journal_noise(self.noise.due(self._noise_clock()))
            outputs = self.engine.tick(self.now_s())
            if outputs:
                self.act_now(outputs)
                # A walk-away fold can close the decisions: the simulated people look again now, not
                # at the end of their 0.2 s nap (that nap cost 170 ms of every round with a walk-away).
                self._autoplay_wake.set()

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
                self.act_now(self.engine.adopt_clear(fault_id, self.now_s(), by, reason))
                self._autoplay_wake.set()

    async def _sim_supervisor(self, clear_after_s: float) -> None:
        """Simulations only: a supervisor who clears each latched fault ``clear_after_s`` after seeing it,
        and a technician who resets a simulated device left in fault (a shoe after its red light stays
        in fault until someone resets it by hand; the table starts no round until then)."""
        first_seen_mono_s: dict[str, float] = {}
        while True:
            await asyncio.sleep(min(TICK_INTERVAL_S, clear_after_s) or TICK_INTERVAL_S)
            now_mono_s = time.monotonic()
            if isinstance(self.sim_table, SimTable):
                for name, device in self.sim_table.devices.items():
                    if device.state != "fault":
                        first_seen_mono_s.pop(f"device:{name}", None)
                    elif (
                        now_mono_s - first_seen_mono_s.setdefault(f"device:{name}", now_mono_s)
                        >= clear_after_s
                    ):
                        device.set_status("ready")  # the reset button on the device itself
            for fault_id in list(self.engine.latched):
                seen_s = first_seen_mono_s.setdefault(fault_id, now_mono_s)
                if now_mono_s - seen_s >= clear_after_s and fault_id in self.engine.latched:
                    reason = "simulated supervisor: cleared after the configured delay"
                    self.act_now(self.engine.clear_fault(fault_id, self.now_s(), SIM_SUPERVISOR, reason))
                    self._autoplay_wake.set()

    async def _watchdog(self, interval_s: float) -> None:
        while True:
            systemd.notify("WATCHDOG=1")
            await asyncio.sleep(interval_s)

    # --- outputs -------------------------------------------------------------------------------------
    # Group commit. Each engine call's outputs wait in ``_uncommitted`` in call order; the committer task
    # writes the records of everything waiting in ONE transaction and only then acts on those calls'
    # commands, alerts and logs, in order. "Journal first" holds for every command: nothing goes out
    # before the records of the engine call that decided it, and of every call before it, are
    # committed. With synchronous=FULL each commit is an fsync, and the fsync holds the event loop.
    #
    # When to commit: at once when a waiting call has a command, an alert or a refusal to act on (the
    # table waits for it). Calls with journal records only (a card dealt, chips moved) wait up to
    # ``commit_delay_s`` for more to share their fsync: a deal is a stream of such events, and
    # committing each alone cost an fsync per card. Nothing acts on a record before its commit, so the
    # delay adds latency (bounded: the event-to-commit p99 target is 10 ms) and never loses an entry.
    # (A writer thread was measured too: its commits lose the GIL to the busy loop at every SQLite call
    # and the event-to-commit p99 went to 17-35 ms. bench/bench_table.py; figures in docs/operations.md.)
    def act_now(self, outputs: Sequence[Output], *, received_mono_s: float | None = None) -> None:
        """Act on one engine call's outputs: journal first (committed with the calls waiting before and
        with it, in one transaction), then its commands, alerts and logs."""
        waiting = list(outputs)
        if self.journal_failure is not None:
            if waiting:  # the table is stopping: decided, never journaled, never acted on
                self._uncommitted.append((waiting, received_mono_s))
                self._drop_uncommitted()
            return
        self._uncommitted.append((waiting, received_mono_s))
        self._commit_wake.set()
        if any(not isinstance(item, JournalRecord) for item in waiting):
            self._commit_now.set()

    def act_and_commit(self, outputs: Sequence[Output]) -> None:
        """act_now, committed before returning: for operator actions (the panel answers "done" only
        once the journal holds the action's effect) and other rare, synchronous callers."""
        self.act_now(outputs)
        self._commit_pending()

    async def _committer(self) -> None:
        delay_s = self.options.commit_delay_s
        if delay_s is None:
            delay_s = self.config.journal_commit_delay_ms / 1000
        while True:
            await self._commit_wake.wait()
            if delay_s > 0 and not self._commit_now.is_set():
                # Records only: let more join this fsync, unless a call with a command comes first.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay_s):
                        await self._commit_now.wait()
            self._commit_pending()

    def _commit_pending(self) -> None:
        """Commit every waiting engine call's records in one transaction, then act on each in order."""
        self._commit_wake.clear()
        self._commit_now.clear()
        if self.journal_failure is not None:
            self._drop_uncommitted()
            raise JournalError(self.journal_failure)
        while self._uncommitted:
            batch, self._uncommitted = self._uncommitted, []
            records = [item for outputs, _ in batch for item in outputs if isinstance(item, JournalRecord)]
            written: list[JournalEntry] = []
            if records:
                try:
                    written = self.journal.append_many(records)
                except JournalError as error:
                    self._journal_failed(error)
                    raise
                if self.panel is not None:
                    self.panel.backend.notify()
            committed_mono_s = time.monotonic()
            for outputs, received_mono_s in batch:
                if received_mono_s is not None and any(isinstance(item, JournalRecord) for item in outputs):
                    self.summary.commit_latencies_s.append(committed_mono_s - received_mono_s)
                self._act_committed(outputs)
            if any(record.kind in CLOSING_KINDS for record in records):
                self._keep_anchor(written[-1])

    async def _drain_commits(self, timeout_s: float = 10.0) -> None:
        """Shutdown: let the committer write what waits (bounded), before it is cancelled."""
        deadline = time.monotonic() + timeout_s
        while self._uncommitted and self.journal_failure is None and time.monotonic() < deadline:
            self._commit_wake.set()
            await asyncio.sleep(0.005)

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
        as a journal failure does: entries lost after it could no longer be detected."""
        try:
            write_anchor(self.journal_path, Anchor.of(self.config.table_id, last.seq, last.hash))
        except JournalError as error:
            self._journal_failed(error)

    def _journal_failed(self, error: JournalError) -> None:
        # Nothing may happen at the table that the journal did not record: stop the table now, and
        # write nothing more (a later entry committed after a lost one would leave a hole in the
        # round: even if the journal works again a moment later, this run appends no more). What was
        # decided and not committed is dropped, never acted on. Open rounds are voided with every
        # wager returned at the next start.
        log.critical("journal_error", error=str(error))
        self.journal_failure = str(error)
        self._drop_uncommitted()
        self._stopping = True
        self._stop.set()

    def _drop_uncommitted(self) -> None:
        if self._uncommitted:
            calls = len(self._uncommitted)
            entries = sum(
                isinstance(item, JournalRecord) for outputs, _ in self._uncommitted for item in outputs
            )
            self._uncommitted = []
            log.critical("journal_failed_dropped", engine_calls=calls, entries=entries)

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
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the daemon's loop (a test feeding act_now directly): no watch
            return
        self._integrity_task = loop.create_task(self.check_integrity(), name="integrity")

    async def check_integrity(self) -> None:
        """One check: the journal's last WINDOW_ROUNDS closed rounds in a child process (its own
        read-only connection; killed if the daemon stops first), the verdict logged, and an ``integrity``
        alert raised through the engine when the verdict turns to alarm (not again while it stays
        one)."""
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
        if detail is not None and self._engine is not None:
            with contextlib.suppress(JournalError):  # _append has logged it and stopped the table
                alert = self.engine.raise_alert("integrity", detail, self.now_s(), by="integrity")
                self.act_and_commit(alert)

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

    # --- the panel's view ------------------------------------------------------------------------------
    def device_health(self) -> list[DeviceHealth]:
        return [driver.health for driver in self.drivers.values()]

    # --- the simulated people ----------------------------------------------------------------------------
    def _pace_s(self) -> float:
        if self.options.pace_s is not None:
            return self.options.pace_s
        return 0.0 if self.options.time_scale > 1 else 0.25

    async def _autoplay_loop(self) -> None:
        assert self.sim_table is not None
        player = AutoPlayer(random.Random(self._rng.random()))
        sensors = self.sim_table.bet_sensors(self.engine.config.sensors_device)
        display = self.sim_table.dealer_display(self.engine.config.display_device)
        while True:
            await self._await_last_actions()
            if self._stopping and not self._round_in_play() and self.engine.state in ("idle", "complete"):
                await asyncio.sleep(0.05)
                continue
            if not self.engine.table_open and self.engine.state == "idle":
                await self._wait_for_news(0.2)  # a closed table: the players wait for a manager
                continue
            state_before = self.engine.state
            actions = player.next_actions(self.engine)
            if not actions:
                await self._wait_for_news(0.2)
                continue
            keys_pressed = 0
            state_key_pressed = False
            for action in actions:
                if isinstance(action, PlaceChips):
                    sensors.place(action.seat, action.spot, action.amount_cents)
                    self._autoplay_expect.append((action.seat, action.spot, action.amount_cents))
                elif isinstance(action, PressKey):
                    display.press(action.key, action.seat)
                    keys_pressed += 1
                    # fold_seat changes no state: waiting for one cost AUTOPLAY_SETTLE_S per fold.
                    state_key_pressed = state_key_pressed or action.key != "fold_seat"
                else:
                    self.act_now(self.engine.handle(action, self.now_s()))
            if keys_pressed:
                await self._await_keys_handled(keys_pressed)
            if state_key_pressed:
                await self._await_state_change(state_before)
            if self._pace_s():
                await asyncio.sleep(self._pace_s())

    async def _await_last_actions(self) -> None:
        """Wait (bounded) until the chips the simulated players placed are what the engine has seen."""
        deadline = time.monotonic() + AUTOPLAY_SETTLE_S
        while self._autoplay_expect and time.monotonic() < deadline:
            spots = self.engine.spots
            self._autoplay_expect = [
                (seat, spot, cents)
                for seat, spot, cents in self._autoplay_expect
                if spots.get((seat, spot), 0) != cents
            ]
            if not self._autoplay_expect:
                break
            await self._wait_for_news(0.05)
        self._autoplay_expect.clear()

    async def _wait_for_news(self, timeout_s: float) -> None:
        """Until the engine handles something, or ``timeout_s``. (asyncio.timeout, not wait_for: in 3.11
        wait_for can swallow a cancellation, and a task that cannot be cancelled hangs the shutdown.)"""
        self._autoplay_wake.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._autoplay_wake.wait()

    async def _await_keys_handled(self, keys_pressed: int) -> None:
        """Wait (bounded) until the engine has handled the keys just pressed (a fold lands before the
        next look at the table, so it is not pressed twice)."""
        target = self._dealer_keys_handled + keys_pressed
        deadline = time.monotonic() + AUTOPLAY_SETTLE_S
        while self._dealer_keys_handled < target and time.monotonic() < deadline:
            await self._wait_for_news(0.05)

    async def _await_state_change(self, state_before: str) -> None:
        deadline = time.monotonic() + AUTOPLAY_SETTLE_S
        while self.engine.state == state_before and time.monotonic() < deadline:
            await self._wait_for_news(0.05)


async def run_table(config: TableConfig, options: RunOptions, *, out: TextIO | None = None) -> RunSummary:
    daemon = TableDaemon(config, options, out=out)
    await daemon.run()
    return daemon.summary


__all__ = ["RunOptions", "RunSummary", "TableDaemon", "engine_config_for", "run_table"]
