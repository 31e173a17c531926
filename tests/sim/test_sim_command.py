"""`flushtable sim` as an operator runs it: a separate process serving ptys, a driver in this one."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

import pytest

from drivers.events import BetChanged, DealerKey, DeviceReady
from drivers.factory import make_driver
from drivers.supervisor import DriverTiming
from firmware_protocol.runner import LinkTiming
from sim_devices.bet_sensors import SimulatedBetSensors
from sim_devices.dealer_display import SimulatedDealerDisplay
from sim_devices.firmware import SimulatedDevice
from sim_devices.runner import ConfiguredDevice, default_specs, specs_from_devices
from sim_devices.scenario import ScenarioError, parse_scenario
from sim_devices.shuffler import SimulatedShuffler
from tests.device_harness.leaks import run_async
from tests.device_harness.rig import EventLog

SCENARIO = """
[[step]]
at_s = 0.0
device = "sensors"
action = "place"
seat = 2
spot = 1
amount_cents = 1500
chip_count = 3

[[step]]
at_s = 0.1
device = "display"
action = "press"
key = "fold_seat"
seat = 4
"""
TABLE: dict[str, type[SimulatedDevice]] = {
    "shuffler": SimulatedShuffler,
    "sensors": SimulatedBetSensors,
    "display": SimulatedDealerDisplay,
}


def test_flushtable_sim_serves_the_default_table_and_plays_the_scenario(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    time_scale = 8.0

    async def body() -> None:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "controller.cli",
            "sim",
            "--run-dir",
            str(tmp_path / "sim"),
            "--scenario",
            str(scenario),
            "--time-scale",
            str(time_scale),
            "--seed",
            "3",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stdout is not None
        log = EventLog()
        drivers = []
        try:
            printed: list[str] = []
            async with asyncio.timeout(20):
                while not printed or not printed[-1].startswith("serving"):
                    printed.append((await process.stdout.readline()).decode().rstrip("\n"))
            text = "\n".join(printed)
            for name in ("shuffler", "sensors", "display"):
                assert re.search(
                    rf"^{name}: \S+ SIM-\S+ listening on {tmp_path}/sim/{name} -> /dev/pts/\d+", text, re.M
                )
            keys = dict(
                re.findall(
                    r'^\[devices\.(\w+)\]\nkind = "\w+"\nurl = "[^"]+"\nkey = "([0-9a-f]{64})"', text, re.M
                )
            )
            kinds = dict(re.findall(r'^\[devices\.(\w+)\]\nkind = "(\w+)"', text, re.M))
            timing = DriverTiming(link=LinkTiming(time_scale), backoff_initial_s=0.05, backoff_max_s=0.2)
            for name in ("sensors", "display"):
                driver = make_driver(
                    name,
                    kinds[name],
                    str(tmp_path / "sim" / name),
                    bytes.fromhex(keys[name]),
                    publish=log,
                    timing=timing,
                )
                drivers.append(driver)
                driver.start()
            await log.wait_count(DeviceReady, 2, timeout_s=10)
            bet = await log.wait_for(BetChanged, timeout_s=10)
            assert (bet.seat, bet.spot, bet.amount_cents, bet.chip_count, bet.locked) == (
                2,
                1,
                1500,
                3,
                False,
            )
            key = await log.wait_for(DealerKey, timeout_s=10)
            assert (key.key, key.seat) == ("fold_seat", 4)
        finally:
            for driver in drivers:
                await driver.stop()
            if process.returncode is None:
                process.send_signal(signal.SIGINT)
            async with asyncio.timeout(10):
                rest, errors = await process.communicate()
        assert process.returncode == 0, errors.decode()
        assert rest.decode().rstrip().endswith("stopped")
        assert "t=0.10s display press key=fold_seat seat=4" in rest.decode()

    run_async(body, timeout_s=40)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[[step]]\nat_s = -1\ndevice = 'display'\naction = 'press'\nkey = 'next'",
            r"step\[1\]\.at_s: -1 is not between",
        ),
        (
            "[[step]]\nat_s = 1\ndevice = 'roulette'\naction = 'press'\nkey = 'next'",
            r"step\[1\]\.device: 'roulette'",
        ),
        (
            "[[step]]\nat_s = 1\ndevice = 'display'\naction = 'place'\nseat = 1\nspot = 0\namount_cents = 5",
            r"action: place is not",
        ),
        (
            "[[step]]\nat_s = 1\ndevice = 'display'\naction = 'press'\nkey = 'shuffle'",
            r"step\[1\]\.key: 'shuffle'",
        ),
        (
            "[[step]]\nat_s = 1\ndevice = 'sensors'\naction = 'place'\nseat = 1\nspot = 0",
            r"amount_cents: missing",
        ),
        (
            "[[step]]\nat_s = 1\ndevice = 'sensors'\naction = 'place'\nseat = 'one'\nspot = 0\namount_cents = 5",  # noqa: E501
            r"seat: must be a whole",
        ),
        ("[[step]]\nat_s = 1\ndevice = 'shuffler'\naction = 'fault'\nkind = 'short'", r"needs the position"),
        (
            "[[step]]\nat_s = 1\ndevice = 'shuffler'\naction = 'fault'\nkind = 'fire'",
            r"kind: 'fire' is not one of",
        ),
        (
            "[[step]]\nat_s = 1\ndevice = 'shuffler'\naction = 'silent'\nduration_s = 1\ncolour = 'red'",
            r"colour: unknown field",
        ),
        (
            "[[step]]\nat_s = 1\ndevice = 'display'\naction = 'press'\nkey = 'kill_seat'",
            r"step\[1\]\.seat: fold_seat and kill_seat need a seat 1..7",
        ),
        (
            "[[step]]\nat_s = 1\ndevice = 'display'\naction = 'press'\nkey = 'next'\nseat = 3",
            r"step\[1\]\.seat: fold_seat and kill_seat need a seat 1..7; no other key takes one",
        ),
        ("[table]\nid = 1", r"table: unknown key"),
        ("[[step]\n", r"not TOML"),
        ("[[step]]\nat_s = " + "9" * 5000 + "\n", r"not TOML: a number of more than 4300 digits"),
    ],
)
def test_a_bad_scenario_is_refused_in_one_line_naming_step_and_field(text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as refused:
        parse_scenario(text, source="s.toml", device_kinds=TABLE)
    assert str(refused.value).startswith("s.toml: ")
    assert "\n" not in str(refused.value)


def test_scenario_steps_run_in_time_order() -> None:
    scenario = parse_scenario(
        "[[step]]\nat_s = 2\ndevice = 'display'\naction = 'press'\nkey = 'next'\n"
        "[[step]]\nat_s = 1\ndevice = 'shuffler'\naction = 'open_door'\n",
        source="s.toml",
        device_kinds=TABLE,
    )
    assert [(step.at_s, step.number) for step in scenario.steps] == [(1.0, 2), (2.0, 1)]


def test_the_configured_simulated_devices_are_served_and_real_ones_skipped() -> None:
    key = bytes(range(1, 33))
    specs = specs_from_devices(
        [
            ConfiguredDevice("shuffler", "shuffler", "sim+pty://shuffler", key, "pty"),
            ConfiguredDevice("sensors", "bet_sensors", "sim+tcp://127.0.0.1:7002", None, "tcp", 7002),
            ConfiguredDevice("display", "dealer_display", "/dev/ttyUSB0", key),
        ],
        seats=7,
    )
    assert [(s.name, s.transport, s.tcp_port, s.seats) for s in specs] == [
        ("shuffler", "pty", 0, 7),
        ("sensors", "tcp", 7002, 7),
    ]
    assert specs[0].key == key
    assert len(specs[1].key) == 32  # no key configured: a fresh one
    with pytest.raises(ValueError, match=r"devices\.display\.url: .*only the daemon"):
        specs_from_devices([ConfiguredDevice("display", "dealer_display", "sim+usb://display", None, "usb")])


def test_the_default_table_is_a_shoe_six_seats_of_four_spots_and_a_display() -> None:
    specs = default_specs()
    assert [(s.name, s.kind, s.transport) for s in specs] == [
        ("shuffler", "shuffler", "pty"),
        ("sensors", "bet_sensors", "pty"),
        ("display", "dealer_display", "pty"),
    ]
    assert (specs[1].seats, specs[1].spots) == (6, 4)
    assert len({s.key for s in specs}) == 3
