"""`flushtable recall` as text: amounts as money, hands in words, a dead round's wagers "returned in
full" (never "returned 0.00"); journals made by the real engine (tests/journal/scripted.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from controller.cli import main
from controller.journal import Journal
from controller.journal.recall import recall_records
from controller.money import money
from controller.rules.describe import describe_hand_json
from tests.journal.scripted import play_round


def test_recall_text_in_money_and_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal_path = tmp_path / "journal.sqlite"
    with Journal.open(journal_path, "T1") as journal:
        settled_id = play_round(journal, random.Random(4))
        dead_id = play_round(journal, random.Random(5), outcome="dead")
    assert main(["recall", "--journal", str(journal_path), "--round", settled_id]) == 0
    text = capsys.readouterr().out
    record = recall_records(journal_path, round_id=settled_id)[0]
    settlement = record["settlement"]
    assert describe_hand_json(settlement["dealer"]["hand"]) in text
    for seat in settlement["seats"]:
        assert describe_hand_json(seat["hand"]) in text
        assert f"seat net {money(seat['net'], signed=True)}" in text
        for wager in seat["wagers"].values():
            assert money(wager["stake"]) in text
    assert main(["recall", "--journal", str(journal_path), "--round", dead_id]) == 0
    dead_text = capsys.readouterr().out
    dead = recall_records(journal_path, round_id=dead_id)[0]
    stakes = [w["stake"] for s in dead["settlement"]["seats"] for w in s["wagers"].values()]
    assert stakes
    wager_lines = [line for line in dead_text.splitlines() if "returned" in line]
    assert len(wager_lines) == len(stakes)
    assert all(line.rstrip().endswith("returned in full") for line in wager_lines)
    assert "returned 0.00" not in dead_text


def test_a_dead_rounds_reason_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 24: the reason read "Round dead: {'code': 'red_light', ...}", a Python dict."""
    journal_path = tmp_path / "journal.sqlite"
    with Journal.open(journal_path, "T1") as journal:
        dead_id = play_round(journal, random.Random(5), outcome="dead")
    assert main(["recall", "--journal", str(journal_path), "--round", dead_id]) == 0
    text = capsys.readouterr().out
    assert "  Round dead: shuffler red light during the deal\n" in text + "\n"
    assert "{" not in text  # no Python dict, nor any other raw structure
