"""`flushtable integrity` prints amounts as money (issue 17: it printed `staked 23100`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main
from controller.integrity import check_records
from controller.money import money
from tests.integrity_sim import hcf_records


def test_the_wager_table_reads_in_money(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = hcf_records(200, seed=5)
    path = tmp_path / "records.json"
    path.write_text(json.dumps(records))
    main(["integrity", "--records", str(path)])
    out = capsys.readouterr().out
    verdict = check_records(records)
    assert verdict.wagers
    for wager in verdict.wagers:
        line = next(line for line in out.splitlines() if line.startswith(wager.wager + " "))
        assert money(wager.staked_cents) in line.split()
        assert money(wager.net_cents, signed=True) in line.split()
        assert str(wager.staked_cents) not in line.split()
