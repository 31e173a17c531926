"""The table daemon's regulatory controls (docs/operations.md "Regulatory controls"): the
configuration's check at every start, the clock watch, and the two-person change control.

- At start, ``config_checked`` journals the configuration file's digest, the effective settings and
  their difference from the last start; a change with no approved ``config_file`` change behind it
  raises the ``config_changed`` alert (controller/changes.py ``check_configuration``). While the table
  runs, the file is hashed again every CONFIG_WATCH_INTERVAL_S: edited on disk, the same alert (once).
- The clock watch (controller/clocks.py) measures the table's clock against ``[clock] ntp_server`` at
  start and every ``check_interval_s``; each measurement is a ``clock_offset`` entry, and past the bound
  the ``clock`` alert, both on the one queue.
- The change desk (controller/changes.py): the panel's proposals, approvals and rejections run on the
  one queue (:class:`LoopWork`), so an approval and the setting it applies share one commit; proposals
  past their time lapse within CHANGES_WATCH_INTERVAL_S.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from controller.changes import ChangeControl, ChangeDesk, ChangeRefusedError, check_configuration
from controller.clocks import ClockCheck, ClockWatch
from controller.engine import JournalRecord, TableEngine
from controller.engine.actions import RaiseAlert
from controller.engine.outputs import Output
from controller.journal.state import TableState
from controller.journal.store import JournalError

if TYPE_CHECKING:
    from controller.daemon import TableDaemon

log = structlog.get_logger("flushtable.daemon")

CHANGES_WATCH_INTERVAL_S = 1.0  # how often pending proposals are checked for their lapse (table time)
CONFIG_WATCH_INTERVAL_S = 10.0  # how often the configuration file is hashed again while the table runs


@dataclass(frozen=True, slots=True)
class LoopWork:
    """The daemon's own work that must run on the queue's loop, in order with the engine's calls (a
    change approved and the setting it applies, a clock measurement and its alert): given the engine
    and the time, it returns the outputs to commit and act on, as the engine's would be."""

    name: str
    work: Callable[[TableEngine, float], list[Output]]


class DaemonControls:
    def __init__(self, daemon: TableDaemon) -> None:
        self._daemon = daemon
        self.changes: ChangeDesk | None = None  # from start(): the state is the journal's
        self.clock_watch: ClockWatch | None = None
        self.config_alerted = False  # the file changed on disk while running: alerted once

    async def _run(self, work: Callable[[TableEngine, float], list[Output]]) -> list[Output]:
        return await self._daemon.perform(LoopWork(getattr(work, "__name__", "work"), work))

    # --- at start -----------------------------------------------------------------------------------
    def start(self, state: TableState) -> None:
        """Before the loop runs (the engine is the daemon's alone): the configuration's check journaled,
        the change desk set up from the journal's proposals, the clock watch from [clock]."""
        daemon = self._daemon
        config = daemon.config
        check = check_configuration(
            source=config.source,
            file_sha256=config.file_sha256,
            config_digest=config.digest,
            settings=config.to_json(),
            previous=state.config_checked,
            approved_files=state.approved_config_files,
        )
        records: list[JournalRecord] = [JournalRecord.typed(check.entry, None, "daemon")]
        if check.alert is not None:
            log.warning("config_changed", detail=check.alert)
            outputs = daemon.engine.handle(
                RaiseAlert("config_changed", check.alert, by="daemon"), daemon.now_s()
            )
            records.extend(o for o in outputs if isinstance(o, JournalRecord))
        daemon.ledger.append(records)
        control = ChangeControl(config.table_id, state.changes, lapse_after_s=config.changes.lapse_after_s)
        self.changes = ChangeDesk(control, self._run)
        if config.clock.ntp_server is not None:
            self.clock_watch = ClockWatch(config.clock, now_s=daemon.now_s, report=self.report_clock)
        else:
            log.warning("clock_not_measured", reason="no [clock] ntp_server in the configuration")

    def spawn(self, spawn: Callable[[Coroutine[Any, Any, None], str], None]) -> None:
        spawn(self.watch(), "controls-watch")
        if self.clock_watch is not None:
            spawn(self.clock_watch.run(), "clock-watch")

    # --- the clock ------------------------------------------------------------------------------------
    async def report_clock(self, check: ClockCheck) -> None:
        """One measurement journaled, with its alert, on the queue."""
        alert = check.alert

        def clock(engine: TableEngine, now_s: float) -> list[Output]:
            outputs: list[Output] = [JournalRecord.typed(check.entry, None, "clock")]
            if alert is not None:
                outputs.extend(engine.handle(RaiseAlert("clock", alert, by="clock"), now_s))
            return outputs

        if alert is not None:
            log.warning("clock_alert", detail=alert)
        await self._run(clock)

    # --- lapses and the file on disk -------------------------------------------------------------------
    async def watch(self) -> None:
        daemon = self._daemon
        waited_s = 0.0
        interval_s = CHANGES_WATCH_INTERVAL_S / max(daemon.clock.scale, 1.0)
        while True:
            await asyncio.sleep(interval_s)
            waited_s += interval_s
            desk = self.changes
            if desk is not None and desk.control.lapse_due(daemon.now_s()):
                with contextlib.suppress(ChangeRefusedError):  # nothing lapses after all (approved meanwhile)
                    await desk.lapse_due()
            if waited_s >= CONFIG_WATCH_INTERVAL_S:
                waited_s = 0.0
                await self.check_config_on_disk()

    async def check_config_on_disk(self) -> None:
        """The configuration file hashed again: changed since the start, the ``config_changed`` alert
        (once per run; the next start's check journals the difference)."""
        config = self._daemon.config
        if config.config_path is None or config.file_sha256 is None or self.config_alerted:
            return
        try:
            now_sha256 = hashlib.sha256(await asyncio.to_thread(config.config_path.read_bytes)).hexdigest()
        except OSError as error:
            now_sha256 = f"unreadable ({error.strerror or error})"
        if now_sha256 == config.file_sha256:
            return
        self.config_alerted = True
        detail = (
            f"the configuration {config.source} changed on disk while the table runs "
            f"(sha256 {now_sha256[:16]}, started with {config.file_sha256[:16]}); "
            "the next start journals the difference"
        )
        log.warning("config_changed", detail=detail)

        def alert(engine: TableEngine, now_s: float) -> list[Output]:
            return engine.handle(RaiseAlert("config_changed", detail, by="daemon"), now_s)

        with contextlib.suppress(JournalError):  # said where it failed; the table is stopping
            await self._run(alert)
