"""docs/settle.md's worked examples settle exactly as the document shows, and its refused inputs are
refused with exactly the error line it shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from controller.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "settle.md"
EXAMPLE = re.compile(r"```json settle-input\n(.*?)\n```\s*```json settle-output\n(.*?)\n```", re.DOTALL)
REFUSAL = re.compile(r"```json settle-refused\n(.*?)\n```\s*```text settle-error\n(.*?)\n```", re.DOTALL)


def examples() -> list[tuple[str, str]]:
    return EXAMPLE.findall(DOC.read_text())


def refusals() -> list[tuple[str, str]]:
    return REFUSAL.findall(DOC.read_text())


def test_the_document_has_its_examples() -> None:
    assert len(examples()) >= 6
    assert len(refusals()) >= 4


@pytest.mark.parametrize(("round_text", "settlement_text"), examples())
def test_each_worked_example_settles_as_shown(
    round_text: str, settlement_text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "round.json"
    path.write_text(round_text)
    assert main(["settle", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(settlement_text)


@pytest.mark.parametrize(("round_text", "error_line"), refusals())
def test_each_refused_input_is_refused_with_the_line_shown(
    round_text: str, error_line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "round.json"
    path.write_text(round_text)
    assert main(["settle", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == error_line + "\n"


def test_every_test_docs_rules_md_cites_exists() -> None:
    rules = (DOC.parent / "rules.md").read_text()
    cited = set(re.findall(r"::(test_[a-z0-9_]+)", rules))
    assert len(cited) > 40
    sources = "\n".join(path.read_text() for path in (DOC.parents[1] / "tests").rglob("test_*.py"))
    defined = set(re.findall(r"^def (test_[a-z0-9_]+)", sources, re.MULTILINE))
    # A citation ending in "_" (written "..._...") names the start of a test's name.
    missing = {name for name in cited if not any(test.startswith(name) for test in defined)}
    assert not missing
