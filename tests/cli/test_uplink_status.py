"""`flushtable uplink status` says whether the table streams at all (issue 24): a table with no
``[uplink]`` has no uplink configured, not "nothing acknowledged by the floor yet". Real journal and
configuration files in a temporary directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main
from controller.journal import Journal
from tests.config.test_config import BASE
from tests.config.test_uplink_section import UPLINK


def _journal(directory: Path) -> Path:
    path = directory / "journal.sqlite"
    with Journal.open(path, "T1"):
        pass
    return path


def test_no_uplink_configured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = _journal(tmp_path)
    config = tmp_path / "table.toml"
    config.write_text(BASE)
    assert main(["uplink", "status", "--journal", str(journal), "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"table T1: no uplink configured (no [uplink] in {config}): this table sends nothing"
    )
    assert "acknowledged" not in out
    assert main(["uplink", "status", "--journal", str(journal)]) == 0  # the embedded configuration
    assert "no uplink configured (no [uplink] in the embedded configuration)" in capsys.readouterr().out
    assert main(["uplink", "status", "--journal", str(journal), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["uplink_configured"] is False


def test_uplink_configured_and_nothing_acknowledged_yet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "nats-table.pw").write_text("s3cret-table-password\n")
    (tmp_path / "floor-ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    journal = _journal(tmp_path)
    config = tmp_path / "table.toml"
    config.write_text(BASE + UPLINK)
    assert main(["uplink", "status", "--journal", str(journal), "--config", str(config)]) == 0
    assert "nothing acknowledged by the floor yet" in capsys.readouterr().out
