"""The alert of a journal seal that waits (docs/journal.md "Segments and seals"): a due seal that has
waited past its bound (a linked table's claim the floor has not answered, say) raises a non-latching
alert, journaled as its fault_raised; once a seal proceeds, every such alert is cleared (fault_cleared).
An alert left open by an earlier run is cleared by this run's first seal.

Both go through the daemon's one queue as its own work (controller/daemon_controls.py ``LoopWork``),
in order with the engine's calls; the ledger (controller/daemon_journal.py) says when.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from controller.daemon_controls import LoopWork
from controller.engine import JournalRecord, TableEngine
from controller.engine.actions import RaiseAlert
from controller.engine.outputs import Output
from controller.journal import entries
from controller.journal.seals import Seal
from controller.journal.state_parts import AlertState

SEAL_WAIT_BY = "journal-seal"  # who raises (and clears) the alert of a seal that waits past its bound


class SealWaitAlerts:
    """The open alerts of a waiting seal (their fault ids). Its doors: ``submit`` (the daemon's queue)
    and ``still_waiting`` (whether the ledger's seal still waits when the queue gets to the alert)."""

    def __init__(self, submit: Callable[[LoopWork], None], still_waiting: Callable[[], bool]) -> None:
        self._submit = submit
        self._still_waiting = still_waiting
        self.open: list[str] = []

    def resume(self, open_alerts: Mapping[str, AlertState]) -> None:
        """The alerts an earlier run left open (the recovered state's), to clear at the first seal."""
        self.open = [fault_id for fault_id, alert in open_alerts.items() if alert.raised_by == SEAL_WAIT_BY]

    def waiting(self, line: str) -> None:
        """The ledger's due seal has waited past its bound: a non-latching alert, journaled (its
        fault_raised), on the queue; not raised if a seal proceeded before the queue got to it."""
        alerts = self.open

        def seal_waiting(engine: TableEngine, now_s: float) -> list[Output]:
            if not self._still_waiting():
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

        self._submit(LoopWork("seal_waiting", seal_waiting))

    def sealed(self, seal: Seal) -> None:
        """A seal proceeded: the alerts of its wait are cleared (journaled fault_cleared, on the queue)."""
        if not self.open:
            return
        cleared = list(self.open)
        self.open.clear()
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

        self._submit(LoopWork("seal_proceeded", seal_proceeded))
