"""Recall: records per docs/journal.md, each round settling to its settlement with `flushtable settle`."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.errors import UserError
from controller.journal import Journal
from controller.journal.recall import recall_records
from controller.journal.recovery import recover
from tests.journal.scripted import play_round


@pytest.fixture
def table_history(journal: Journal, journal_path: Path) -> list[str]:
    """Every game and banking mode, a dead round and an interrupted one (voided by recovery)."""
    rng = random.Random(21)
    ids = [
        play_round(journal, rng, game="high-card-flush"),
        play_round(journal, rng, game="high-card-flush", banking_mode="designated-player"),
        play_round(journal, rng, game="top-flush"),
        play_round(journal, rng, game="chase-the-flush", players=7),
        play_round(journal, rng, game="high-card-flush", outcome="dead"),
        play_round(journal, rng, game="chase-the-flush", outcome="open_mid_deal"),
    ]
    recover(journal)
    ids += [play_round(journal, rng, game=game) for game in ("top-flush", "high-card-flush") * 3]
    journal.close()
    return ids


def test_records_follow_the_contract(journal_path: Path, table_history: list[str]) -> None:
    records = recall_records(journal_path)
    assert [record["round_id"] for record in records] == table_history
    assert [record["status"] for record in records][:6] == [
        "settled",
        "settled",
        "settled",
        "settled",
        "dead",
        "void",
    ]
    audit = recall_records(journal_path, with_private=True)
    assert [record["round_id"] for record in audit] == table_history
    with Journal.open_existing(journal_path) as journal:
        for record, audited in zip(records, audit, strict=True):
            contract = {"round_id", "status", "round", "settlement", "faults", "dead_hands", "events"}
            dp_settled = record["status"] == "settled" and record["round"]["banking"]["mode"] != "house"
            # A designated player's settled round also carries the bank after each seat is paid.
            assert set(record) == contract | ({"bank_by_seat"} if dp_settled else set())
            entries = list(journal.entries(round_id=record["round_id"]))
            assert any(e.private is not None for e in entries)  # the deal's cards, at least
            # The gate: a settled round is revealed (no seat died in these), so every private part
            # shows; a dead or voided round's never do (a dead hand's cards are never shown).
            dead_seats = any(seat["status"] == "dead" for seat in record["settlement"]["seats"])
            revealed = record["status"] == "settled" and not dead_seats
            if record["status"] == "settled":
                assert not dead_seats
            assert record["events"] == [
                {
                    "seq": e.seq,
                    "time_utc": e.time_utc,
                    "source": e.source,
                    "kind": e.kind,
                    "payload": e.payload if revealed else e.public,
                    "private": e.private if revealed else None,
                    "hidden": e.private is not None and not revealed,
                }
                for e in entries
            ]
            assert record["faults"] == [
                e.payload if revealed else e.public for e in entries if e.kind == "fault_raised"
            ]
            # The auditor's record (--private) carries every private part, whatever the round.
            assert audited["events"] == [
                {
                    "seq": e.seq,
                    "time_utc": e.time_utc,
                    "source": e.source,
                    "kind": e.kind,
                    "payload": e.payload,
                    "private": e.private,
                    "hidden": False,
                }
                for e in entries
            ]
            assert audited["faults"] == [e.payload for e in entries if e.kind == "fault_raised"]
            assert (audited["round"], audited["settlement"]) == (record["round"], record["settlement"])
    assert records[4]["faults"][0]["kind"] == "red_light"
    # A dead round's fault says why in public words, never with a card; its details stay private.
    assert records[4]["faults"][0]["reason"]["code"] == "red_light"
    assert "detail" not in records[4]["faults"][0]
    assert "message" in audit[4]["faults"][0]  # the private ReasonDetail, merged for the auditor


def test_each_recalled_round_settles_to_its_settlement_with_flushtable_settle(
    journal_path: Path, table_history: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recall", "--journal", str(journal_path), "--last", "100", "--json"]) == 0
    records: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    assert len(records) == len(table_history)
    # One settle run over all of them: --jsonl settles one round per line, in order.
    rounds_file = tmp_path / "rounds.jsonl"
    rounds_file.write_text("".join(json.dumps(record["round"]) + "\n" for record in records))
    assert main(["settle", "--jsonl", str(rounds_file)]) == 0
    settled = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert settled == [record["settlement"] for record in records]


def test_last_and_round_select(
    journal_path: Path, table_history: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert [r["round_id"] for r in recall_records(journal_path, last=3)] == table_history[-3:]
    assert [r["round_id"] for r in recall_records(journal_path, round_id=table_history[2])] == [
        table_history[2]
    ]
    # The default is the last 10 rounds.
    assert main(["recall", "--journal", str(journal_path), "--json"]) == 0
    assert [r["round_id"] for r in json.loads(capsys.readouterr().out)] == table_history[-10:]
    with pytest.raises(UserError, match="round RT1-20991231-000001: not in the journal"):
        recall_records(journal_path, round_id="RT1-20991231-000001")
    assert main(["recall", "--journal", str(journal_path), "--last", "0"]) == 2
    assert capsys.readouterr().err == "flushtable recall: --last: must be at least 1, not 0\n"
    assert main(["recall", "--journal", str(journal_path), "--last", "2", "--round", "x"]) == 2
    capsys.readouterr()


def test_an_open_round_is_not_recalled(journal: Journal, journal_path: Path) -> None:
    open_round = play_round(journal, random.Random(22), outcome="open_after_lock")
    assert recall_records(journal_path) == []
    with pytest.raises(UserError, match="not closed yet"):
        recall_records(journal_path, round_id=open_round)


def test_terminal_recall_is_readable_and_never_shows_a_dead_hands_cards(
    journal_path: Path, table_history: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recall", "--journal", str(journal_path), "--round", table_history[0]]) == 0
    text = capsys.readouterr().out
    record = recall_records(journal_path, round_id=table_history[0])[0]
    assert text.startswith(f"Round {table_history[0]}  SETTLED  High Card Flush, house-banked")
    assert " ".join(record["round"]["dealer"]) in text
    for seat in record["settlement"]["seats"]:
        assert f"Seat {seat['seat']}" in text
        assert (
            f"net {'+' if seat['net'] > 0 else ''}{seat['net'] / 100:,.2f}".replace("net -", "net -") in text
        )
    assert main(["recall", "--journal", str(journal_path), "--round", table_history[1]]) == 0
    dp_text = capsys.readouterr().out
    dp_record = recall_records(journal_path, round_id=table_history[1])[0]
    dp_seat = dp_record["round"]["banking"]["seat"]
    assert f"High Card Flush, designated player seat {dp_seat}" in dp_text
    assert f"Designated player seat {dp_seat}: funds 10,000.00" in dp_text
    dead_id = table_history[4]
    assert main(["recall", "--journal", str(journal_path), "--round", dead_id]) == 0
    text = capsys.readouterr().out
    dead = recall_records(journal_path, round_id=dead_id)[0]
    assert "Cards withheld" in text
    assert "red_light (latching)" in text
    for card in dead["round"]["dealer"] + [c for seat in dead["round"]["seats"] for c in seat["cards"]]:
        assert f" {card} " not in f" {text} ".replace("\n", " ")
    assert main(["recall", "--journal", str(journal_path), "--round", table_history[5]]) == 0
    assert "Round voided by recovery" in capsys.readouterr().out
