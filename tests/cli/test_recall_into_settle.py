"""A recall record pipes into `flushtable settle` and gives the recorded settlement (issue 24): 100
rounds of every game and banking, settled and dead, played by the real engine into a real journal file
(tests/journal/scripted.py), recalled with `flushtable recall --jsonl`, settled with `flushtable settle
--jsonl`, and each result compared with the closing entry the engine journaled."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.journal import Journal
from controller.journal.kinds import CLOSING_KINDS
from tests.journal.scripted import play_round

ROUNDS = 100
GAMES = ("high-card-flush", "top-flush", "chase-the-flush")


def _without_hands(settlement: dict[str, Any]) -> dict[str, Any]:
    # round_settled's public settlement is settle's output without its hands (docs/journal.md).
    stripped: dict[str, Any] = json.loads(json.dumps(settlement))
    if isinstance(stripped.get("dealer"), dict):
        stripped["dealer"].pop("hand", None)
    for seat in stripped["seats"]:
        seat.pop("hand", None)
    return stripped


@pytest.fixture(scope="module")
def journal_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("recall_settle") / "journal.sqlite"
    rng = random.Random(24)
    with Journal.open(path, "T1") as journal:
        for number in range(ROUNDS):
            game = GAMES[number % 3]
            dp = game == "high-card-flush" and number % 2 == 0
            play_round(
                journal,
                random.Random(rng.getrandbits(32)),
                game=game,
                banking_mode="designated-player" if dp else "house",
                outcome="dead" if number % 10 == 7 else "settled",
            )
    return path


def _run(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stdin: str = ""
) -> tuple[int, str, str]:
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_recall_jsonl_into_settle_jsonl_gives_the_recorded_settlement(
    journal_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, recalled, _ = _run(
        ["recall", "--journal", str(journal_path), "--last", str(ROUNDS), "--jsonl"], capsys, monkeypatch
    )
    assert status == 0
    records = [json.loads(line) for line in recalled.splitlines()]
    assert len(records) == ROUNDS
    assert {record["status"] for record in records} == {"settled", "dead"}
    status, settled, err = _run(["settle", "--jsonl"], capsys, monkeypatch, stdin=recalled)
    assert (status, err) == (0, "")
    results = [json.loads(line) for line in settled.splitlines()]
    with Journal.open_existing(journal_path) as journal:
        closing = {entry.round_id: entry for entry in journal.entries(kinds=sorted(CLOSING_KINDS))}
    assert len(results) == ROUNDS
    for record, result in zip(records, results, strict=True):
        assert result == record["settlement"], record["round_id"]
        assert _without_hands(result) == _without_hands(closing[record["round_id"]].public["settlement"])


def test_one_recalled_round_into_settle(
    journal_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Journal.open_existing(journal_path) as journal:
        round_id = next(iter(journal.entries(kinds=["round_settled"]))).round_id
    assert round_id is not None
    status, recalled, _ = _run(
        ["recall", "--journal", str(journal_path), "--round", round_id, "--json"], capsys, monkeypatch
    )
    assert status == 0
    [record] = json.loads(recalled)
    status, settled, err = _run(["settle"], capsys, monkeypatch, stdin=recalled)
    assert (status, err) == (0, "")
    assert json.loads(settled) == record["settlement"]
    status, text, _ = _run(["settle", "--text"], capsys, monkeypatch, stdin=recalled)
    assert status == 0
    assert "seat net" in text


def test_many_records_in_one_array_are_refused_in_one_line(
    journal_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, recalled, _ = _run(
        ["recall", "--journal", str(journal_path), "--last", "2", "--json"], capsys, monkeypatch
    )
    status, out, err = _run(["settle"], capsys, monkeypatch, stdin=recalled)
    assert (status, out) == (2, "")
    assert err == (
        "flushtable settle: input: 2 recall records in one array; settle one round, or many with "
        "`flushtable recall --jsonl | flushtable settle --jsonl`\n"
    )
