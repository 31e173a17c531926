"""`flushtable settle --text --config` and `flushtable demo --config` write amounts in the property's money
(the table file's ``[property]``, docs/configuration.md), as recall and the panels do; without
``--config`` they keep the amounts alone. Both read the file only when given it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from controller.cli import main
from controller.config import DEFAULT_CONFIG_TOML
from tests.config.test_property_config import BERLIN_TOML
from tests.rules.test_settle_input import GOOD

# An amount as the text writes it; in euros each one follows the symbol (a sign may come first).
AMOUNT = re.compile(r"(?<![\w.,])[+-]?€?\d[\d,]*\.\d\d\b")


def _berlin_config(tmp_path: Path) -> Path:
    path = tmp_path / "table.toml"
    path.write_text(DEFAULT_CONFIG_TOML + BERLIN_TOML, encoding="utf-8")
    return path


def _amounts(text: str) -> list[str]:
    return AMOUNT.findall(text)


def test_settle_text_with_a_config_writes_the_property_s_money(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(GOOD), encoding="utf-8")
    assert main(["settle", "--text", "--config", str(_berlin_config(tmp_path)), str(path)]) == 0
    text = capsys.readouterr().out
    amounts = _amounts(text)
    assert amounts, text
    assert [a for a in amounts if "€" not in a] == [], text
    assert re.search(r"ante\s+€5\.00\s+win\s+\+€5\.00", text), text
    # Without --config: the amounts alone, as before.
    assert main(["settle", "--text", str(path)]) == 0
    plain = capsys.readouterr().out
    assert "€" not in plain
    assert re.search(r"ante\s+5\.00\s+win\s+\+5\.00", plain), plain


def test_demo_with_a_config_writes_the_property_s_money(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--seed", "3", "--config", str(_berlin_config(tmp_path))]) == 0
    text = capsys.readouterr().out
    amounts = _amounts(text)
    assert len(amounts) > 20, text
    assert [a for a in amounts if "€" not in a] == [], text
    assert main(["demo", "--seed", "3"]) == 0
    assert "€" not in capsys.readouterr().out


def test_a_bad_config_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(GOOD), encoding="utf-8")
    bad = tmp_path / "bad.toml"
    bad.write_text(DEFAULT_CONFIG_TOML + '[property]\ncurrancy = "EUR"\n', encoding="utf-8")
    for args in (
        ["settle", "--text", "--config", str(bad), str(path)],
        ["demo", "--seed", "1", "--config", str(bad)],
    ):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert err.count("\n") == 1, err
        assert "property.currancy: unknown key" in err, err
