"""`make run PROGRESSIVE=1` (docs/configuration.md "[progressive]", docs/rules.md "Progressive: the
controller"): make run's own table with a stand-alone Progressive wager, played by the real daemon on
the simulated devices over pseudo-terminals with no broker (no NATS, no floor); its meter kept in its
own journal, the books to the cent. The embedded default itself stays without the wager (the seeded
demonstrations and the figures the documents quote depend on it)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from controller.config import DEFAULT_CONFIG_TOML
from controller.journal.kinds import PROGRESSIVE_KINDS
from controller.journal.store import Journal
from controller.progressive import model
from controller.simulation.linked_floor import journal_wagers

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "progressive-table.toml"


def _make_run_command(*variables: str) -> list[str]:
    """The daemon's command line `make run` would run (make's dry run: nothing is installed or run)."""
    dry = subprocess.run(
        ["make", "-n", "-s", "run", *variables],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    (line,) = [line for line in dry.stdout.splitlines() if "flushtable run" in line]
    return shlex.split(line)


def test_make_runs_table_is_the_embedded_default_plus_a_stand_alone_progressive() -> None:
    assert "--config" not in _make_run_command()  # make run alone: the embedded default, no Progressive
    assert "progressive" not in tomllib.loads(DEFAULT_CONFIG_TOML)
    command = _make_run_command("PROGRESSIVE=1")
    assert command[command.index("--config") + 1] == "examples/progressive-table.toml"
    example = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    default = tomllib.loads(DEFAULT_CONFIG_TOML)
    # The same table (id, game, seats, banking, limits, devices, panel), its own journal, no uplink.
    assert {k: v for k, v in example.items() if k not in {"progressive", "journal"}} == {
        k: v for k, v in default.items() if k != "journal"
    }
    assert example["journal"] == {"path": "../var/progressive-journal.sqlite"}
    assert "link" not in example["progressive"]


def test_make_run_progressive_plays_with_no_broker_and_its_books_balance(tmp_path: Path) -> None:
    # make run's command as it stands, from a copy of the checkout's layout (the journal lands in this
    # test's var/, not the checkout's); a few rounds, seeded, faster timers, no panel.
    (tmp_path / "examples").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "examples" / EXAMPLE.name)
    command = _make_run_command("PROGRESSIVE=1")
    arguments = command[command.index("run") :]
    # The product as installed (make install): nothing beside it on the import path, as make run has it.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NATS", "FLUSHTABLE", "PYTHONPATH"))}
    completed = subprocess.run(
        [sys.executable, "-m", "controller.cli", *arguments, "--rounds", "12", "--seed", "7",
         "--time-scale", "50", "--no-panel", "--log-level", "warning"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    journal_path = tmp_path / "var" / "progressive-journal.sqlite"
    with Journal.open_existing(journal_path, readonly=True) as journal:
        events = [stored.entry for stored in journal.replay(kinds=sorted(PROGRESSIVE_KINDS))]
        kinds = {stored.kind for stored in journal.entries()}
    state = model.fold(events)
    wagers = journal_wagers(journal_path)
    assert wagers > 0, "the simulated players took the Progressive wager"
    assert "uplink_synced" not in kinds
    # The books, to the cent: the stand-alone meter's equations, and its in-meter = the wagers the journal
    # settled.
    settings = state.parameters.settings if state.parameters else None
    assert settings is not None
    assert (settings.base_cents, settings.reset_cents, settings.unit_cents) == (100_000, 100_000, 100)
    meter, reserve = state.meter_equation(), state.reserve_equation()
    assert meter[0] == meter[1], meter
    assert reserve[0] == reserve[1], reserve
    assert state.equations_hold()
    assert (state.wagers, state.in_meter_cents) == (wagers, wagers * 100)
    assert state.increments_cents == wagers * 20 - state.overflow_cents
    assert state.hidden_cents == wagers * 5
