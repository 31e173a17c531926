"""`flushtable recall --csv` and `flushtable meters --csv` (issue 24): columns as documented, money in
cents and formatted, and privacy exactly as recall's text — a card is in the CSV where the text shows it
and nowhere else, with or without --private. Journals made by the real engine (tests/journal/scripted.py):
every game, both bankings, dead rounds and a seat killed mid-round."""

from __future__ import annotations

import csv
import io
import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from controller.cli import main
from controller.journal import Journal
from controller.journal.render_csv import METERS_COLUMNS, RECALL_COLUMNS
from controller.money import money
from tests.journal.scripted import play_round

CARD = re.compile(r"(?<![A-Za-z0-9])[2-9TJQKA][shdc](?![A-Za-z0-9])")
GAMES = ("high-card-flush", "top-flush", "chase-the-flush")


@pytest.fixture(scope="module")
def journal_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("csv") / "journal.sqlite"
    rng = random.Random(7)
    with Journal.open(path, "T1") as journal:
        for number in range(18):
            game = GAMES[number % 3]
            play_round(
                journal,
                random.Random(rng.getrandbits(32)),
                game=game,
                banking_mode="designated-player" if game == "high-card-flush" and number % 2 else "house",
                outcome="dead" if number % 5 == 2 else "settled",
                kill_request=number % 4 == 1,
                players=3,
            )
    return path


def _out(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr().out


def _cards_by_round(text: str) -> dict[str, Counter[str]]:
    # recall's text: each round starts with "Round ID"; its card codes counted.
    found: dict[str, Counter[str]] = {}
    for block in text.split("\n\n"):
        round_id = block.split()[1]
        found[round_id] = Counter(CARD.findall(block))
    return found


@pytest.mark.parametrize("private", [False, True])
def test_recall_csv_shows_cards_exactly_where_the_text_does(
    journal_path: Path, capsys: pytest.CaptureFixture[str], private: bool
) -> None:
    flags = ["--private"] if private else []
    base = ["recall", "--journal", str(journal_path), "--last", "100", *flags]
    text = _out(base, capsys)
    rows = list(csv.DictReader(io.StringIO(_out([*base, "--csv"], capsys))))
    records = json.loads(_out([*base, "--json"], capsys))
    assert {row["status"] for row in rows} == {"settled", "dead"}
    assert any(row["seat_status"] == "dead" and row["status"] == "settled" for row in rows)
    in_csv: dict[str, Counter[str]] = {}
    for round_id in {row["round_id"] for row in rows}:
        mine = [row for row in rows if row["round_id"] == round_id]
        cards: Counter[str] = Counter()
        for _seat, seat_cards in {(r["seat"], r["cards"]) for r in mine}:
            cards.update(CARD.findall(seat_cards))
        first = mine[0]
        cards.update(CARD.findall(first["dealer_cards"] + " " + first["community"]))
        in_csv[round_id] = cards
    assert in_csv == _cards_by_round(text)
    for row in rows:
        if row["status"] == "dead" or row["seat_status"] == "dead":
            assert row["cards"] == ""
            assert row["hand"] == ""
    # Money: cents and formatted, and the rows add up to each record's settlement.
    for record in records:
        mine = [row for row in rows if row["round_id"] == record["round_id"]]
        stakes = [w["stake"] for s in record["settlement"]["seats"] for w in s["wagers"].values()]
        assert sorted(int(row["stake_cents"]) for row in mine) == sorted(stakes)
        for row in mine:
            assert row["stake"] == money(int(row["stake_cents"]))
            assert row["net"] == money(int(row["net_cents"]), signed=True)


def test_recall_csv_header_is_the_documented_columns(
    journal_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = _out(["recall", "--journal", str(journal_path), "--csv"], capsys).splitlines()[0]
    assert tuple(header.split(",")) == RECALL_COLUMNS
    docs = (Path(__file__).parents[2] / "docs" / "journal.md").read_text()
    for column in (*RECALL_COLUMNS, *METERS_COLUMNS):
        assert f"`{column}`" in docs, column


def test_meters_csv_holds_every_meter(journal_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meters = json.loads(_out(["meters", "--journal", str(journal_path), "--json"], capsys))
    rows = list(csv.reader(io.StringIO(_out(["meters", "--journal", str(journal_path), "--csv"], capsys))))
    assert tuple(rows[0]) == METERS_COLUMNS
    by_key = {(meter, key): (value, amount) for meter, key, value, amount in rows[1:]}
    assert by_key[("handle_cents", "")] == (str(meters["handle_cents"]), money(meters["handle_cents"]))
    assert by_key[("rounds_settled", "")] == (str(meters["rounds_settled"]), "")
    for wager, meter in meters["by_wager"].items():
        assert by_key[("by_wager.stake_cents", wager)] == (
            str(meter["stake_cents"]),
            money(meter["stake_cents"]),
        )
        assert by_key[("by_wager.wins", wager)] == (str(meter["wins"]), "")
    for kind, count in meters["faults_by_kind"].items():
        assert by_key[("faults_by_kind", kind)] == (str(count), "")


def test_one_output_format_at_a_time(journal_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recall", "--journal", str(journal_path), "--csv", "--json"]) == 2
    assert capsys.readouterr().err == "flushtable recall: --json, --jsonl and --csv: give one of them\n"
    assert main(["meters", "--journal", str(journal_path), "--csv", "--json"]) == 2
    assert capsys.readouterr().err == "flushtable meters: --json and --csv: give one or the other\n"


def test_the_formats_are_checked_before_the_journal_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line's own mistake is said first (as `meters` does), not after the journal was read
    in full, nor hidden behind the journal's refusal."""
    missing = str(tmp_path / "none.sqlite")
    assert main(["recall", "--journal", missing, "--csv", "--jsonl"]) == 2
    assert capsys.readouterr().err == "flushtable recall: --json, --jsonl and --csv: give one of them\n"
