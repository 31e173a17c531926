"""Must show (short version): the soak of bench/soak_table.py — 50 accelerated rounds through the whole
stack with random faults (line noise, unplugs, red lights, miscounts, a card read twice,
past-posting), a simulated supervisor clearing latched faults — and every money line balances.
The 2,000-round run is `python bench/soak_table.py` (its figures are in the report)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.daemon.harness import REPO
from tests.device_harness.leaks import run_async


def load_soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("soak_table", REPO / "bench" / "soak_table.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak_table"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_soak_with_random_faults_balances(tmp_path: Path) -> None:
    soak = load_soak()
    report = run_async(
        lambda: soak.soak(tmp_path / "journal.sqlite", rounds=50, seed=5, fault_rate=0.5, time_scale=1000.0),
        timeout_s=150.0,
    )
    assert report["ok"], report
    assert report["rounds_played"] >= 50
    assert not report["stalled"]
    assert sum(report["faults_injected"].values()) >= 10, report["faults_injected"]
    assert report["dead"] >= 1, report  # the faults did something
    assert report["held"] >= 1, report
    assert report["money_lines_balance"]
    assert report["meters_balanced"]
    assert report["chain_verifies"]
    assert report["closed_twice"] == []
    assert report["never_closed"] == []
