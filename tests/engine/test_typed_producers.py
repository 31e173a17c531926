"""The producers that built their entries from a kind's name and a dict now build the typed class
(docs/engine.md "Journal entries"): the two-person changes, the noise summaries, the start's software and
configuration checks, the clock watch, the journal's clock step and `flushtable clear`. Each entry is its
kind's class, and its public part is the same bytes the journal stored before (the literals below were
taken from the name-and-dict producers, through ``JournalRecord.of``, for the same inputs): the journals
stay byte-identical."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.changes import ChangeControl, check_configuration
from controller.cli import main
from controller.clocks import ClockReading, ClockWatch
from controller.config import ClockSection
from controller.daemon_start import software_record
from controller.engine.outputs import JournalRecord
from controller.journal import entries as e
from controller.journal.chain import canonical_json
from controller.journal.noise import OTHER_SOURCES, NoiseSummary
from controller.journal.store import Journal
from controller.software.verify import VerifiedRelease

T0_S = 1_800_000_000.0  # 2027-01-15T08:00:00Z: a fixed time, not today's
FIRST_UTC = "2027-01-15T08:00:00.000000Z"
LAST_UTC = "2027-01-15T08:01:00.000000Z"


@pytest.fixture(autouse=True)
def no_name_and_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tripwire, not a stand-in: an entry built from a kind's name and fields (``entries.build``, which
    ``JournalRecord.of`` calls) fails the test, so each producer is seen building its class itself."""

    def refused(kind: str, _fields: Mapping[str, Any]) -> e.Entry:
        raise AssertionError(f"{kind} built from a kind's name and fields")

    monkeypatch.setattr(e, "build", refused)


def public_bytes(entry: e.Entry) -> str:
    """What the journal's payload column holds for this entry (controller/journal/writer.py)."""
    return canonical_json(e.public_dict(entry))


def summary(config_file: str) -> str:
    return f"configuration file sha256 {config_file[:16]}… (takes effect at the next start)"


def test_the_change_steps_write_their_typed_entries_as_before() -> None:
    control = ChangeControl("T1", {}, lapse_after_s=600)
    written: list[tuple[str, str, str]] = []

    def step(outputs: Sequence[object], now_s: float) -> None:
        records = [o for o in outputs if isinstance(o, JournalRecord)]
        control.adopt(records, now_s)
        for record in records:
            assert type(record.entry) is e.CLASS_BY_KIND[record.kind]
            assert record.round_id is None
            written.append((record.kind, record.source, public_bytes(record.entry)))

    # config_file changes apply at the next start: no engine is needed to approve one.
    step(control.propose("config_file", {"sha256": "ab" * 32}, "max", "new rake", T0_S), T0_S)
    step(control.approve(None, "CT1-0001", "max", T0_S + 1), T0_S + 1)  # type: ignore[arg-type]
    step(control.approve(None, "CT1-0001", "mia", T0_S + 2), T0_S + 2)  # type: ignore[arg-type]
    step(control.propose("config_file", {"sha256": "cd" * 32}, "max", "again", T0_S + 3), T0_S + 3)
    step(control.reject("CT1-0002", "mia", "not today"), T0_S + 4)
    step(control.propose("config_file", {"sha256": "ef" * 32}, "max", "late", T0_S + 5), T0_S + 5)
    step(control.lapse_due(T0_S + 605), T0_S + 605)
    step(control.propose("nope", {}, "max", "x", T0_S + 606), T0_S + 606)
    ab, cd, ef = "ab" * 32, "cd" * 32, "ef" * 32
    assert written == [
        (
            "change_proposed",
            "changes",
            '{"by":"max","change_id":"CT1-0001","change_kind":"config_file",'
            '"lapses_utc":"2027-01-15T08:10:00.000000Z","params":{"sha256":"' + ab + '"},'
            '"reason":"new rake","summary":"' + summary(ab) + '"}',
        ),
        (
            "change_refused",
            "changes",
            '{"by":"max","change_id":"CT1-0001","closed":false,'
            '"reason":"max proposed CT1-0001; a second, different manager must approve it"}',
        ),
        (
            "change_approved",
            "changes",
            '{"by":"mia","change_id":"CT1-0001","change_kind":"config_file","proposed_by":"max",'
            '"summary":"' + summary(ab) + '"}',
        ),
        (
            "change_proposed",
            "changes",
            '{"by":"max","change_id":"CT1-0002","change_kind":"config_file",'
            '"lapses_utc":"2027-01-15T08:10:03.000000Z","params":{"sha256":"' + cd + '"},'
            '"reason":"again","summary":"' + summary(cd) + '"}',
        ),
        (
            "change_refused",
            "changes",
            '{"by":"mia","change_id":"CT1-0002","closed":true,"reason":"not today"}',
        ),
        (
            "change_proposed",
            "changes",
            '{"by":"max","change_id":"CT1-0003","change_kind":"config_file",'
            '"lapses_utc":"2027-01-15T08:10:05.000000Z","params":{"sha256":"' + ef + '"},'
            '"reason":"late","summary":"' + summary(ef) + '"}',
        ),
        (
            "change_lapsed",
            "changes",
            '{"change_id":"CT1-0003","change_kind":"config_file",'
            '"lapses_utc":"2027-01-15T08:10:05.000000Z","proposed_by":"max"}',
        ),
        (
            "change_refused",
            "changes",
            '{"by":"max","change_id":null,"closed":true,"reason":"change_kind: \'nope\' is not one of '
            'bonus_limit, config_file, limits, paytable, progressive"}',
        ),
    ]


def test_a_noise_summary_is_its_typed_entry_as_before() -> None:
    tracked = NoiseSummary("login_failed", "addr:10.0.0.9", 490, FIRST_UTC, LAST_UTC)
    others = NoiseSummary("forged_frame", OTHER_SOURCES, 7, FIRST_UTC, LAST_UTC, 3, True)
    assert isinstance(tracked.entry(), e.NoiseSuppressed)
    assert public_bytes(tracked.entry()) == (
        '{"category":"login_failed","count":490,"distinct_sources":null,"distinct_sources_capped":false,'
        f'"first_time_utc":"{FIRST_UTC}","last_time_utc":"{LAST_UTC}","source":"addr:10.0.0.9"}}'
    )
    assert public_bytes(others.entry()) == (
        '{"category":"forged_frame","count":7,"distinct_sources":3,"distinct_sources_capped":true,'
        f'"first_time_utc":"{FIRST_UTC}","last_time_utc":"{LAST_UTC}","source":"(other sources)"}}'
    )


def test_the_verified_release_is_its_typed_entry_as_before() -> None:
    record = software_record(VerifiedRelease("1.2.3", "d" * 64, False, "0123456789abcdef", 412, 37))
    assert isinstance(record.entry, e.SoftwareVerified)
    assert (record.kind, record.source, record.round_id) == ("software_verified", "engine", None)
    assert public_bytes(record.entry) == (
        '{"dependencies":37,"development":false,"files":412,"key_id":"0123456789abcdef",'
        '"release":"1.2.3","release_digest":"' + "d" * 64 + '"}'
    )


def test_a_clock_check_is_its_typed_entry_as_before() -> None:
    async def report(_check: object) -> None:
        return None

    watch = ClockWatch(ClockSection(ntp_server="127.0.0.1:9"), now_s=lambda: T0_S, report=report)
    measured = watch.judge(ClockReading("s", -3.0, 0.001, T0_S), None).entry
    unread = watch.judge(None, "no answer").entry
    assert isinstance(measured, e.ClockOffset)
    assert public_bytes(measured) == (
        '{"bound_us":1000000,"delay_us":1000,"error":null,"offset_us":-3000000,'
        f'"source":"sntp://127.0.0.1:9","table_time_utc":"{FIRST_UTC}","within_bound":false}}'
    )
    assert public_bytes(unread) == (
        '{"bound_us":1000000,"delay_us":null,"error":"no answer","offset_us":null,'
        f'"source":"sntp://127.0.0.1:9","table_time_utc":"{FIRST_UTC}","within_bound":false}}'
    )


def test_the_configuration_check_is_its_typed_entry_as_before() -> None:
    def settings(max_ante_cents: int) -> dict[str, object]:
        return {
            "limits": {"min_ante_cents": 500, "max_ante_cents": max_ante_cents},
            "game": "x",
            "list": [1, 2],
        }

    first = check_configuration(
        source="table.toml",
        file_sha256="aa" * 32,
        config_digest="bb" * 32,
        settings=settings(10000),
        previous=None,
        approved_files={},
    ).entry
    second = check_configuration(
        source="table.toml",
        file_sha256="cc" * 32,
        config_digest="dd" * 32,
        settings=settings(20000),
        previous=first,
        approved_files={},
    ).entry
    assert isinstance(first, e.ConfigChecked)
    assert public_bytes(first) == (
        '{"approved_change":null,"changed":[],"config_digest":"'
        + "bb" * 32
        + '","file_sha256":"'
        + "aa" * 32
        + '","previous_config_digest":null,"previous_file_sha256":null,"settings":{"game":"x",'
        '"limits.max_ante_cents":10000,"limits.min_ante_cents":500,"list":[1,2]},"source":"table.toml",'
        '"unapproved":false}'
    )
    assert public_bytes(second) == (
        '{"approved_change":null,"changed":["limits.max_ante_cents: 10000 -> 20000"],"config_digest":"'
        + "dd" * 32
        + '","file_sha256":"'
        + "cc" * 32
        + '","previous_config_digest":"'
        + "bb" * 32
        + '","previous_file_sha256":"'
        + "aa" * 32
        + '","settings":{"game":"x","limits.max_ante_cents":20000,"limits.min_ante_cents":500,'
        '"list":[1,2]},"source":"table.toml","unapproved":true}'
    )


def stored_rows(path: Path, kind: str) -> list[tuple[str, str]]:
    """The source and the payload bytes of the journal's rows of ``kind``, as SQLite holds them."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        rows = db.execute(
            "SELECT source, CAST(payload AS BLOB) FROM journal WHERE kind = ? ORDER BY seq", (kind,)
        ).fetchall()
    return [(source, payload.decode("utf-8")) for source, payload in rows]


def test_the_journal_writes_its_clock_step_as_its_typed_entry_as_before(tmp_path: Path) -> None:
    wall = [datetime(2027, 1, 15, 8, 0, 3, 250_000, tzinfo=UTC)]
    path = tmp_path / "j.sqlite"
    with Journal.open(path, "T1", clock=lambda: wall[0]) as journal:
        journal.append("dp_waived", e.DpWaived(seat=1), round_id=None, source="x")
        wall[0] -= timedelta(seconds=3.25)  # the wall clock corrected: back behind the journal's time
        journal.append("dp_waived", e.DpWaived(seat=2), round_id=None, source="x")
    assert stored_rows(path, "clock_stepped") == [
        (
            "journal",
            '{"journal_time_utc":"2027-01-15T08:00:03.250000Z","step_back_us":3250000,'
            '"wall_clock_utc":"2027-01-15T08:00:00.000000Z"}',
        )
    ]


def test_flushtable_clear_writes_its_typed_entry_as_before(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    jam = e.Reason(code="shoe_fault", message="the shoe jammed")
    with Journal.open(path, "T1") as journal:
        for fault_id in ("F1", "F2"):
            raised = e.FaultRaised(
                fault_id=fault_id, kind_of_fault="shoe", severity="latching", device="shoe", reason=jam
            )
            journal.append("fault_raised", raised, round_id=None, source="engine")
    assert (
        main(["clear", "--journal", str(path), "--reason", "jam cleared, shoe checked", "--by", "sue"]) == 0
    )
    assert stored_rows(path, "fault_cleared") == [
        ("operator:sue", '{"by":"sue","fault_id":"F1","reason":"jam cleared, shoe checked"}'),
        ("operator:sue", '{"by":"sue","fault_id":"F2","reason":"jam cleared, shoe checked"}'),
    ]
