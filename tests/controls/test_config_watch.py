"""A configuration file edited on disk while the table runs: the daemon hashes it again (every 10 s;
here once, on demand) and raises the config_changed alert once, on the real daemon and journal."""

from __future__ import annotations

from pathlib import Path

from controller.config import load_config
from controller.simulation.table import SimulatedTable
from tests.controls.harness import journal_entries, with_table
from tests.daemon.harness import write_config


def test_a_file_edited_while_the_table_runs_alerts_once(tmp_path: Path) -> None:
    path = write_config(tmp_path, "hcf-house")
    config = load_config(path)

    async def edit(table: SimulatedTable) -> tuple[bool, bool]:
        controls = table.daemon.controls
        await controls.check_config_on_disk()
        untouched = controls.config_alerted
        path.write_text(path.read_text() + "\n# edited by hand\n")
        await controls.check_config_on_disk()
        await controls.check_config_on_disk()  # the same edit: not alerted again
        return untouched, controls.config_alerted

    untouched, alerted = with_table(config, config.journal_path, edit)
    assert untouched is False
    assert alerted is True
    faults = [e.payload for e in journal_entries(config.journal_path, ["fault_raised"])]
    assert [f["kind"] for f in faults] == ["config_changed"]
    message = str(faults[0]["reason"]["message"])
    assert message.startswith(f"the configuration {path.name} changed on disk while the table runs")
    assert faults[0]["severity"] == "alert"
