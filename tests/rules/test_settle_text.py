"""`flushtable settle --text`: the settlement as a dealer or supervisor reads it, from the real command."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.journal.render import render_settlement
from controller.rules.settle import settle_round_json
from tests.rules.builders import dp, round_json, seat
from tests.rules.test_settle_cli import run_cli
from tests.rules.test_settle_input import GOOD


def test_settle_text_prints_hands_in_words_each_wager_and_the_totals(tmp_path: Path) -> None:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(GOOD))
    done = run_cli(["settle", "--text", str(path)])
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == "High Card Flush, house-banked"
    assert lines[1].startswith("  Dealer     Ts 7s 2s 3d 5d 8c Jh")
    assert lines[1].endswith("3-card spade flush, 10 high (10 7 2): qualifies")
    assert "Seat 1" in lines[2]
    assert lines[2].endswith("4-card heart flush, A high (A K 9 4)")
    assert lines[3].split() == ["ante", "5.00", "win", "+5.00"]
    assert lines[4].split() == ["raise", "5.00", "win", "+5.00"]
    assert lines[5].split() == ["seat", "net", "+10.00"]
    assert lines[6].endswith("3-card diamond flush, 9 high (9 6 4)  [folded]")
    assert lines[7].split() == ["ante", "5.00", "lose", "-5.00"]
    assert lines[9].split() == ["Players", "net", "+5.00", "banker", "net", "-5.00", "rake", "0.00"]


def test_settle_text_on_standard_input_and_a_refusal_is_one_line() -> None:
    done = run_cli(["settle", "--text"], stdin=json.dumps(GOOD))
    assert done.returncode == 0
    assert done.stdout.startswith("High Card Flush, house-banked\n")
    refused = run_cli(["settle", "--text"], stdin=json.dumps({**GOOD, "game": "baccarat"}))
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.startswith("flushtable settle: game: unknown game 'baccarat'")
    both = run_cli(["settle", "--text", "--jsonl"], stdin="")
    assert both.returncode == 2
    assert both.stderr == "flushtable settle: --text and --jsonl: give one or the other\n"


def test_a_dead_seat_and_a_dead_round_say_returned_in_full() -> None:
    obj = round_json(
        "high-card-flush",
        "Ts 7s 2s 3d 5d 8c Jh",
        seat(1, "Ah Kh 9h 4h 2c 6c", ante=2500),  # six cards: dead
        seat(2, "9d 6d 4d Kc 2h 3h 6s", ante=500, folded=True),
    )
    text = render_settlement(obj, settle_round_json(obj))
    assert "[dead: " in text
    ante_line = next(line for line in text.splitlines() if "25.00" in line)
    assert ante_line.split() == ["ante", "25.00", "returned", "in", "full"]
    assert "0.00" not in ante_line
    dead_round = {**obj, "dead": True}
    text = render_settlement(dead_round, settle_round_json(dead_round))
    assert text.splitlines()[0] == "High Card Flush, house-banked  DEAD"
    assert "every wager is returned in full" in text
    assert text.count("returned in full") == 3  # the line above and both antes


def test_a_designated_player_round_shows_the_cap_and_the_shortfall() -> None:
    obj = round_json(
        "high-card-flush",
        "Kd 9d 2c 7h 4s Jc 8s",
        seat(3, "5h 4h 3h 2h Qc Tc 9s", ante=500, raise_=500, straight_flush=100),
        seat(5, "Ad Qd 6d 3d 2d 5c 3s", ante=500, raise_=1000),
        banking=dp(4, 12_000, bonus_cap=5000),  # covers seat 3's 2,000 + the capped bonus 5,000, seat 5
    )
    settlement = settle_round_json(obj)
    text = render_settlement(obj, settlement)
    assert text.splitlines()[0] == "High Card Flush, designated player seat 4"
    assert "4-card heart flush, 5 high (5 4 3 2); 4-card straight flush, 5 high" in text
    assert "Designated player seat 4: funds 120.00" in text
    seats: list[dict[str, Any]] = settlement["seats"]  # type: ignore[assignment]
    seat3 = next(s for s in seats if s["seat"] == 3)
    bonus = seat3["wagers"]["straight_flush"]
    assert bonus.get("capped_from") is not None or bonus.get("shortfall")
    if bonus.get("capped_from") is not None:
        assert f"capped from {bonus['capped_from'] // 100:,}.{bonus['capped_from'] % 100:02d}" in text
    if bonus.get("shortfall"):
        assert "owed, not paid" in text


def test_the_documents_text_example_is_what_the_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.rules.test_docs import DOC, examples

    shown = re.search(r"```text settle-text\n(.*?)\n```", DOC.read_text(), re.DOTALL)
    assert shown is not None
    path = tmp_path / "round.json"
    path.write_text(examples()[1][0])
    assert main(["settle", "--text", str(path)]) == 0
    assert capsys.readouterr().out == shown.group(1) + "\n"
