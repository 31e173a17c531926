"""The table's process loads no floor (docs/engine.md "Layers"): `flushtable run` in a fresh interpreter
under ``python -X importtime``, which names every module the process imported, lazily or not, until it
exited. Without ``[uplink]``: no psycopg, no nats, no module of controller/floor nor of the floor's
harness. With ``[uplink]``: nats (the uplink's client), still no psycopg and nothing of the floor: the
uplink reads the subjects from the wire contract (controller/uplink/wire.py), never from the floor.

The uplink's server here is a port nobody listens on (127.0.0.1): the uplink really starts and retries
its connection while the table plays its round; what it imports is the same either way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from controller.config import DEFAULT_CONFIG_TOML
from controller.simulation.floor.servers import free_port, make_ca

ROOT = Path(__file__).resolve().parents[1]
FLOOR_SIDE = ("psycopg", "psycopg_pool", "controller.floor", "controller.simulation.floor")


def imported_by_run(config_path: Path, journal_path: Path) -> set[str]:
    """Every module `flushtable run --rounds 1` imported, as ``-X importtime`` lists them."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "controller.cli", "run", "--config", str(config_path),
         "--journal", str(journal_path), "--rounds", "1", "--seed", "3", "--no-panel",
         "--time-scale", "1000", "--log-level", "error"],
        capture_output=True, text=True, timeout=180, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NOTIFY_SOCKET": ""},
    )  # fmt: skip
    lines = done.stderr.splitlines()
    other = [line for line in lines if not line.startswith("import time:")]
    assert done.returncode == 0, "\n".join(other)[-2000:]
    # "import time: <self us> | <cumulative us> | <indented name>"; the header's name: "imported package".
    names = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    names.discard("imported package")
    assert "controller.daemon" in names, "the probe saw no daemon: -X importtime printed nothing?"
    return names


def of(names: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(name for name in names if any(name == top or name.startswith(top + ".") for top in roots))


def test_a_table_without_uplink_imports_no_floor_no_nats_no_psycopg(tmp_path: Path) -> None:
    config_path = tmp_path / "table.toml"
    config_path.write_text(DEFAULT_CONFIG_TOML)
    names = imported_by_run(config_path, tmp_path / "journal.sqlite")
    assert of(names, (*FLOOR_SIDE, "nats")) == []


def test_a_table_with_uplink_imports_nats_but_no_floor_and_no_psycopg(tmp_path: Path) -> None:
    tls = make_ca(tmp_path / "ca")
    (tmp_path / "nats.pw").write_text("not-a-real-password\n")
    config_path = tmp_path / "table.toml"
    config_path.write_text(
        DEFAULT_CONFIG_TOML
        + "\n[uplink]\n"
        + f'servers = ["tls://127.0.0.1:{free_port()}"]\n'
        + 'site = "main"\nuser = "table-SIM1"\npassword_file = "nats.pw"\n'
        + f'ca_file = "{tls.ca_cert}"\n'
    )
    names = imported_by_run(config_path, tmp_path / "journal.sqlite")
    assert "controller.uplink.uplink" in names
    assert "nats" in names
    assert of(names, FLOOR_SIDE) == []


def test_the_floor_command_loads_no_harness_until_the_demo_is_asked_for() -> None:
    """`flushtable floor serve` (and every floor action but `demo`) runs without the floor's harness:
    the command's module, imported in a fresh interpreter, loads nothing of controller/simulation/."""
    probe = "import json, sys, controller.commands.floor; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True, text=True, timeout=120, check=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    names = set(json.loads(done.stdout))
    assert "controller.floor.service" in names
    assert of(names, ("controller.simulation", "sim_devices")) == []
