"""A table with the Progressive wager balances: players + banker + rake + the progressive's net = 0, round
by round and in total, in every reader of the meters (`flushtable meters`, the stored totals, the
reducer's fold the floor stores, the panel's shift meters from the totals and folded). Before schema 4
every round with a Progressive wager was listed NOT BALANCED (issue 29).

The rounds are the round engine's own (Top Flush with the Progressive, the seats playing it at random,
a fixed award paid), written to a real SQLite journal file."""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.engine import TableConfig
from controller.journal import Journal
from controller.journal.meters import compute_meters, fold_meters
from controller.journal.state import TableState
from controller.panel.shift_meters import fold_range, range_meters
from tests.engine.table import Table, stack
from tests.progressive.test_table_progressive import (
    DEALER,
    NOTHING,
    NOTHING_2,
    PARAMETERS,
    THREE_CARD_SF,
    play,
    progressive,
)

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
CLOSINGS = ("round_settled", "round_dead", "round_voided")


def stepping_clock(step_s: float = 7.0) -> Iterator[datetime]:
    """A clock for the journal that moves on by ``step_s`` a reading (no wall clock)."""
    moment = START
    while True:
        yield moment
        moment += timedelta(seconds=step_s)


def progressive_session_records(rounds: int = 12) -> list[list[Any]]:
    """The engine's records of ``rounds`` rounds at a Top Flush table with the Progressive (three seats
    ante and play; each plays the Progressive at random; the first round pays a fixed award), one list
    per round, closing entry last."""
    rng = random.Random(29)
    table = Table(TableConfig(game="top-flush", progressive=PARAMETERS, table_id="T1"), [])
    for number in range(rounds):
        if number == 0:
            table.deck = stack(THREE_CARD_SF, NOTHING, NOTHING_2, DEALER)
        else:
            table.deck = list(range(52))
            rng.shuffle(table.deck)
        table.next_card = 0
        playing = {seat: 100 for seat in (1, 2, 3) if number == 0 or rng.random() < 0.7}
        play(table, playing)
        table.key("next")
        assert table.engine.view().state == "idle"
        for seat in (1, 2, 3):  # the chips paid and collected
            table.bet(seat, "ante", 0)
            table.bet(seat, "play", 0)
            if seat in playing:
                progressive(table, seat, 0)
    batches: list[list[Any]] = [[]]
    for record in table.journal():
        batches[-1].append(record)
        if record.kind in CLOSINGS:
            batches.append([])
    return [batch for batch in batches if batch]


def write_progressive_journal(path: Path, rounds: int = 12) -> None:
    ticks = stepping_clock()
    with Journal.open(path, "T1", clock=lambda: next(ticks), synchronous="OFF") as journal:
        for batch in progressive_session_records(rounds):
            journal.append_many(batch)


def settlements(path: Path) -> list[dict[str, Any]]:
    """The settled rounds' settlements, read from the file with SQLite alone (no product code)."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        rows = connection.execute("SELECT payload FROM journal WHERE kind = 'round_settled' ORDER BY seq")
        return [json.loads(payload)["settlement"] for (payload,) in rows]


def test_a_progressive_table_balances_in_every_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "journal.sqlite"
    write_progressive_journal(path)
    settled = settlements(path)
    with_progressive = [s for s in settled if s.get("progressive", {}).get("net_cents")]
    assert with_progressive, "the session played no Progressive wager"
    progressive_net = sum(int(s.get("progressive", {}).get("net_cents", 0)) for s in settled)
    assert progressive_net != 0

    assert main(["meters", "--journal", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["balanced"] is True
    assert shown["unbalanced_rounds"] == []
    assert shown["progressive_net_cents"] == progressive_net
    assert shown["player_net_cents"] + shown["banker_net_cents"] + shown["rake_cents"] + progressive_net == 0
    assert main(["meters", "--journal", str(path)]) == 0
    text = capsys.readouterr().out
    assert "Balanced: players + banker + rake + progressive = 0" in text

    with Journal.open_existing(path, readonly=True) as journal:
        stored = compute_meters(journal)  # the `all` row of the totals
        folded = fold_meters(journal)
        floor = TableState("T1").apply_all(journal.replay()).meters  # what the floor's projection stores
        start_utc, end_utc = "2026-12-01T09:00:00.000000Z", "2026-12-01T10:00:00.000000Z"
        shift_totals = range_meters(journal, start_utc, end_utc)
        shift_folded = fold_range(journal.entries(), start_utc, end_utc)
    for meters in (stored, folded, floor, shift_totals.meters, shift_folded.meters):
        assert meters.to_json() == shown | {"rounds_open": meters.rounds_open}
