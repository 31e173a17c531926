"""A device's own words are data from outside: the shoe's authenticated ErrorReport whose detail names a
hole card ("jam: card 4d at seat 1") never reaches a public channel raw (issue 22). Over a pseudo-
terminal, the real driver and the simulated shoe's firmware: the driver's health (the panel's devices
table and /api/devices show it as ``last_reason``) and its ``device_refused`` log line say that the shoe
refused which command, with its code, and not its words; the words go on only inside the ShufflerFault
the engine journals as the fault's private part (shown once the round is revealed, never before)."""

from __future__ import annotations

import json
from pathlib import Path

from structlog.testing import capture_logs

from controller.journal.store import Journal
from controller.panel.backend import JournalPanelBackend
from drivers.events import ShufflerFault
from tests.device_harness.leaks import run_async
from tests.device_harness.rig import Rig, table_rig

SHOE_WORDS = "jam: card 4d at seat 1"


def test_the_shoes_error_text_never_shows_raw_in_the_health_the_devices_table_or_the_log(
    tmp_path: Path,
) -> None:
    seen: dict[str, object] = {}

    async def main() -> None:
        async with table_rig("pty", tmp_path / "run", names=("shuffler",)) as rig:
            await body(rig)

    async def body(rig: Rig) -> None:
        driver = rig.drivers["shuffler"]
        with capture_logs() as logs:
            rig.table.shuffler().refuse(0, 3, SHOE_WORDS)  # the shoe's own ErrorReport
            fault = await rig.log.wait_for(ShufflerFault, lambda event: "4d" in event.detail)
        seen["fault"] = fault
        seen["health"] = driver.health
        seen["logs"] = logs

    run_async(main, timeout_s=30)
    fault = seen["fault"]
    assert isinstance(fault, ShufflerFault)
    assert fault.detail == f"refused: {SHOE_WORDS}"  # to the engine: the fault's private part
    health = seen["health"]
    last_error = getattr(health, "last_error", "")
    assert last_error == "device refused seq 0 (code 3)"
    refused = [line for line in seen["logs"] if line.get("event") == "device_refused"]  # type: ignore[attr-defined]
    assert refused
    assert "4d" not in json.dumps(refused)
    assert refused[0]["detail_chars"] == len(SHOE_WORDS)
    # The panel's devices table and /api/devices: the link's health row, as the daemon hands it over.
    with Journal.open(tmp_path / "journal.sqlite", "T1") as journal:
        backend = JournalPanelBackend(journal, device_health=lambda: [health])
        rows = backend.devices()
    assert [row["last_reason"] for row in rows] == ["device refused seq 0 (code 3)"]
    assert "4d" not in json.dumps(rows, default=str)
