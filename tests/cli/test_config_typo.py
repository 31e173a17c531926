"""A misspelt key is named, with the key meant, before the right spelling is reported "missing" (issue
24: `min_ante_cent` read "limits.min_ante_cents: missing"). Real files, the real command."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cli import main
from tests.config.test_config import BASE


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        (
            "min_ante_cents = 500",
            "min_ante_cent = 500",
            "limits.min_ante_cent: unknown key (did you mean 'min_ante_cents'?)",
        ),
        (
            "max_ante_cents = 50000",
            "max_ante = 50000",
            "limits.max_ante: unknown key (did you mean 'max_ante_cents'?)",
        ),
    ],
)
def test_a_typo_names_the_unknown_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, line: str
) -> None:
    assert old in BASE
    config = tmp_path / "table.toml"
    config.write_text(BASE.replace(old, new, 1))
    assert main(["config", "--config", str(config)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"flushtable config: table.toml: {line}\n"
