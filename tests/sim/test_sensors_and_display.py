"""Bet sensors and dealer display details, over a pty: sensor fault and reset, a refused command, a
reconnect that re-reports the table without publishing anything twice, and the display's kill_seat key."""

from __future__ import annotations

from pathlib import Path

from drivers.events import (
    BetChanged,
    DealerKey,
    DeviceLost,
    DeviceReady,
    DeviceStatusChanged,
    ResetDevice,
    SetSpotLamp,
)
from sim_devices.bet_sensors import SENSOR_FAULT_CODE
from tests.device_harness.leaks import run_async
from tests.device_harness.rig import Rig, table_rig


def run_sensors(tmp_path: Path, body: object) -> None:
    async def main() -> None:
        async with table_rig("pty", tmp_path / "run", names=("sensors",)) as rig:
            await body(rig)  # type: ignore[operator]

    run_async(main, timeout_s=30)


def test_a_sensor_fault_is_reported_and_a_reset_clears_it(tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        rig.table.bet_sensors().sensor_fault()
        fault = await rig.log.wait_for(DeviceStatusChanged, lambda e: e.state == "fault")
        assert (fault.fault_code, fault.lamp) == (SENSOR_FAULT_CODE, "red")
        await rig.drivers["sensors"].send(ResetDevice("sensors"))
        await rig.log.wait_for(
            DeviceStatusChanged, lambda e: e.state == "ready", since=len(rig.log.events) - 1
        )

    run_sensors(tmp_path, body)


def test_a_command_the_device_refuses_is_kept_in_the_health(tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        driver = rig.drivers["sensors"]
        await driver.send(SetSpotLamp("sensors", 7, 0, "win"))  # the array has seats 1..6
        await driver.send(SetSpotLamp("sensors", 1, 0, "lose"))  # the refusal arrives before this ACK
        # Kept as the refusal and its code; the device's own words never go to the health raw (they
        # may name a card: tests/privacy/test_device_text.py).
        assert driver.health.last_error.startswith("device refused seq ")
        assert "seat 7" not in driver.health.last_error
        assert rig.table.bet_sensors().lamps == {(1, 0): "lose"}

    run_sensors(tmp_path, body)


def test_after_a_reconnect_the_table_is_re_reported_but_nothing_is_published_twice(tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        sensors = rig.table.bet_sensors()
        sensors.place(1, 0, 2500, 3)
        sensors.place(3, 1, 1000, 2)
        await rig.log.wait_count(BetChanged, 2)
        window_s = rig.drivers["sensors"].timing.link.heartbeat_window_s
        await sensors.unplug_for(window_s)
        await rig.log.wait_for(DeviceLost)
        sensors.place(3, 1, 0, 0)  # taken back while the cable was out: reported after the replug
        await rig.log.wait_count(DeviceReady, 2, timeout_s=10)
        changes = await rig.log.wait_count(BetChanged, 3)
        messages_before = sensors.counters.messages_sent
        sensors.place(2, 0, 500, 1)  # a marker: once it arrives, every re-report before it has too
        changes = await rig.log.wait_count(BetChanged, 4)
        assert sensors.counters.messages_sent > messages_before
        assert [(c.seat, c.spot, c.amount_cents) for c in changes] == [
            (1, 0, 2500),
            (3, 1, 1000),
            (3, 1, 0),
            (2, 0, 500),
        ]

    run_sensors(tmp_path, body)


def test_the_displays_kill_seat_key_arrives_with_its_seat(tmp_path: Path) -> None:
    """The dealer's kill_seat key (wire value 7) with seat 4 reaches the domain as DealerKey(kill_seat,
    4): the driver passes it on; the engine makes it a request a supervisor confirms."""

    async def main() -> None:
        async with table_rig("pty", tmp_path / "run", names=("display",)) as rig:
            rig.table.dealer_display().press("kill_seat", 4)
            rig.table.dealer_display().press("next")
            keys = await rig.log.wait_count(DealerKey, 2)
            assert [(key.key, key.seat) for key in keys] == [("kill_seat", 4), ("next", None)]

    run_async(main, timeout_s=30)
