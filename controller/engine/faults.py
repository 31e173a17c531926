"""The faults and holds: fault ids, latched faults, the devices' health, the clearing of a fault by a
supervisor and the release of the table, and alerts raised from outside the engine.

A latching fault holds the table (the round flow's ``hold``) until a supervisor clears it; when the
last one is cleared the faulted devices get a soft reset and the round flow resumes where it was held.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.context import ENGINE, TableContext, operator
from controller.engine.doors import PastPostingLedger, ResumesRound, Shoe
from controller.engine.outputs import AlertSeverity
from controller.engine.state import LatchedFault, RecoveredState
from controller.journal import entries as e
from controller.names import FAULT_KINDS
from drivers.events import (
    DeviceLost,
    DeviceReady,
    DeviceStatusChanged,
    ResetDevice,
    SecurityEvent,
)

# The reason code a fault of each kind carries when its raiser names none (entries.ReasonCode).
FAULT_CODES: dict[str, e.ReasonCode] = {
    "dead_hand": "card_count",
    "red_light": "red_light",
    "past_posting": "past_posting",
    "over_limit_raise": "over_limit",
    "device_lost": "device_lost",
    "journal_error": "engine_error",
    "security_event": "security_event",
    "shuffler_fault": "shoe_fault",
    "deck_verification": "deck_verification",
    "integrity": "engine_error",
    "clock": "clock_offset",
    "config_changed": "config_changed",
    "supervisor_hold": "operator",
}
SUPERVISOR_HOLD = "supervisor_hold"  # the kind of the fault HoldTable raises

# The fault kinds an outside watcher may raise as an alert: every kind of fault_raised (controller.names).
ALERT_KINDS: frozenset[str] = frozenset(FAULT_KINDS) - {SUPERVISOR_HOLD}  # a hold is a supervisor's


class Faults:
    """Faults, holds and the devices' health."""

    # The doors built after the faults (they raise faults through this part): given by ``connect``.
    _past_posting: PastPostingLedger
    _shoe: Shoe

    def __init__(self, ctx: TableContext, recovered: RecoveredState, *, flow: ResumesRound) -> None:
        """``flow``: hold the table, resume the round once the last latched fault is cleared."""
        self.ctx = ctx
        self._flow = flow
        self.latched: dict[str, LatchedFault] = {f.fault_id: f for f in recovered.latched_faults}
        self.faults_raised = recovered.faults_raised
        self.device_health: dict[str, str] = {}

    def connect(self, *, past_posting: PastPostingLedger, shoe: Shoe) -> None:
        """``past_posting``: the bets' past-posting faults (is the spot back as locked; forget it once
        released). ``shoe``: the deal (the shoe was reset; is every card dealt)."""
        self._past_posting = past_posting
        self._shoe = shoe

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            a.ClearFault: lambda action: self.clear_fault(action.fault_id, action.by, action.reason),
            a.AcceptDifference: self._accept_difference,
            a.AdoptClear: self._adopt_clear,
            a.HoldTable: self._hold_table,
            a.RaiseAlert: lambda action: self._raise_alert(action.kind, action.detail, action.by),
            DeviceReady: self._on_device_ready,
            DeviceStatusChanged: self._on_device_status,
            DeviceLost: self._on_device_lost,
            SecurityEvent: self._on_security_event,
        }

    @property
    def held(self) -> bool:
        """A held table starts no round: a latched fault stands."""
        return bool(self.latched)

    def raise_fault(  # noqa: PLR0913 - keyword-only facts of one fault entry, each a field of it
        self,
        kind: str,
        detail: str,
        *,
        latching: bool,
        device: str | None = None,
        source: str = ENGINE,
        by: str | None = None,
        table_wide: bool = False,
        code: e.ReasonCode | None = None,
        private: e.ReasonDetail | None = None,
    ) -> str:
        """``detail`` is public: built from seats, amounts, devices and counts, never a card. What a
        fault knows of cards (which card, where) goes in ``private`` (entries.ReasonDetail's fields)."""
        ctx = self.ctx
        self.faults_raised += 1
        fault_id = f"F{ctx.config.table_id}-{self.faults_raised:06d}"
        severity: AlertSeverity = "latching" if latching else "alert"
        entry = e.FaultRaised(
            fault_id=fault_id,
            kind_of_fault=kind,
            severity=severity,
            reason=e.Reason(code=code or FAULT_CODES.get(kind, "operator"), message=detail),
            device=device,
            by=by,  # who raised it, when not the engine itself (the integrity watch)
            private=private,
        )
        ctx.journal(entry, source=source, table_wide=table_wide)
        if latching:
            live = ctx.round
            round_id = live.round_id if live is not None and not live.closed else None
            self.latched[fault_id] = LatchedFault(fault_id, kind, detail, device, round_id)
        ctx.alert(severity, kind, detail, fault_id, table_wide=table_wide)
        return fault_id

    def _raise_alert(self, kind: str, detail: str, by: str) -> None:
        if kind not in ALERT_KINDS:
            self.ctx.refuse(
                "raise_alert", f"kind: unknown alert kind {kind!r} (one of {', '.join(sorted(ALERT_KINDS))})"
            )
            return
        if not detail.strip():
            self.ctx.refuse("raise_alert", "detail: must say what is wrong, not be empty")
            return
        if not by.strip():
            self.ctx.refuse("raise_alert", "by: must name who raises the alert")
            return
        # Raised from outside the round (the integrity watch): its own code, not an engine error.
        code: e.ReasonCode | None = "integrity_check" if kind == "integrity" else None
        self.raise_fault(kind, detail, latching=False, by=by, table_wide=True, code=code)

    def _hold_table(self, action: a.HoldTable) -> None:
        """A supervisor's hold: a latched fault like any other (the banner names it, ClearFault ends it,
        the round resumes where it stood), raised by the supervisor and journaled under their name."""
        ctx = self.ctx
        if not action.by.strip() or not action.reason.strip():
            ctx.refuse("hold_table", "a supervisor's name and a reason are required", action.by or "unknown")
            return
        standing = [f for f in self.latched.values() if f.kind == SUPERVISOR_HOLD]
        if standing:
            ctx.refuse(
                "hold_table", f"the table is already held by a supervisor ({standing[0].fault_id})", action.by
            )
            return
        self.raise_fault(
            SUPERVISOR_HOLD,
            f"held by {action.by}: {action.reason}",
            latching=True,
            by=action.by,
            source=operator(action.by),
            code="operator",
        )
        self._flow.hold_table()

    # ------------------------------------------------------------------ clearing
    def _adopt_clear(self, action: a.AdoptClear) -> None:
        if action.fault_id in self.latched:
            self.clear_fault(action.fault_id, action.by, action.reason, journaled=True)

    def clear_fault(self, fault_id: str, by: str, reason: str, *, journaled: bool = False) -> None:
        ctx = self.ctx
        if fault_id not in self.latched:
            ctx.refuse("clear_fault", f"no latched fault {fault_id!r}", by)
            return
        if not reason.strip() or not by.strip():
            ctx.refuse("clear_fault", "a supervisor's name and a reason are required", by or "unknown")
            return
        off = None if journaled else self._past_posting.spot_still_off(fault_id)
        if off is not None:
            ctx.refuse(
                "clear_fault",
                f"{off}: put the locked wager back as it was, or accept the difference with a reason",
                by,
            )
            return
        self._release(fault_id, by, reason, journaled=journaled)

    def _accept_difference(self, action: a.AcceptDifference) -> None:
        """The supervisor accepts a past-posted spot's difference (actions.AcceptDifference)."""
        ctx = self.ctx
        by, reason = action.by, action.reason
        if not reason.strip() or not by.strip():
            ctx.refuse("accept_difference", "a supervisor's name and a reason are required", by or "unknown")
            return
        off = self._past_posting.spot_still_off(action.fault_id) if action.fault_id in self.latched else None
        if off is None:
            ctx.refuse(
                "accept_difference",
                f"no past-posted spot reads other than its locked wager for {action.fault_id!r}: clear it",
                by,
            )
            return
        ctx.journal(
            e.DifferenceAccepted(fault_id=action.fault_id, by=by, reason=reason, spot=off),
            source=operator(by),
        )
        self._release(action.fault_id, by, reason, journaled=False)

    def _release(self, fault_id: str, by: str, reason: str, *, journaled: bool) -> None:
        ctx = self.ctx
        self._past_posting.forget_past_posting(fault_id)
        del self.latched[fault_id]
        if not journaled:
            ctx.journal(e.FaultCleared(fault_id=fault_id, by=by, reason=reason), source=operator(by))
        if not self.latched:
            self._reset_faulted_devices(by)
        if self.latched or ctx.state != m.HELD:
            return
        self._flow.resume_round()

    def _reset_faulted_devices(self, by: str) -> None:
        """The last latched fault is cleared: a supervisor has looked at the table. A device whose last
        status was "fault" (the shoe after its red light, a jam or an open door) stays there until it
        is reset, and refuses to shuffle or deal meanwhile; reset it now (a soft reset, journaled as
        the supervisor's action), before the fresh shuffle the table asks for when it resumes. If the
        cause is still there the device faults again and the table holds again."""
        for device, health in sorted(self.device_health.items()):
            if health != "fault":
                continue
            self.ctx.journal(
                e.DeviceReset(device=device, by=by, reason="in fault when its table was released"),
                source=operator(by),
            )
            self.ctx.out.append(ResetDevice(device))
            if device == self.ctx.config.shuffler_device:
                self._shoe.shoe_restarted()

    # ------------------------------------------------------------------ devices
    def devices_not_ready(self) -> list[str]:
        """The devices whose last report was lost or fault: a round does not start meanwhile."""
        return sorted(d for d, health in self.device_health.items() if health in ("lost", "fault"))

    def _on_device_ready(self, event: DeviceReady) -> None:
        self.device_health[event.device] = "ready"
        self.ctx.journal(
            e.DeviceReady(
                device=event.device,
                kind_of_device=event.kind,
                model=event.model,
                serial_number=event.serial_number,
                firmware_version=event.firmware_version,
            ),
            source=event.device,
        )

    def _on_device_status(self, event: DeviceStatusChanged) -> None:
        self.device_health[event.device] = event.state
        self.ctx.journal(
            e.DeviceStatus(
                device=event.device, state=event.state, fault_code=event.fault_code, lamp=event.lamp
            ),
            source=event.device,
        )

    def _on_security_event(self, event: SecurityEvent) -> None:
        self.ctx.journal(
            e.SecurityEvent(device=event.device, reason=event.reason, detail=event.detail),
            source=event.device,
        )
        self.raise_fault(
            "security_event",
            f"{event.device}: {event.reason} {event.detail}".strip(),
            latching=False,
            device=event.device,
            source=event.device,
        )

    def _on_device_lost(self, event: DeviceLost) -> None:
        """The shuffler or the bet sensors lost during an open round (after the lock) latch and hold
        (the shuffler only while the deal is incomplete); any other loss is an alert."""
        ctx = self.ctx
        self.device_health[event.device] = "lost"
        ctx.journal(e.DeviceLost(device=event.device, reason=event.reason), source=event.device)
        live = ctx.round
        in_round = live is not None and not live.closed and ctx.state not in (m.IDLE, m.BETTING)
        critical = event.device in (ctx.config.shuffler_device, ctx.config.sensors_device)
        if in_round and critical and not (event.device == ctx.config.shuffler_device and self._shoe.finished):
            self.raise_fault(
                "device_lost",
                f"{event.device} lost during the round: {event.reason}",
                latching=True,
                device=event.device,
            )
            self._flow.hold_table()
            return
        self.raise_fault(
            "device_lost", f"{event.device}: {event.reason}", latching=False, device=event.device
        )
