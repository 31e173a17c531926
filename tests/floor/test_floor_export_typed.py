"""The floor's round CSV (controller/floor/export.py ``round_record``), which reads the round page's events
as their typed entries, is byte for byte the table's own `flushtable recall --csv --round` for every
closed round of real journals: the real engine plays settled rounds of every game (a designated
player's bank included), a dead round (the shoe's red light), a voided round, a confirmed kill and a
past-post. The page's events are made from each journal as the floor's round page makes them from its
rows (controller/floor/panel/views.py ``_event_rows``): the public part as canonical JSON, the private
part only where the one reducer's gate shows it. A viewer's page (no private part) gives the same rows
with no card and no hand. The over-a-real-floor, in-Chromium check of the same promise is
tests/floor/test_floor_csv.py; this one needs no server and covers more kinds of round."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.floor import export
from controller.journal.chain import canonical_json
from controller.journal.kinds import CLOSING_KINDS
from controller.journal.state import TableState
from controller.journal.store import Journal
from tests.floor.helpers import Tables

CSV_CARD = re.compile(r"(?<![A-Za-z0-9])[2-9TJQKA][shdc](?![A-Za-z0-9])")


# The recall CSV's columns read from a private part (the cards, and the hands in words): a viewer's are
# empty, or "-" for a hand withheld (``describe_hand_json``'s word for none). Every other column is public.
PRIVATE_CSV_COLUMNS = frozenset({"dealer_cards", "dealer_hand", "community", "cards", "hand"})


def assert_viewer_csv_is_the_public_part(full_csv: str, viewer_csv: str, where: str) -> None:
    """A viewer's round CSV (no private part) has the rows of a reader of private parts, each with every
    public column as theirs (the game, the banking, the dealer's qualification, each stake and net), and
    each private one "withheld" where theirs holds cards or a hand, empty where theirs is empty (no card:
    the viewer tells "withheld from you" from "no card")."""
    full_rows = list(csv.DictReader(io.StringIO(full_csv)))
    viewer_rows = list(csv.DictReader(io.StringIO(viewer_csv)))
    assert len(viewer_rows) == len(full_rows), where
    for full, viewer in zip(full_rows, viewer_rows, strict=True):
        assert {c: v for c, v in viewer.items() if c not in PRIVATE_CSV_COLUMNS} == {
            c: v for c, v in full.items() if c not in PRIVATE_CSV_COLUMNS
        }, where
        shown = {c: ("" if full[c] == "" else "withheld") for c in PRIVATE_CSV_COLUMNS}
        assert {c: viewer[c] for c in PRIVATE_CSV_COLUMNS} == shown, (where, viewer, full)


def page_events(journal: Journal, round_id: str, *, show_private: bool) -> list[dict[str, Any]]:
    """A round's events as the floor's round page lists them (``_event_rows``)."""
    entries = [entry for entry in journal.entries() if entry.round_id == round_id]
    state = TableState(journal.table_id).apply_all(entries)
    return [
        {
            "time_utc": entry.time_utc,
            "kind": entry.kind,
            "public": canonical_json(entry.public),
            "private": canonical_json(entry.private)
            if show_private and entry.private is not None and state.private_visible(entry)
            else None,
        }
        for entry in entries
    ]


def play_corpus(directory: Path) -> Tables:
    """Real journals: every game's settled rounds, a dead, a voided, a kill and a past-post round."""
    tables = Tables(directory, ["T1", "T2", "T3", "T4"])  # the helper's four games, one a table
    for table_id in tables.ids:
        tables.play(table_id, 2)
    tables.play("T1", 1, outcome="dead")
    tables.play("T2", 1, outcome="void")
    tables.play("T3", 1, kill_request=True)
    tables.play("T4", 1, past_post=True, accept_past_post=True)
    tables.play("T1", 1, outcome="open_mid_deal")  # not closed: no CSV
    return tables


def closed_rounds(journal: Journal) -> list[str]:
    return [str(entry.round_id) for entry in journal.entries(kinds=sorted(CLOSING_KINDS))]


def test_the_floors_round_csv_is_the_tables_recall_csv_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tables = play_corpus(tmp_path / "tables")
    compared, statuses, opened = 0, set(), []
    try:
        for table_id, journal in tables.journals.items():
            for round_id in closed_rounds(journal):
                record = export.round_record(round_id, page_events(journal, round_id, show_private=True))
                assert record is not None, f"{table_id} {round_id}: a closed round has a record"
                statuses.add(record["status"])
                capsys.readouterr()
                assert (
                    main(["recall", "--journal", str(tables.path(table_id)), "--csv", "--round", round_id])
                    == 0
                )
                assert export.round_csv(record) == capsys.readouterr().out, f"{table_id} {round_id}"
                if record["status"] == "settled":  # revealed: the auditor's CSV has the cards
                    assert CSV_CARD.search(export.round_csv(record)), f"{table_id} {round_id}"
                compared += 1
                # A viewer's page shows no private part: the same rows, not one card.
                viewer = export.round_record(round_id, page_events(journal, round_id, show_private=False))
                assert viewer is not None
                assert viewer["status"] == record["status"]
                viewer_csv = export.round_csv(viewer)
                assert not CSV_CARD.search(viewer_csv), f"{table_id} {round_id}: a card in a viewer's CSV"
                assert viewer_csv.count("\n") == export.round_csv(record).count("\n")
                assert_viewer_csv_is_the_public_part(
                    export.round_csv(record), viewer_csv, f"{table_id} {round_id}"
                )
            for open_round in {str(e.round_id) for e in journal.entries() if e.round_id} - set(
                closed_rounds(journal)
            ):
                opened.append(open_round)
                assert (
                    export.round_record(open_round, page_events(journal, open_round, show_private=True))
                    is None
                )
    finally:
        tables.close()
    assert statuses == {"settled", "dead", "void"}
    assert compared == 4 * 2 + 4
    assert len(opened) == 1  # T1's round left mid-deal
