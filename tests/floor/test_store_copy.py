"""The batch's COPY (controller/floor/store.py ``_copy``) writes every row as it was given, over a real
PostgreSQL floor database: psycopg's row formatter is called for each row and each buffer it fills is
sent (docs/floor.md "The sixth stop"), so a batch larger than one buffer (psycopg's 32 KiB) loses no row
and splits none, and text a hostile table chose (tabs, line breaks, backslashes, a literal ``\\N``,
non-ASCII) reads back unchanged.

Checked to fail: with the loop's full buffers dropped instead of sent (``formatter.write_row(row)``
alone), ``AssertionError: assert 62 == 600`` (only the last buffer's rows reached the table)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import psycopg

from controller.floor.store import _COPY_ENTRIES, _copy
from tests.floor.conftest import MakeFloor

_HOSTILE_TEXTS = ("a\tb", "line\nbreak", "cr\rhere", "back\\slash", "\\N", "", "é€😀", "x" * 200)


# The entries' first thirteen columns are written here; the typed ones left NULL but typed_columns (last).
_COLUMNS = _COPY_ENTRIES.split("(", 1)[1].split(")", 1)[0].count(",") + 1
_FIRST_COLUMNS = 13


def _rows(count: int) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for seq in range(1, count + 1):
        text = _HOSTILE_TEXTS[seq % len(_HOSTILE_TEXTS)]
        payload = json.dumps(
            {"note": text, "n": seq}, ensure_ascii=False, sort_keys=True, separators=(",", ":")
        )
        rows.append(
            (
                "T1",
                seq,
                "2026-01-02T03:04:05.000006Z",
                "2026-01-02T03:04:05.000006Z",
                None if seq % 5 == 0 else f"round {text}",
                f"source {text}",
                "round_started",
                2,
                payload,
                None if seq % 2 else "d" * 64,
                "a" * 64,
                f"{seq:064x}",
                seq + 10,
                *(None,) * (_COLUMNS - _FIRST_COLUMNS - 1),
                2,  # typed_columns, the last (migration 12: no default; 2 since migration 15)
            )
        )
    return rows


def test_a_copy_larger_than_one_buffer_reads_back_row_for_row(make_floor: MakeFloor) -> None:
    floor = make_floor(["T1"])
    rows = _rows(600)  # about 160 kB of rows: several of psycopg's 32 KiB buffers

    async def write() -> None:
        connection = await psycopg.AsyncConnection.connect(floor.writer_dsn)
        try:
            async with connection.transaction(), connection.cursor() as cursor:
                await _copy(cursor, _COPY_ENTRIES, rows)
        finally:
            await connection.close()

    asyncio.run(write())
    with psycopg.connect(floor.reporting_dsn) as connection:
        back = connection.execute(
            "SELECT table_id, seq, time_text, round_id, source, kind, version, payload::text, "
            "private_digest, prev_hash, hash, stream_seq FROM floor_entries ORDER BY seq"
        ).fetchall()
    assert len(back) == len(rows)
    for given, read in zip(rows, back, strict=True):
        assert read[:2] == given[:2]
        assert read[2:7] == given[3:8]
        assert json.loads(read[7]) == json.loads(given[8])
        assert read[8:] == given[9:_FIRST_COLUMNS]
