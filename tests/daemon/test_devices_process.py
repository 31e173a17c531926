"""The simulated devices in a process of their own (sim_devices/remote.py, SimulationOptions.devices_process):
the daemon plays whole rounds against them over real pseudo-terminals, the simulated people's chips and
keys crossing the control channel; the child exits when the daemon stops; a device the child cannot
serve is refused in one line."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import pytest

from controller.config import load_config
from controller.errors import UserError
from controller.journal.verify import verify_chain
from sim_devices.remote import RemoteSimError, RemoteSimTable
from sim_devices.table import SimDeviceSpec
from tests.daemon.harness import (
    check_every_round_closed_once,
    check_recall_settles,
    entries,
    run_daemon,
    simulated_table,
)
from tests.device_harness.leaks import run_async


def test_the_daemon_plays_rounds_against_devices_in_another_process(tmp_path: Path) -> None:
    journal_path = tmp_path / "journal.sqlite"
    run = run_daemon(load_config(None), journal_path, rounds=5, seed=11, autoplay=True, devices_process=True)
    assert run.summary.rounds_closed == 5
    assert run.summary.rounds_settled + run.summary.rounds_dead == 5
    assert verify_chain(journal_path).ok
    journal = entries(journal_path)
    assert sum(entry.kind == "card_dealt" for entry in journal) >= 5 * 14  # each round: a seat and the banker
    assert any(entry.kind == "bet_changed" for entry in journal)  # chips placed through the control channel
    assert any(entry.kind == "dealer_key" for entry in journal)  # keys pressed through it
    check_every_round_closed_once(journal)
    check_recall_settles(journal_path)


def test_a_device_that_lives_in_one_process_is_refused(tmp_path: Path) -> None:
    spec = SimDeviceSpec(name="shuffler", kind="shuffler", key=secrets.token_bytes(32), transport="usb")
    table = RemoteSimTable([spec], run_dir=tmp_path)
    with pytest.raises(RemoteSimError, match="usb device lives inside one process"):
        run_async(table.start)


def test_the_child_stops_when_the_parent_closes_its_input(tmp_path: Path) -> None:
    spec = SimDeviceSpec(name="display", kind="dealer_display", key=secrets.token_bytes(32))

    async def main() -> int | None:
        table = RemoteSimTable([spec], run_dir=tmp_path, seed=1)
        await table.start()
        try:
            assert Path(table.url("display")).is_symlink()  # the pseudo-terminal, by its stable name
            process = table._process
            assert process is not None
            table.dealer_display("display").press("confirm")  # nobody listens: the device queues it
            # Bad control lines are refused one by one (on the child's standard error); it goes on.
            table.send({"op": "dance", "device": "display"})
            table.send({"op": "press", "device": "no-such-device", "key": "confirm"})
            table.dealer_display("display").press("next")
        finally:
            await table.stop()
        await asyncio.sleep(0)
        return process.returncode

    assert run_async(main) == 0


def test_a_scenario_needs_the_devices_in_the_daemons_process(tmp_path: Path) -> None:
    table = simulated_table(
        load_config(None),
        tmp_path / "journal.sqlite",
        devices_process=True,
        scenario_path=Path(__file__).with_name("scenarios") / "walk_away.toml",
    )
    with pytest.raises(UserError, match="a scenario plays on devices in the daemon's own process"):
        asyncio.run(table.run())
    assert not (tmp_path / "journal.sqlite").exists()  # refused before anything started


def test_a_child_that_cannot_start_its_devices_is_one_error_and_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "display").mkdir()  # where the display's pseudo-terminal link must go
    (tmp_path / "display" / "occupied").write_text("x", encoding="utf-8")
    spec = SimDeviceSpec(name="display", kind="dealer_display", key=secrets.token_bytes(32))
    table = RemoteSimTable([spec], run_dir=tmp_path)
    with pytest.raises(RemoteSimError) as raised:
        run_async(table.start)
    assert "\n" not in str(raised.value)
    assert table._process is None  # stopped and reaped
