"""The pit map's words (controller/floor/tiles.py, controller/journal/render.py ``phase_words``): pure
functions, no floor needed. The Chromium test (tests/floor/test_floor_pages.py) shows them in the page."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from controller.engine import machine
from controller.floor.tiles import PitLayout, TileText, age_words, current_shift, pit_map, time_text
from controller.journal.render import phase_words
from controller.money import MoneyFormat

# Every phase the round machine has (controller/engine/machine.py), in words.
# (The module's other capitalised strings, the games and the separator, are not phases.)
PHASES = [
    value
    for name, value in vars(machine).items()
    if name.isupper() and isinstance(value, str) and value.replace("_", "").isalpha()
]


@pytest.mark.parametrize("phase", PHASES)
def test_every_phase_has_words(phase: str) -> None:
    words = phase_words(phase)
    assert "_" not in words
    # Said for people, not the code with its underscores turned to spaces (a few are words already).
    assert words != phase.replace("_", " ") or phase in {"dealing", "settling", "paying", "held"}, words


def test_phase_words() -> None:
    assert phase_words("dealing_turn_river") == "dealing the turn and river"
    assert phase_words("held/betting") == "held while taking bets"
    assert phase_words("some_new_phase") == "some new phase"


def test_time_text_names_its_zone() -> None:
    moment = "2026-12-05T13:05:31.123456Z"
    assert time_text(moment) == "13:05:31 UTC"
    assert time_text(moment, with_date=True) == "2026-12-05 13:05:31 UTC"
    paris = ZoneInfo("Europe/Paris")
    assert time_text(moment, zone=paris) == "14:05:31 CET"
    assert time_text("2026-07-05T13:05:31Z", zone=paris) == "15:05:31 CEST"
    assert time_text(None) == "—"


def test_age_words() -> None:
    assert [age_words(s) for s in (None, 0, 59.9, 60, 3599, 3600 + 300, 90000)] == [
        "never", "0 s ago", "59 s ago", "1 min ago", "59 min ago", "1 h 5 min ago", "1 d 1 h ago",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("now", "name", "start_hour", "start_day"),
    [
        (datetime(2026, 12, 5, 5, 59, tzinfo=UTC), "grave", 22, 4),  # a grave shift belongs to its start
        (datetime(2026, 12, 5, 6, 0, tzinfo=UTC), "day", 6, 5),
        (datetime(2026, 12, 5, 21, 59, tzinfo=UTC), "swing", 14, 5),
        (datetime(2026, 12, 5, 22, 0, tzinfo=UTC), "grave", 22, 5),
    ],
)
def test_current_shift(now: datetime, name: str, start_hour: int, start_day: int) -> None:
    shift = current_shift(now)
    assert (shift.name, shift.start) == (name, datetime(2026, 12, start_day, start_hour, tzinfo=UTC))
    assert (shift.end - shift.start).total_seconds() == 8 * 3600


def _row(table_id: str, **values: object) -> dict[str, object]:
    return {"table_id": table_id, "pit": "", "game": "top-flush", "phase": "betting", "held": False,
            "quarantined": False, "alerts": 0, "table_open": None, "last_heard_age_s": 12.5,
            "last_heard_utc": datetime(2026, 12, 5, 13, 0, tzinfo=UTC), **values}  # fmt: skip


def test_a_tile_in_words() -> None:
    text = TileText(MoneyFormat("EUR"))
    tile = text.tile(_row("T1"), {"rounds": 3, "handle_cents": 20000, "house_win_cents": 1500,
                                  "theoretical_win_cents": 512})  # fmt: skip
    assert (tile["game_title"], tile["phase_text"], tile["state"]) == ("Top Flush", "taking bets", "ok")
    assert tile["shift_text"] == "3 rounds · win EUR +15.00 (theo. EUR +5.12)"
    assert tile["hold_text"] == "hold 7.5% (theo. 2.6%)"
    assert (tile["last_heard_text"], tile["last_heard_at"]) == ("12 s ago", "2026-12-05 13:00:00 UTC")
    assert "last_heard_utc" not in tile  # the stream's JSON holds words, not datetimes
    held = text.tile(_row("T2", held=True, hold_reason="red light"), None)
    assert (held["state"], held["hold_reason"]) == ("held", "red light")
    assert held["phase_text"] == "no round starts until its fault is cleared"
    assert held["shift_text"] == "0 rounds · win EUR 0.00 (theo. EUR 0.00)"
    assert held["hold_text"] == "hold — (theo. —)"
    quarantined = text.tile(_row("T3", quarantined=True, held=True, quarantine_reason="bad_hash at 7"), None)
    assert (quarantined["state"], quarantined["hold_reason"]) == ("quarantined", "bad_hash at 7")
    assert "betting" not in quarantined["phase_text"]
    assert text.tile(_row("T4", table_open=False), None)["phase_text"] == "table closed"


def test_the_pits_as_laid_out_and_the_rest_after() -> None:
    tiles = [_row("T1"), _row("T2"), _row("T7")]
    layout = (PitLayout("A", (("T1", ""), ("", "T2"))), PitLayout("B", (("T9",),)))
    pits = pit_map(tiles, layout)
    assert [p["name"] for p in pits] == ["A", "B", "Not placed"]
    assert [(s["table_id"], s["row"], s["column"]) for s in pits[0]["spots"]] == [("T1", 1, 1), ("T2", 2, 2)]
    assert pits[1]["spots"][0]["tile"] is None  # placed, never heard
    assert [s["table_id"] for s in pits[2]["spots"]] == ["T7"]
    assert [p["name"] for p in pit_map(tiles, ())] == [""]  # no layout: one grid
