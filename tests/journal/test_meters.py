"""Meters derived from the journal balance, and agree with the recall records they summarise."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from controller.cli import main
from controller.journal import Journal
from controller.journal.meters import compute_meters
from controller.journal.recall import recall_from
from controller.journal.recovery import recover
from tests.journal.scripted import play_round


def test_meters_balance_over_a_mixed_history(journal: Journal) -> None:
    rng = random.Random(31)
    outcomes = ["settled"] * 6 + ["dead", "open_after_lock", "open_mid_deal", "open_before_lock"]
    played: list[str] = []
    for index in range(60):
        game = ("high-card-flush", "top-flush", "chase-the-flush")[index % 3]
        mode = "designated-player" if game == "high-card-flush" and rng.random() < 0.5 else "house"
        played.append(rng.choice(outcomes))
        play_round(journal, rng, game=game, banking_mode=mode, outcome=played[-1])  # type: ignore[arg-type]
        if rng.random() < 0.3:
            recover(journal)  # a restart now and then
    recover(journal)
    meters = compute_meters(journal)
    records = recall_from(journal)
    assert meters.balanced
    assert meters.rounds_open == 0
    # The engine starts a round when it locks the bets: a crash during betting started none.
    assert 0 < played.count("open_before_lock") < 60
    assert meters.rounds_started == 60 - played.count("open_before_lock") == len(records)
    assert meters.rounds_dead == played.count("dead")
    assert meters.rounds_voided == played.count("open_after_lock") + played.count("open_mid_deal")
    assert meters.rounds_settled == sum(r["status"] == "settled" for r in records)
    assert meters.rounds_dead == sum(r["status"] == "dead" for r in records)
    assert meters.rounds_voided == sum(r["status"] == "void" for r in records)
    # Recomputed independently from the recall records.
    wagers = [w for r in records for seat in r["settlement"]["seats"] for w in seat["wagers"].values()]
    assert meters.handle_cents == sum(w["stake"] for w in wagers if w["result"] != "returned")
    assert meters.returned_cents == sum(w["stake"] for w in wagers if w["result"] == "returned")
    house = [r for r in records if r["settlement"]["banking"] == "house"]
    assert meters.house_win_cents == sum(r["settlement"]["banker_net"] for r in house) + meters.rake_cents
    assert sum(m.house_win_cents for m in meters.by_wager.values()) == sum(
        r["settlement"]["banker_net"] for r in house
    )
    assert sum(m.stake_cents for m in meters.by_wager.values()) == meters.handle_cents
    assert meters.faults_raised == meters.rounds_dead  # the scripted dead rounds each raise one fault
    assert meters.dead_hands == sum(
        seat["status"] == "dead"
        for r in records
        if r["status"] != "void"
        for seat in r["settlement"]["seats"]
    )


def test_an_unbalanced_settlement_is_reported(
    journal: Journal, journal_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    play_round(journal, random.Random(32), players=2)
    round_id = journal.indexes.next_round_id()
    journal.append(
        "round_started",
        {"round_id": round_id, "game": "high-card-flush", "banking": {"mode": "house"}, "seats": [1]},
        round_id=round_id,
        source="engine",
    )
    wrong = {
        "game": "high-card-flush",
        "banking": "house",
        "dead": False,
        "dealer": None,
        "rake": 0,
        "banker_net": 0,
        "seats": [
            {
                "seat": 1,
                "status": "live",
                "hand": None,
                "wagers": {"ante": {"stake": 500, "result": "win", "net": 500}},
                "rake": 0,
                "net": 500,
            }
        ],
    }
    journal.append("round_settled", {"round": {}, "settlement": wrong}, round_id=round_id, source="engine")
    journal.close()
    assert main(["meters", "--journal", str(journal_path), "--json"]) == 1
    meters = json.loads(capsys.readouterr().out)
    assert meters["balanced"] is False
    assert meters["unbalanced_rounds"] == [round_id]
    assert main(["meters", "--journal", str(journal_path)]) == 1
    assert f"NOT BALANCED: ['{round_id}']" in capsys.readouterr().out


def test_meters_command(journal: Journal, journal_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(33)
    for game in ("high-card-flush", "top-flush", "chase-the-flush"):
        play_round(journal, rng, game=game)
    journal.close()
    assert main(["meters", "--journal", str(journal_path)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Rounds: 3 started, 3 settled, 0 dead, 0 voided, 0 open")
    assert text.rstrip().endswith("Balanced: players + banker + rake = 0")
