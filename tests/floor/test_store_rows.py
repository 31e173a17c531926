"""The rows the floor's batch writes for its tables and rounds (controller/floor/store.py): each is
JSON's own values, so the batch's one-statement upsert sends them as one json.dumps of the rows with no
pass over every value (docs/floor.md "CPU per message"), and what PostgreSQL reads back from that
document is what the table's reducer holds. Built from three real tables' journals (one of each game),
folded by the floor's own checks; no PostgreSQL needed for what is tested here (the rows' shape)."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from controller.floor import checks, store
from controller.floor.checks import TableProjection
from controller.floor.store import round_rows, rows_document, table_row
from controller.journal.state import TableState
from controller.journal.state_parts import METERED_KINDS, Meters
from controller.journal.store import Journal
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink import wire


def _projections(base: Path) -> list[TableProjection]:
    projections: list[TableProjection] = []
    for index, game in enumerate(MIXED_GAMES):
        table_id = f"R{index}"
        journal = Journal.open(base / f"{table_id}.sqlite", table_id, synchronous="OFF")
        try:
            sim = SimTable(journal, game, random.Random(index))
            for _ in range(3):
                sim.play_round()
            projection = TableProjection(table_id, state=TableState(table_id))
            for stored in journal.entries():
                entry = wire.decode(wire.entry_body(stored.public_json()))
                assert isinstance(entry, wire.EntryMessage)
                assert checks.chain_problem(projection, entry) is None
                checks.fold_entry(projection, entry)
        finally:
            journal.close()
        projections.append(projection)
    return projections


def test_table_and_round_rows_are_json_values_as_the_reducer_holds_them(tmp_path: Path) -> None:
    projections = _projections(tmp_path)
    for projection in projections:
        row = json.loads(json.dumps(table_row(projection)))  # raises if a value is not JSON's own
        assert row[0] == projection.table_id
        assert row[2] == projection.last_seq
        assert row[11] == projection.state.meters.to_json()  # the meters column's jsonb value
    rounds = [json.loads(json.dumps(row)) for row in round_rows(projections)]
    settled = [row for row in rounds if row[5] == "settled"]
    assert len(settled) >= len(projections)  # every table settled a round in three
    for row in settled:
        round_state = next(p for p in projections if p.table_id == row[0]).state.round(row[1])
        assert round_state is not None
        assert row[8] == round_state.settlement  # the settlement column's jsonb value


def test_the_rows_document_reads_back_as_json_dumps_writes_it(tmp_path: Path) -> None:
    """The upserts' document (``rows_document``, msgspec's writer) holds the values json.dumps wrote,
    for three real tables' rows and for values a hostile table could put in its payloads (text with
    quotes, backslashes, control and non-ASCII characters, integers past 64 bits); a row msgspec cannot
    write (a lone surrogate) is json.dumps's own text, so it fails in PostgreSQL as it did."""
    projections = _projections(tmp_path)
    rows = [table_row(p) for p in projections] + list(round_rows(projections))
    hostile = [('T"1\\', 2**70, -(2**65), 'a\tb\nc\u0001"\\/é€😀', None, True, {"k\u2028": [1, {"x": None}]})]
    for batch in (rows, hostile):
        document = rows_document(batch)
        assert json.loads(document) == json.loads(json.dumps(batch, ensure_ascii=False))
    lone = [("T1", "\ud800")]
    assert rows_document(lone) == json.dumps(lone, ensure_ascii=False)


def test_a_tables_meters_document_is_built_again_only_after_an_entry_that_moves_a_meter(
    tmp_path: Path,
) -> None:
    """The table's row keeps its meters' document between batches (``TableProjection.meters_json``):
    after every entry of three real tables' journals the row's meters are the reducer's meters as
    ``Meters.to_json`` writes them (a kind that moves a meter but left the document kept fails this),
    and the document is built only after an entry of a kind that moves a meter."""
    built: list[str] = []
    to_json = Meters.to_json

    def counted(meters: Meters) -> dict[str, Any]:
        built.append("built")
        return to_json(meters)

    for index, game in enumerate(MIXED_GAMES):
        table_id = f"M{index}"
        journal = Journal.open(tmp_path / f"{table_id}.sqlite", table_id, synchronous="OFF")
        try:
            sim = SimTable(journal, game, random.Random(index))
            for _ in range(3):
                sim.play_round()
            projection = TableProjection(table_id, state=TableState(table_id))
            metered = 0
            for stored in journal.entries():
                entry = wire.decode(wire.entry_body(stored.public_json()))
                assert isinstance(entry, wire.EntryMessage)
                checks.fold_entry(projection, entry)
                metered += entry.kind in METERED_KINDS
                built.clear()
                with _patched_to_json(counted):
                    row = table_row(projection)
                    again = table_row(projection)
                assert row[11] == projection.state.meters.to_json(), (stored.seq, entry.kind)
                assert again[11] == row[11]
                # Built once for an entry that moves a meter (or the table's first row), else kept.
                assert len(built) == (1 if entry.kind in METERED_KINDS or stored.seq == 1 else 0), entry.kind
            assert metered >= 6  # three rounds started and closed: the test saw the document rebuilt
        finally:
            journal.close()


@contextlib.contextmanager
def _patched_to_json(replacement: Callable[[Meters], dict[str, Any]]) -> Iterator[None]:
    original = Meters.to_json
    Meters.to_json = replacement  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Meters.to_json = original  # type: ignore[method-assign]


def test_a_closed_rounds_figures_are_counted_once_while_its_closing_is_the_same(tmp_path: Path) -> None:
    """A closed round touched again by a later batch (its state's changes after the closing) is written
    with the figures counted before, while its closing entry, settlement, status and game are the same:
    the same rows, the meters fold not run again. Before, every batch counted each touched closed round
    again (``assert 9 == 0``: three tables' three rounds each)."""
    # The cache is the process's and emptied whole at its bound: emptied here, so that the other tests'
    # rounds cannot bring it to its bound during this test's second pass.
    store._round_figures.clear()
    projections = _projections(tmp_path)
    for projection in projections:
        projection.touched_rounds.update(projection.state.rounds)
    first = list(round_rows(projections))
    counted: list[str] = []
    count = Meters.count

    def counting(meters: Meters, *args: Any, **kwargs: Any) -> bool:
        counted.append("counted")
        return count(meters, *args, **kwargs)

    Meters.count = counting  # type: ignore[method-assign,assignment]
    try:
        again = list(round_rows(projections))
    finally:
        Meters.count = count  # type: ignore[method-assign]
    assert again == first
    assert len(counted) == 0
    assert sum(row[5] != "in_progress" for row in first) == 9


def test_the_tables_document_writes_each_meters_document_once_while_it_is_the_same(tmp_path: Path) -> None:
    """The tables' upsert document (``table_row(..., encoded_meters=True)`` through ``rows_document``)
    is the text the rows with the meters' documents themselves give, json.dumps's fallback included, and
    a table's meters document is written to JSON once while it is the same document (kept between the
    batches that touch the table). Before, ``table_row`` had no ``encoded_meters`` (``TypeError``) and
    every batch wrote every touched table's meters again."""
    store._meters_encoded.clear()  # the process's cache, emptied whole at its bound (as above)
    projections = _projections(tmp_path)
    plain = [table_row(p) for p in projections]
    encoded = [table_row(p, encoded_meters=True) for p in projections]
    assert rows_document(encoded) == rows_document(plain)
    lone = [("T1", "\ud800")]  # a row msgspec cannot write: the whole document is json.dumps's, as before
    assert rows_document(encoded + lone) == json.dumps(plain + lone, ensure_ascii=False)
    again = [table_row(p, encoded_meters=True) for p in projections]
    assert all(a[11] is e[11] for a, e in zip(again, encoded, strict=True))
