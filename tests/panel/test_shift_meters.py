"""Meters for a shift or a date range (controller/panel/shift_meters.py) over a real journal file."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from controller.errors import UserError
from controller.floor.theoretical import theoretical_win_exact
from controller.journal import Journal
from controller.panel.shift_meters import RANGE_KINDS, day_range, fold_range, shift_range, theoretical
from tests.panel.conftest import PanelRig, login
from tests.panel.table_script import ScriptedRound


def test_shifts_and_days_are_utc_ranges_and_bad_input_is_one_line() -> None:
    assert shift_range("2026-12-01", "day") == ("2026-12-01T06:00:00.000000Z", "2026-12-01T14:00:00.000000Z")
    # The grave shift of a date starts that evening and ends the next morning.
    assert shift_range("2026-12-31", "grave") == (
        "2026-12-31T22:00:00.000000Z",
        "2027-01-01T06:00:00.000000Z",
    )
    assert day_range("2026-12-01", "2026-12-02") == (
        "2026-12-01T00:00:00.000000Z",
        "2026-12-03T00:00:00.000000Z",
    )
    with pytest.raises(UserError, match=r"^shift: 'night' is not one of day, swing, grave$"):
        shift_range("2026-12-01", "night")
    with pytest.raises(UserError, match=r"^date: '2026-13-01' is not a date like 2026-12-01$"):
        shift_range("2026-13-01", "day")
    with pytest.raises(UserError, match=r"^to: 2026-11-30 is before from: 2026-12-01$"):
        day_range("2026-12-01", "2026-11-30")


def test_a_range_counts_only_its_own_rounds_and_names_a_game_without_figures(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "journal.sqlite", "T1") as journal:
        ScriptedRound(journal).play_all()
        ScriptedRound(journal, first_raise={1: 5000}).play_all()
        settled = [e.time_utc for e in journal.entries(kinds=["round_settled"])]
        day = settled[0][:10]
        whole = fold_range(journal.entries(kinds=list(RANGE_KINDS)), *day_range(day, day))
        assert whole.meters.rounds_settled == 2
        assert whole.meters.faults_raised == 1  # the over-limit raise
        assert whole.meters.handle_cents > 0
        after_the_first = fold_range(journal.entries(kinds=list(RANGE_KINDS)), settled[1], "9999")
        assert after_the_first.meters.rounds_settled == 1
        none = fold_range(journal.entries(kinds=list(RANGE_KINDS)), *day_range("2001-01-01", "2001-01-01"))
        assert (none.meters.rounds_settled, none.meters.handle_cents) == (0, 0)
        assert theoretical(whole)["theo_cents"] > 0  # no par sheet cached: the catalogue's figures
    # A game the catalogue has no figures for (a journal of a later release) is named, not guessed.
    whole.stakes[("no-such-game", "house", "ante")] = 1000
    theo = theoretical(whole)
    assert theo["theo_cents"] is None
    assert theo["missing_games"] == ["no-such-game"]


def test_the_meters_page_refuses_a_bad_date_in_words(rig: PanelRig, client: TestClient) -> None:
    login(client, "vera")
    answer = client.get("/meters?date=2026-02-30&shift=day")
    assert answer.status_code == 422
    assert answer.json()["detail"] == "date: '2026-02-30' is not a date like 2026-12-01"


def test_the_shift_meters_and_the_floor_agree_on_the_theoretical_win(tmp_path: Path) -> None:
    """One computation (controller/rules/catalogue.py theoretical_win_exact): the table panel's shift
    meters and the floor's gaming day give the same figure for the same rounds, with or without a par
    sheet in the cache (before, the panel read cached sheets only and showed none where the floor had
    one)."""
    with Journal.open(tmp_path / "journal.sqlite", "T1") as journal:
        ScriptedRound(journal).play_all()
        ScriptedRound(journal).play_all()
        settled = list(journal.entries(kinds=["round_settled"]))
        day = settled[0].time_utc[:10]
        whole = fold_range(journal.entries(kinds=list(RANGE_KINDS)), *day_range(day, day))
    panel = theoretical(whole)
    floor_exact = sum(
        theoretical_win_exact(str(entry.payload["settlement"]["game"]), entry.payload["settlement"])
        for entry in settled
    )
    assert floor_exact > 0
    assert panel["theo_cents"] == round(floor_exact)
    assert panel["missing_games"] == []
