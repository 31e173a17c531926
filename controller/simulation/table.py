"""A simulated table: the production daemon (controller/daemon.py) wrapped with simulated devices and
the simulated people at the table. `flushtable run` on a configuration with simulated devices (the
embedded default: `make run`), the tests, the soak and the benchmarks.

    SimulatedTable.run():  serve the simulated devices (sim_devices/)  ->  TableDaemon.run() with
        DeviceLinks to them, a TableClock (accelerated with time_scale > 1), and companions:
        the players and dealer (autoplay), a scenario file, a supervisor who clears latched faults
    -> stop the devices once the daemon has stopped its drivers.

The harness acts on the table only as any other caller does: devices are reached by the drivers over
their ports, the people's chips and keys go through the simulated devices, and the few operator actions
(the designated player accepts the button, the simulated supervisor clears a fault) go on the daemon's
one queue (``TableDaemon.perform``). Nothing in the daemon knows it is simulated.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import structlog

from controller.config import TableConfig
from controller.daemon import DeviceLinks, RunOptions, RunSummary, TableClock, TableDaemon
from controller.engine import actions as a
from controller.errors import UserError
from controller.journal.store import JournalError
from controller.simulation.autoplay import AutoPlayer, PlaceChips, PressKey
from controller.simulation.scenario import load_scenario, sensor_spots
from drivers.events import CardDealt, DealerKey, HandComplete
from sim_devices.bet_sensors import SimulatedBetSensors
from sim_devices.dealer_display import SimulatedDealerDisplay
from sim_devices.firmware import SimulatedDevice
from sim_devices.noise import NoiseRates
from sim_devices.remote import RemoteSimError, RemoteSimTable
from sim_devices.scenario import Scenario, play
from sim_devices.shuffler import SimulatedShuffler
from sim_devices.table import SimDeviceSpec, SimTable, TransportKind

log = structlog.get_logger("flushtable.simulation")

SIM_FIRMWARE: dict[str, type[SimulatedDevice]] = {
    "shuffler": SimulatedShuffler,
    "bet_sensors": SimulatedBetSensors,
    "dealer_display": SimulatedDealerDisplay,
}
SIM_SCHEMES: dict[str, TransportKind] = {"sim": "sim", "sim+pty": "pty", "sim+tcp": "tcp", "sim+usb": "usb"}
SIM_SUPERVISOR = "sim-supervisor"  # who clears latched faults in simulations (supervisor_clear_after_s)
SUPERVISOR_LOOK_S = 0.1  # how often the simulated supervisor looks at the table
AUTOPLAY_SETTLE_S = 2.0  # the longest the simulated people wait to see their last action land
AUTOPLAY_NAP_S = 0.2  # the people look again after this long when nothing happens at the table
STOPPING_NAP_S = 0.05


@dataclass(frozen=True, slots=True)
class SimulationOptions:
    """What a simulation sets beyond what an operator sets (RunOptions)."""

    seed: int | None = None  # reproducible shuffles and simulated players
    autoplay: bool | None = None  # None: on when every device is simulated
    time_scale: float = 1.0  # > 1: accelerated table clock and instant dealing (bench, soak)
    card_interval_s: float | None = None  # the simulated shoe's pace per card; None: by time_scale
    pace_s: float | None = None  # the simulated people's pause between actions; None: by time_scale
    # A scenario file played on the simulated devices (sim_devices/scenario.py).
    scenario_path: Path | None = None
    # A simulated supervisor clears every latched fault this many (wall) seconds after it latched, and
    # a technician resets a simulated device left in fault. Latched faults on a real table are a
    # person's to clear: simulations only.
    supervisor_clear_after_s: float | None = None
    noise: NoiseRates | None = None  # line noise on every simulated device's line (soak)
    # The simulated devices in a child process of their own (sim_devices/remote.py), on the other core
    # as real devices are on their own processors (bench/bench_table.py --devices-process). Pseudo-
    # terminal and TCP devices only; no scenario, and no technician who resets a device by hand (the
    # simulated supervisor still clears latched faults).
    devices_process: bool = False
    # How often a simulated player walks away from a decision (the table then waits the whole decision
    # timeout, 30 s by default). 0 unless asked for (a soak, `--sim-walk-away-rate`): the demo must not
    # stall on them; a scenario file still plays its own walk-aways.
    walk_away_rate: float = 0.0


class SimulatedTable:
    """The daemon of ``config`` with its simulated devices and people (see the module docstring)."""

    def __init__(  # noqa: PLR0913 - keyword-only options of a simulated table, each a command-line option
        self,
        config: TableConfig,
        options: RunOptions,
        simulation: SimulationOptions,
        *,
        out: TextIO | None = None,
        on_ready: Callable[[SimulatedTable], None] | None = None,
        companions: Sequence[Callable[[SimulatedTable], Coroutine[Any, Any, None]]] = (),
        commit_delay_s: float | None = None,
        noise_clock: Callable[[], float] | None = None,
    ) -> None:
        """``on_ready`` and ``companions`` (tasks of the test or bench) get this harness once the table
        runs; the daemon is ``self.daemon``, the devices ``self.devices``."""
        self.config = config
        self.simulation = simulation
        self.devices: SimTable | RemoteSimTable | None = None
        self._scenario: Scenario | None = None
        self._rng = random.Random(simulation.seed)
        self._keys_handled = 0  # dealer keys the engine has handled (the people wait for theirs)
        self._people_wake = asyncio.Event()
        self._chips_expected: list[tuple[int, int, int]] = []  # (seat, spot, cents) not yet reported
        runners: list[Callable[[TableDaemon], Coroutine[Any, Any, None]]] = []
        if self._autoplay_enabled():
            runners.append(self._autoplay)
        if simulation.supervisor_clear_after_s is not None:
            runners.append(self._supervisor)
        runners.extend(self._for_daemon(companion) for companion in companions)
        self.daemon = TableDaemon(
            config,
            options,
            out=out,
            clock=TableClock(scale=simulation.time_scale),
            companions=runners,
            on_ready=None if on_ready is None else (lambda _daemon: on_ready(self)),
            commit_delay_s=commit_delay_s,
            noise_clock=noise_clock,
        )
        self.daemon.add_listener(self._handled)

    def _for_daemon(
        self, companion: Callable[[SimulatedTable], Coroutine[Any, Any, None]]
    ) -> Callable[[TableDaemon], Coroutine[Any, Any, None]]:
        def start(_daemon: TableDaemon) -> Coroutine[Any, Any, None]:
            return companion(self)

        start.__name__ = getattr(companion, "__name__", "companion")
        return start

    @property
    def summary(self) -> RunSummary:
        return self.daemon.summary

    @property
    def simulated(self) -> bool:
        return all(device.simulated for device in self.config.devices.values())

    def _autoplay_enabled(self) -> bool:
        if self.simulation.autoplay is not None:
            return self.simulation.autoplay
        return self.simulated

    # --- start and stop -------------------------------------------------------------------------------
    async def run(self) -> int:
        self._load_scenario()
        links = await self._start_devices()
        try:
            self.daemon.links = links
            if self._scenario is not None and isinstance(self.devices, SimTable):
                scenario, devices = self._scenario, self.devices.devices

                def scenario_runner(_daemon: TableDaemon) -> Coroutine[Any, Any, None]:
                    return play(scenario, devices)

                scenario_runner.__name__ = "scenario"
                self.daemon.add_companion(scenario_runner)
            return await self.daemon.run()
        finally:
            # After the daemon has stopped its drivers: a device going away first is a fault.
            if self.devices is not None:
                await self.devices.stop()

    def _load_scenario(self) -> None:
        """Check the scenario file whole before anything starts."""
        if self.simulation.scenario_path is None:
            return
        if self.simulation.devices_process:
            raise UserError("--scenario: a scenario plays on devices in the daemon's own process")
        kinds = {
            device.name: SIM_FIRMWARE[device.kind]
            for device in self.config.devices.values()
            if device.simulated
        }
        self._scenario = load_scenario(
            self.simulation.scenario_path,
            kinds,
            seats=self.config.seats,
            spots=sensor_spots(self.config.banking.mode, progressive=self.config.progressive is not None),
        )

    async def _start_devices(self) -> DeviceLinks:
        simulated = [device for device in self.config.devices.values() if device.simulated]
        if not simulated:
            return DeviceLinks()
        # A simulated device with no key gets a fresh random one per run, shared with its driver.
        keys = {device.name: device.key or secrets.token_bytes(32) for device in simulated}
        card_interval_s = self.simulation.card_interval_s
        if card_interval_s is None:
            card_interval_s = 0.0 if self.simulation.time_scale > 1 else 0.03
        specs = [
            SimDeviceSpec(
                name=device.name,
                kind=device.kind,
                key=keys[device.name],
                transport=SIM_SCHEMES[device.url.split("://", 1)[0]],
                seats=self.config.seats,
                spots=sensor_spots(self.config.banking.mode, progressive=self.config.progressive is not None),
                card_interval_s=card_interval_s if device.kind == "shuffler" else 0.0,
            )
            for device in simulated
        ]
        run_dir = _device_links_dir(self.daemon.journal_path.parent / "devices")
        if self.simulation.devices_process:
            remote = RemoteSimTable(
                specs, run_dir=run_dir, seed=self.simulation.seed, noise=self.simulation.noise
            )
            self.devices = remote
            try:
                await remote.start()
            except RemoteSimError as error:
                raise UserError(f"the simulated devices' process: {error}") from None
            return DeviceLinks(urls={name: remote.url(name) for name in keys}, keys=keys)
        table = SimTable(
            specs,
            run_dir=run_dir,
            seed=self.simulation.seed,
            noise=self.simulation.noise,
        )
        self.devices = table
        await table.start()
        return DeviceLinks(
            urls={name: table.url(name) for name in keys},
            keys=keys,
            usb_backend=table.usb_backend,
            sim_hub=table.sim_hub,
        )

    # --- what the people see happen -----------------------------------------------------------------
    def _handled(self, item: object, state_before: str) -> None:
        """The daemon handled an item: the people look again after anything they could act on; not
        after each of a deal's 50-odd cards (that was 150 wake-ups a round) nor after each tick of the
        decision clock, unless it changed the state (a walk-away closing the decisions)."""
        if isinstance(item, DealerKey):
            self._keys_handled += 1
        quiet = isinstance(item, CardDealt | HandComplete | a.Tick)
        if not quiet or self.daemon.engine.view().state != state_before:
            self._people_wake.set()

    async def _wait_for_news(self, timeout_s: float) -> None:
        """Until the engine handles something, or ``timeout_s``. (asyncio.timeout, not wait_for: in 3.11
        wait_for can swallow a cancellation, and a task that cannot be cancelled hangs the shutdown.)"""
        self._people_wake.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._people_wake.wait()

    # --- the simulated people -----------------------------------------------------------------------
    def _pace_s(self) -> float:
        if self.simulation.pace_s is not None:
            return self.simulation.pace_s
        return 0.0 if self.simulation.time_scale > 1 else 0.25

    async def _autoplay(self, daemon: TableDaemon) -> None:
        assert self.devices is not None, "the people play on simulated devices"
        engine = daemon.engine  # read only: what the people at the table see
        player = AutoPlayer(random.Random(self._rng.random()), walk_away_rate=self.simulation.walk_away_rate)
        config = engine.view().config
        sensors = self.devices.bet_sensors(config.sensors_device)
        display = self.devices.dealer_display(config.display_device)
        while True:
            await self._await_chips_seen()
            view = engine.view()  # one look: nothing changes the engine until the next await
            if daemon.stopping and not daemon.round_in_play() and view.state in ("idle", "complete"):
                await asyncio.sleep(STOPPING_NAP_S)
                continue
            if not view.table_open and view.state == "idle":
                await self._wait_for_news(AUTOPLAY_NAP_S)  # a closed table: the players wait for a manager
                continue
            state_before = view.state
            actions = player.next_actions(view)
            if not actions:
                await self._wait_for_news(AUTOPLAY_NAP_S)
                continue
            keys_pressed = 0
            state_key_pressed = False
            for action in actions:
                if isinstance(action, PlaceChips):
                    sensors.place(action.seat, action.spot, action.amount_cents)
                    self._chips_expected.append((action.seat, action.spot, action.amount_cents))
                elif isinstance(action, PressKey):
                    display.press(action.key, action.seat)
                    keys_pressed += 1
                    # fold_seat changes no state: waiting for one cost AUTOPLAY_SETTLE_S per fold.
                    state_key_pressed = state_key_pressed or action.key != "fold_seat"
                else:
                    with contextlib.suppress(JournalError):  # the table is stopping
                        await daemon.perform(action)
            if keys_pressed:
                await self._await_keys_handled(keys_pressed)
            if state_key_pressed:
                await self._await_state_change(state_before)
            if self._pace_s():
                await asyncio.sleep(self._pace_s())

    async def _await_chips_seen(self) -> None:
        """Wait (bounded) until the chips the simulated players placed are what the engine has seen."""
        deadline = time.monotonic() + AUTOPLAY_SETTLE_S
        while self._chips_expected and time.monotonic() < deadline:
            spots = self.daemon.engine.view().spots
            self._chips_expected = [
                (seat, spot, cents)
                for seat, spot, cents in self._chips_expected
                if spots.get((seat, spot), 0) != cents
            ]
            if not self._chips_expected:
                break
            await self._wait_for_news(0.05)
        self._chips_expected.clear()

    async def _await_keys_handled(self, keys_pressed: int) -> None:
        """Wait (bounded) until the engine has handled the keys just pressed (a fold lands before the
        next look at the table, so it is not pressed twice)."""
        target = self._keys_handled + keys_pressed
        deadline = time.monotonic() + AUTOPLAY_SETTLE_S
        while self._keys_handled < target and time.monotonic() < deadline:
            await self._wait_for_news(0.05)

    async def _await_state_change(self, state_before: str) -> None:
        deadline = time.monotonic() + AUTOPLAY_SETTLE_S
        while self.daemon.engine.view().state == state_before and time.monotonic() < deadline:
            await self._wait_for_news(0.05)

    async def _supervisor(self, daemon: TableDaemon) -> None:
        """A supervisor who clears each latched fault (and confirms each pending Progressive award)
        ``supervisor_clear_after_s`` after seeing it, and
        a technician who resets a simulated device left in fault (a shoe after its red light stays in
        fault until someone resets it by hand; the table starts no round until then)."""
        clear_after_s = self.simulation.supervisor_clear_after_s
        assert clear_after_s is not None
        first_seen_mono_s: dict[str, float] = {}
        while True:
            await asyncio.sleep(min(SUPERVISOR_LOOK_S, clear_after_s) or SUPERVISOR_LOOK_S)
            now_mono_s = time.monotonic()
            if isinstance(self.devices, SimTable):
                for name, device in self.devices.devices.items():
                    if device.state != "fault":
                        first_seen_mono_s.pop(f"device:{name}", None)
                    elif (
                        now_mono_s - first_seen_mono_s.setdefault(f"device:{name}", now_mono_s)
                        >= clear_after_s
                    ):
                        device.set_status("ready")  # the reset button on the device itself
            for fault_id in list(daemon.engine.view().latched):
                seen_s = first_seen_mono_s.setdefault(fault_id, now_mono_s)
                if now_mono_s - seen_s >= clear_after_s:
                    reason = "simulated supervisor: cleared after the configured delay"
                    with contextlib.suppress(JournalError):  # the table is stopping
                        # Refused if it was cleared meanwhile (a refusal is journaled, and harmless).
                        await daemon.perform(a.ClearFault(fault_id, SIM_SUPERVISOR, reason))
            controller = daemon.engine.view().progressive_controller
            for award in [] if controller is None else controller.state.pending():
                award_id = award.claimed.award_id
                if now_mono_s - first_seen_mono_s.setdefault(award_id, now_mono_s) >= clear_after_s:
                    # The same supervisor confirms a pending Progressive award paid (a person on a
                    # real table, on the panel); refused harmlessly if it was confirmed meanwhile.
                    with contextlib.suppress(JournalError):
                        await daemon.perform(a.ConfirmProgressiveAward(award_id, SIM_SUPERVISOR))


def simulated(config: TableConfig) -> bool:
    """Whether `flushtable run` runs ``config`` through the harness: any device of it is simulated."""
    return any(device.simulated for device in config.devices.values())


async def run_simulated(
    config: TableConfig, options: RunOptions, simulation: SimulationOptions, *, out: TextIO | None = None
) -> RunSummary:
    table = SimulatedTable(config, options, simulation, out=out)
    await table.run()
    return table.summary


__all__ = ["SIM_SUPERVISOR", "SimulatedTable", "SimulationOptions", "run_simulated", "simulated"]


def _device_links_dir(beside_journal: Path) -> Path:
    """Where the simulated devices' pseudo-terminal links go: beside the journal, where an operator
    looks; when that directory cannot be written (a read-only or full disk), a fresh temporary one
    instead, so the table starts far enough for the journal itself to say what is wrong with it."""
    try:
        beside_journal.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=beside_journal, prefix=".probe-")  # noqa: SIM115
        probe.close()
    except OSError as error:
        fallback = Path(tempfile.mkdtemp(prefix="flushtable-devices-"))
        log.warning(
            "device_links_elsewhere", wanted=str(beside_journal), error=error.strerror, used=str(fallback)
        )
        return fallback
    return beside_journal
