"""Scenario values out of range are refused whole, before anything starts (issue 30 item 4): they passed
the up-front check and were refused mid-run, after the journal was opened (``duration_s = nan`` never).

Each value is refused by the one loader `run --scenario` and `sim --scenario` use, naming the step and
the field; through the real process, a refused scenario leaves no journal behind."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from controller.config import load_config
from controller.errors import UserError
from controller.simulation.scenario import load_scenario, sensor_spots
from controller.simulation.table import SIM_FIRMWARE

ROOT = Path(__file__).resolve().parents[2]

PLACE = 'device = "sensors"\naction = "place"\n'
KEY_BANK = 'device = "display"\naction = "key_bank"\n'
# (step body after at_s, the field named in the refusal)
OUT_OF_RANGE = [
    (PLACE + "seat = 0\nspot = 0\namount_cents = 1000\n", "seat"),
    (PLACE + "seat = 99\nspot = 0\namount_cents = 1000\n", "seat"),
    (PLACE + "seat = 7\nspot = 0\namount_cents = 1000\n", "seat"),  # the default table has 6 seats
    (PLACE + "seat = 1\nspot = 99\namount_cents = 1000\n", "spot"),
    (PLACE + "seat = 1\nspot = 4\namount_cents = 1000\n", "spot"),  # 4 spots: 0..3
    (PLACE + "seat = 1\nspot = 0\namount_cents = -100\n", "amount_cents"),
    (PLACE + "seat = 1\nspot = 0\namount_cents = 100000000000000000000000\n", "amount_cents"),
    (PLACE + "seat = 1\nspot = 0\namount_cents = 1000\nchip_count = 70000\n", "chip_count"),
    (PLACE + "seat = 1\nspot = 0\namount_cents = 0\nchip_count = 3\n", "chip_count"),
    (KEY_BANK + "seat = 0\namount_cents = 1000\n", "seat"),
    (KEY_BANK + "seat = 1\namount_cents = 100000000000000000000000\n", "amount_cents"),
    ('device = "display"\naction = "press"\nkey = "fold_seat"\nseat = 99\n', "seat"),
    ('device = "sensors"\naction = "silent"\nduration_s = nan\n', "duration_s"),
    ('device = "sensors"\naction = "unplug"\nduration_s = 1e300\n', "duration_s"),
    ('device = "sensors"\naction = "unplug"\nduration_s = inf\n', "duration_s"),
    ('device = "shuffler"\naction = "fault"\nkind = "jam"\nat_card = 99\n', "at_card"),
    ('device = "shuffler"\naction = "fault"\nkind = "short"\nposition = 9\n', "position"),
    ('device = "shuffler"\naction = "resend"\nposition = 99\nindex = 0\n', "position"),
    ('device = "shuffler"\naction = "resend"\nposition = 1\nindex = 99\n', "index"),
    ('device = "sensors"\naction = "sensor_fault"\ncode = 0\n', "code"),
    (
        'after = "deal"\ncount = 100000000000000000000\n'
        + 'device = "display"\naction = "press"\nkey = "next"\n',
        "count",
    ),
]


@pytest.mark.parametrize(
    ("body", "field"), OUT_OF_RANGE, ids=[f"{i}-{f}" for i, (_, f) in enumerate(OUT_OF_RANGE)]
)
def test_an_out_of_range_value_is_refused_up_front(tmp_path: Path, body: str, field: str) -> None:
    config = load_config(None)
    kinds = {device.name: SIM_FIRMWARE[device.kind] for device in config.devices.values()}
    path = tmp_path / "s.toml"
    path.write_text("[[step]]\nat_s = 0.5\n" + body)
    with pytest.raises(UserError) as refused:
        load_scenario(path, kinds, seats=config.seats, spots=sensor_spots(config.banking.mode))
    message = str(refused.value)
    assert message.startswith(f"--scenario: {path}: step[1].{field}: "), message
    assert "\n" not in message


def test_every_shipped_scenario_still_loads() -> None:
    config = load_config(None)
    kinds = {device.name: SIM_FIRMWARE[device.kind] for device in config.devices.values()}
    for path in sorted((ROOT / "tests" / "daemon" / "scenarios").glob("*.toml")):
        # Designated-player scenarios have 8 spots a seat (the bank spot, 7).
        load_scenario(path, kinds, seats=7, spots=8)


def _limits() -> None:
    limit = 3 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize("body", [OUT_OF_RANGE[12][0], OUT_OF_RANGE[1][0]], ids=["nan-duration", "seat-99"])
def test_run_refuses_before_the_journal_is_opened(tmp_path: Path, body: str) -> None:
    (tmp_path / "s.toml").write_text("[[step]]\nat_s = 0.5\n" + body)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "controller.cli", "run", "--no-panel", "--rounds", "1"),
            *("--time-scale", "50", "--journal", "j.sqlite", "--scenario", "s.toml"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NOTIFY_SOCKET": ""},
        preexec_fn=_limits,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("flushtable run: --scenario: s.toml: step[1].")
    assert not (tmp_path / "j.sqlite").exists()
