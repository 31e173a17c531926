"""Gaming-day reports (docs/operations.md "Gaming-day reports") over a real floor (nats-server,
PostgreSQL, the floor service and three tables' uplinks): the day's CSV from `flushtable floor report`
equals the totals this test recomputes itself from the three journals' SQLite files (its own small fold,
none of the product's code), per table, per pit and for the floor; the digest line is the SHA-256 of
the bytes before it; a table's own `flushtable report` gives its floor row; rounds outside the gaming
day (before its start hour, after the next day's) are not in it."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.cli import main
from controller.floor.config import write_floor_config
from controller.journal.store import Journal
from controller.simulation.floor.embedded import EmbeddedFloor
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Tables
from tests.journal.scripted import play_round

DAY = "2026-12-01"
DAY_START = "2026-12-01T06:00:00"  # the gaming day's start hour: 06 (the floor's default)
DAY_END = "2026-12-02T06:00:00"
# table -> (game, banking, pit)
LAYOUT = {
    "T1": ("high-card-flush", "house", "A"),
    "T2": ("chase-the-flush", "house", "A"),
    "T3": ("high-card-flush", "designated-player", "B"),
}
# The par sheet's exact house edges at the default paytables (docs/math.md): per ante for the base game,
# per unit staked for a bonus. A designated-player round has no house theoretical.
EDGE_PER_ANTE = {
    "high-card-flush": Fraction(1348050875653, 50592437455560),
    "chase-the-flush": Fraction(12033802351, 503364407000),
}
EDGE_BONUS = {
    "flush": Fraction(200861, 2572780),
    "same_suit_bonus": Fraction(200861, 2572780),
    "straight_flush": Fraction(4376891, 33446140),
}


@dataclass
class Own:
    """This test's own figures of one table (or a sum of them)."""

    settled: int = 0
    dead: int = 0
    void: int = 0
    handle: int = 0
    by_wager: dict[str, int] = field(default_factory=dict)
    win: int = 0
    theo: Fraction = Fraction(0)
    dead_hands: int = 0
    kills: int = 0
    overrides: int = 0
    faults: int = 0

    def plus(self, other: Own) -> Own:
        out = Own(
            self.settled + other.settled, self.dead + other.dead, self.void + other.void,
            self.handle + other.handle, dict(self.by_wager), self.win + other.win,
            self.theo + other.theo, self.dead_hands + other.dead_hands, self.kills + other.kills,
            self.overrides + other.overrides, self.faults + other.faults,
        )  # fmt: skip
        for wager, cents in other.by_wager.items():
            out.by_wager[wager] = out.by_wager.get(wager, 0) + cents
        return out


def own_fold(path: Path) -> Own:
    """Read the journal's SQLite file with sqlite3 and add up the gaming day by hand."""
    own = Own()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT kind, time_utc, payload FROM journal ORDER BY seq").fetchall()
    for kind, time_utc, payload_text in rows:
        if not DAY_START <= time_utc[:19] < DAY_END:
            continue
        payload: dict[str, Any] = json.loads(payload_text)
        if kind == "seat_killed":
            own.kills += 1
        if kind == "difference_accepted":
            own.overrides += 1
        if kind == "fault_raised":
            own.faults += 1
        if kind not in ("round_settled", "round_dead", "round_voided"):
            continue
        s = payload["settlement"]
        own.settled += kind == "round_settled"
        own.dead += kind == "round_dead"
        own.void += kind == "round_voided"
        players_net = 0
        for seat in s["seats"]:
            if seat["status"] == "dead" and kind != "round_voided":
                own.dead_hands += 1
            for name, wager in seat["wagers"].items():
                players_net += wager["net"]
                if wager["result"] == "returned":
                    continue
                own.handle += wager["stake"]
                own.by_wager[name] = own.by_wager.get(name, 0) + wager["stake"]
                if kind == "round_settled" and s["banking"] == "house":
                    if name == "ante":
                        own.theo += wager["stake"] * EDGE_PER_ANTE[s["game"]]
                    elif name in EDGE_BONUS:
                        own.theo += wager["stake"] * EDGE_BONUS[name]
        # The house keeps what the players lost in a house-banked round, and the rake in any.
        own.win += s["rake"] + (-players_net if s["banking"] == "house" else 0)
    return own


def _pct(win: int, handle: int) -> str:
    """Percent to two decimals, half away from zero."""
    if not handle:
        return ""
    hundredths = Fraction(10_000 * abs(win), handle)
    whole = int(hundredths + Fraction(1, 2))
    return f"{'-' if win < 0 and whole else ''}{whole // 100}.{whole % 100:02d}"


def expected_measures(own: Own, theo_cents: int) -> dict[str, str]:
    out = {
        "rounds_settled": str(own.settled),
        "rounds_dead": str(own.dead),
        "rounds_voided": str(own.void),
        "handle_cents": str(own.handle),
        "win_cents": str(own.win),
        "theoretical_win_cents": str(theo_cents),
        "hold_pct": _pct(own.win, own.handle),
        "theoretical_hold_pct": _pct(theo_cents, own.handle),
        "dead_hands": str(own.dead_hands),
        "kills": str(own.kills),
        "overrides": str(own.overrides),
        "faults": str(own.faults),
        "progressive_contributions_cents": "0",
        "progressive_awards_cents": "0",
    }
    out.update({f"handle_cents.{w}": str(c) for w, c in own.by_wager.items()})
    return out


def _clock(now: dict[str, datetime]) -> Callable[[], datetime]:
    return lambda: now["t"]


def _play_day(tables_dir: Path) -> dict[str, Path]:
    """Each table plays from 04:00 on the 1st to past 06:00 on the 2nd, one round every 55 minutes
    (its journal's clock injected), with kills, dead rounds, voids and an accepted past-post."""
    paths: dict[str, Path] = {}
    for index, (table_id, (game, banking, _pit)) in enumerate(LAYOUT.items()):
        now = {"t": datetime(2026, 12, 1, 4, 0, tzinfo=UTC) + timedelta(minutes=7 * index)}
        path = tables_dir / f"{table_id}.sqlite"
        journal = Journal.open(path, table_id, synchronous="OFF", clock=_clock(now))
        rng = random.Random(26 + index)
        number = 0
        while now["t"] < datetime(2026, 12, 2, 7, 0, tzinfo=UTC):
            number += 1
            options: dict[str, Any] = {}
            if number % 7 == 3:
                options["kill_request"] = True
            elif number % 11 == 5:
                options["outcome"] = "dead"
            elif number % 9 == 4:
                options["outcome"] = "void"
            elif number % 8 == 6:
                options.update(past_post=True, accept_past_post=True)
            play_round(journal, rng, game=game, banking_mode=banking, **options)
            now["t"] += timedelta(minutes=55)
        journal.close()
        paths[table_id] = path
    return paths


def _report_rows(text: str) -> dict[tuple[str, str], dict[str, str]]:
    body, _, last = text.rstrip("\n").rpartition("\n")
    assert last == "# sha256," + hashlib.sha256((body + "\n").encode()).hexdigest()
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for row in csv.DictReader(io.StringIO(body + "\n")):
        assert row["gaming_day"] == DAY
        rows.setdefault((row["scope"], row["key"]), {})[row["measure"]] = row["value"]
    return rows


def test_the_days_csv_for_three_tables_equals_the_journals_recomputed(
    tmp_path: Path, make_floor: MakeFloor, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = _play_day(tmp_path / "tables")
    floor: EmbeddedFloor = make_floor(list(LAYOUT), ack_wait_s=2)
    with psycopg.connect(floor.owner_dsn) as connection:
        for table_id, (_game, _banking, pit) in LAYOUT.items():
            connection.execute(
                "INSERT INTO floor_table_config (table_id, pit) VALUES (%s, %s)", (table_id, pit)
            )
    tables = Tables(tmp_path / "tables", list(LAYOUT))
    from tests.floor.test_floor_panel import FloorRig, _wait_floor

    rig = FloorRig(floor, tables)
    try:
        _wait_floor(floor, tables)
        config = write_floor_config(tmp_path / "floor-config", floor.floor_config())
        capsys.readouterr()
        assert main(["floor", "report", "--day", DAY, "--csv", "--config", str(config)]) == 0
        floor_csv = capsys.readouterr().out
        # The report sums what the floor wrote at commit from each typed entry (floor_day_figures), not
        # the payloads: the day's settlements edited on the floor afterwards (its append-only trigger
        # off, as only a database owner could) leave it as it was.
        with psycopg.connect(floor.owner_dsn, autocommit=True) as connection:
            connection.execute("ALTER TABLE floor_entries DISABLE TRIGGER floor_entries_append_only")
            edited = connection.execute(
                "UPDATE floor_entries SET payload = jsonb_set(payload, '{settlement,rake}', '99999') "
                "WHERE kind = 'round_settled'"
            ).rowcount
            connection.execute("ALTER TABLE floor_entries ENABLE TRIGGER floor_entries_append_only")
        assert edited > 0
        assert main(["floor", "report", "--day", DAY, "--csv", "--config", str(config)]) == 0
        assert capsys.readouterr().out == floor_csv
        assert main(["floor", "report", "--day", DAY, "--pit", "B", "--csv", "--config", str(config)]) == 0
        pit_b_csv = capsys.readouterr().out
        assert main(["floor", "report", "--day", DAY, "--config", str(config)]) == 0
        text = capsys.readouterr().out
    finally:
        rig.close()
        tables.close()

    own = {table_id: own_fold(path) for table_id, path in paths.items()}
    rows = _report_rows(floor_csv)
    theo = {t: round(o.theo) for t, o in own.items()}
    for table_id in LAYOUT:
        assert rows[("table", table_id)] == expected_measures(own[table_id], theo[table_id]), table_id
    pit_a = own["T1"].plus(own["T2"])
    assert rows[("pit", "A")] == expected_measures(pit_a, theo["T1"] + theo["T2"])
    assert rows[("pit", "B")] == expected_measures(own["T3"], theo["T3"])
    everything = pit_a.plus(own["T3"])
    assert rows[("floor", "all")] == expected_measures(everything, sum(theo.values()))
    assert set(rows) == {("table", "T1"), ("table", "T2"), ("table", "T3"), ("pit", "A"), ("pit", "B"),
                         ("floor", "all")}  # fmt: skip
    # The day has everything the script makes, and leaves out what fell outside it.
    assert everything.kills
    assert everything.dead
    assert everything.void
    assert everything.overrides
    assert own["T3"].win > 0
    assert theo["T3"] == 0
    with sqlite3.connect(paths["T1"]) as db:
        closes = [t for (t,) in db.execute("SELECT time_utc FROM journal WHERE kind = 'round_settled'")]
    assert any(t < DAY_START for t in closes)
    assert any(t >= DAY_END for t in closes)

    pit_rows = _report_rows(pit_b_csv)
    assert set(pit_rows) == {("table", "T3"), ("pit", "B")}
    assert pit_rows[("table", "T3")] == rows[("table", "T3")]
    digest = floor_csv.rstrip("\n").rpartition(",")[2]
    assert f"CSV sha256 {digest}" in text

    # The table's own report from its journal: the same numbers as its floor row.
    assert main(["report", "--journal", str(paths["T2"]), "--day", DAY, "--csv"]) == 0
    table_rows = _report_rows(capsys.readouterr().out)
    assert table_rows[("table", "T2")] == rows[("table", "T2")]
