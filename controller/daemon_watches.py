"""The table daemon's watches (controller/daemon.py): what it keeps an eye on beside the table and
turns into actions on its one queue. The journal watch adopts clearings another process journaled
(`flushtable clear`); the integrity watch checks the last rounds in a child process
(controller/integrity_watch.py) and raises an alert when the verdict turns to alarm; the segments' watch
verifies every sealed segment of the journal in a child process at nice 19, at start and every day
(controller/journal/segments_watch.py), and raises a ``journal_error`` alert for each that fails; the
watchdog tells systemd the daemon is alive."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Collection, Coroutine
from pathlib import Path
from typing import Any

import structlog

from controller import systemd
from controller.engine.actions import AdoptClear, RaiseAlert
from controller.engine.outputs import Output
from controller.integrity_watch import WINDOW_ROUNDS, alert_for_verdict, check_journal_in_process
from controller.journal.entries import FaultCleared
from controller.journal.kinds import FAULT_CLEARED
from controller.journal.seals import seal_numbers
from controller.journal.segments_watch import VERIFY_EVERY_S, SegmentsReport, verify_in_process
from controller.journal.store import Journal, JournalError

log = structlog.get_logger("flushtable.daemon")

JOURNAL_WATCH_INTERVAL_S = 0.25  # how often the journal is read for clearings other processes wrote


class DaemonWatches:
    """``journal_path``: the journal the integrity check reads (in a child process of its own);
    ``journal``: the table's open journal (the journal watch reads it); ``latched``: the faults the
    engine holds latched (read on the loop); ``submit`` / ``perform``: the daemon's queue."""

    def __init__(
        self,
        journal_path: Path,
        *,
        journal: Callable[[], Journal],
        latched: Callable[[], Collection[str]],
        submit: Callable[[AdoptClear], None],
        perform: Callable[[RaiseAlert], Coroutine[Any, Any, list[Output]]],
    ) -> None:
        self.journal_path = journal_path
        self._journal = journal
        self._latched = latched
        self._submit = submit
        self._perform = perform
        self.watched_seq = 0  # the journal watch has read every entry up to here
        self._integrity_task: asyncio.Task[None] | None = None
        self.integrity_status: str | None = None  # the last integrity verdict's status this run
        self.segments_verified: SegmentsReport | None = None  # the last background verification's

    # --- the journal watch -----------------------------------------------------------------------------
    async def journal_watch(self) -> None:
        """Clearings another process journaled while the table runs (`flushtable clear`, for a table
        whose panel is off or out of reach): a ``fault_cleared`` for a fault the engine still holds
        latched is adopted (the engine releases the table as if cleared here, without a second entry).
        The engine's own clearings are journaled after it dropped the fault, so they are skipped."""
        while True:
            await asyncio.sleep(JOURNAL_WATCH_INTERVAL_S)
            try:
                cleared = list(self._journal().entries(since_seq=self.watched_seq, kinds=[FAULT_CLEARED]))
            except JournalError as error:  # read again next time; the table goes on
                log.error("journal_watch_failed", error=str(error))
                continue
            for stored in cleared:
                self.watched_seq = max(self.watched_seq, stored.seq)
                entry = stored.entry  # typed: a fault_cleared's fault_id, by and reason are all text
                if not isinstance(entry, FaultCleared) or entry.fault_id not in self._latched():
                    continue
                log.warning(
                    "fault_cleared_elsewhere", fault_id=entry.fault_id, by=entry.by, journal_seq=stored.seq
                )
                self._submit(AdoptClear(entry.fault_id, entry.by, entry.reason))

    # --- the integrity watch (controller/integrity_watch.py) ---------------------------------------
    def start_integrity_check(self) -> None:
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
                await self._perform(RaiseAlert("integrity", detail, by="integrity"))

    async def stop_integrity_check(self) -> None:
        if self._integrity_task is not None:
            # Cancelling the wait kills the check's child process (check_journal_in_process): it only
            # ever read the journal, through its own read-only connection.
            self._integrity_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._integrity_task

    # --- the segments' watch (controller/journal/segments_watch.py) ---------------------------------
    async def segments_watch(self, key: bytes | None, every_s: float = VERIFY_EVERY_S) -> None:
        """Every sealed segment verified in the background, now and every ``every_s``: each segment's
        verdict logged as it comes (the progress), and a ``journal_error`` alert raised for each that
        fails (journaled as its fault_raised). A verification that cannot run is logged; the table goes
        on (the start has proven the open segment and the last seal)."""
        while True:
            await self.verify_segments_once(key)
            await asyncio.sleep(every_s)

    async def verify_segments_once(self, key: bytes | None) -> None:
        if not seal_numbers(self.journal_path):
            return  # nothing sealed yet: no child process started for nothing
        started_s = time.monotonic()

        def progress(line: dict[str, object]) -> None:
            say = log.info if line["ok"] else log.error
            say("journal_segment_verified", **line)

        try:
            report = await verify_in_process(self.journal_path, key, progress)
        except Exception as error:  # never stops the table
            log.error("journal_segments_verify_failed", error=f"{type(error).__name__}: {error}")
            return
        self.segments_verified = report
        log.info(
            "journal_segments_verified",
            segments=report.checked,
            entries=report.entries,
            failed=[segment for segment, _line in report.failed],
            elapsed_s=round(time.monotonic() - started_s, 3),
        )
        for _segment, line in report.failed:
            with contextlib.suppress(JournalError):  # logged where it failed, and the table stopped
                await self._perform(
                    RaiseAlert("journal_error", f"sealed journal {line}", by="segments-watch")
                )

    # --- the watchdog (systemd) --------------------------------------------------------------------------
    @staticmethod
    async def watchdog(interval_s: float) -> None:
        while True:
            systemd.notify("WATCHDOG=1")
            await asyncio.sleep(interval_s)
