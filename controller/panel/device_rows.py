"""The panel's device and alert rows, built from the folded view (controller.panel.view): a device's
health as the devices page shows it (the supervisors' live report over the journal's, a latched fault
over both) and the alerts list. Pure: the backend hands over its view and, when connected, the device
supervisors' health; nothing here reads the journal or writes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime
from typing import Any

from controller.panel.view import TableView
from firmware_protocol.vocabulary import FAULT_CODES


def fault_code_words(code: object) -> str:
    """A device's fault code as people read it: its name in the protocol's table (firmware_protocol's
    FAULT_CODES), the number beside it for the maker's manual; a code outside the table is the maker's."""
    name = FAULT_CODES.get(code) if isinstance(code, int) else None
    if name is None:
        return f"device-specific fault (code {code}, see the maker's manual)"
    return f"{name.replace('_', ' ')} (code {code})"


def _fault_by_device(view: TableView) -> dict[str, Any]:
    """Each device named by a latched fault not yet cleared: the row shows the fault, not its link."""
    faults: dict[str, Any] = {}
    for alert in view.state.alerts.values():
        if alert.device and alert.severity == "latching" and alert.state != "cleared":
            faults.setdefault(alert.device, alert)
    return faults


def _with_faults(view: TableView, rows: list[dict[str, Any]], *, read_only: bool) -> list[dict[str, Any]]:
    faults = _fault_by_device(view)
    for row in rows:
        alert = faults.get(str(row.get("device")))
        row["link_state"] = row.get("state")
        if alert is not None:
            row["state"] = "fault"
            row["fault"] = {"fault_id": alert.fault_id, "kind": alert.kind, "detail": alert.detail}
            row["last_reason"] = f"{alert.kind.replace('_', ' ')}: {alert.detail}"
        elif row.get("reported_state") == "fault" or row.get("lamp") == "red":
            # The link is up, but the device itself reports a fault (its status, its red lamp).
            row["state"] = "fault"
            code = row.get("fault_code")
            row["fault"] = {
                "fault_id": None,
                "kind": "device_status",
                "detail": "the device reports a fault",
            }
            row["last_reason"] = (
                "the device reports a fault"
                + (f": {fault_code_words(code)}" if code else "")
                + (", lamp red" if row.get("lamp") == "red" else "")
            )
        else:
            row["fault"] = None
        if read_only:
            row["state"] = f"last known: {row['state']}"
    return rows


def device_rows(view: TableView, health: Iterable[Any] | None, *, read_only: bool) -> list[dict[str, Any]]:
    """Each device's row: ``health`` is the device supervisors' report (None: not connected, the
    journal's last word for every device)."""
    from_journal = {name: device.as_dict() for name, device in view.state.devices.items()}
    if health is None:
        return _with_faults(
            view,
            [{**device, "last_heartbeat_utc": None, "source": "journal"} for device in from_journal.values()],
            read_only=read_only,
        )
    rows = []
    linked: set[str] = set()
    for report in health:
        link = asdict(report) if is_dataclass(report) and not isinstance(report, type) else dict(report)
        heard = link.get("last_heard_unix_s")
        link["last_heartbeat_utc"] = (
            datetime.fromtimestamp(heard, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            if isinstance(heard, int | float)
            else None
        )
        linked.add(str(link.get("device")))
        journal_row = from_journal.get(str(link.get("device")), {})
        # The link's state wins (it is live); the journal adds model, firmware and the lamp.
        rows.append(
            {
                **journal_row,
                **link,
                "last_reason": link.get("last_error") or journal_row.get("last_reason", ""),
                "reported_state": journal_row.get("state"),  # what the device itself last said
                "source": "link",
            }
        )
    rows.extend(
        {**row, "last_heartbeat_utc": None, "source": "journal"}
        for name, row in from_journal.items()
        if name not in linked
    )
    return _with_faults(view, rows, read_only=read_only)


def alert_rows(view: TableView, *, include_cleared: bool) -> list[dict[str, Any]]:
    """The alerts, newest first; cleared and resolved ones only when asked for."""
    rows = []
    for alert in reversed(view.state.alerts.values()):
        if alert.state in ("cleared", "resolved") and not include_cleared:
            continue
        rows.append(
            {
                "fault_id": alert.fault_id,
                "kind": alert.kind,
                "severity": alert.severity,
                "code": alert.reason.code,
                "detail": alert.detail,  # the public message: never a card
                "device": alert.device,
                "round_id": alert.round_id,
                "raised_seq": alert.raised_seq,
                "raised_utc": alert.raised_utc,
                "raised_by": alert.raised_by,
                "acknowledged_by": alert.acknowledged_by,
                "acknowledged_utc": alert.acknowledged_utc,
                "cleared_by": alert.cleared_by,
                "cleared_reason": alert.cleared_reason,
                "cleared_utc": alert.cleared_utc,
                "resolved_utc": alert.resolved_utc,
                "resolved_note": alert.resolved_note,
                "state": alert.state,
            }
        )
    return rows


__all__ = ["alert_rows", "device_rows", "fault_code_words"]
