"""A table's messages are hostile (docs/floor.md "A table's messages are hostile"): a table's credentials
can extend its own chain (the chain has no key) with any payload. On the real servers:

- the reproduction of issue 30 item 1: as ``table-T001``, an entry N+1 chained to the table's real entry
  N, kind ``round_settled``, payload ``{"settlement": {"seats": ["boom"]}}``. It passed the wire checks,
  and the reducer's meters called ``.get`` on the string: ``floor serve`` ended with an AttributeError
  (and again after every restart) and every table's floor copy froze. Now the settlement is typed down to
  its seats' wagers before the reducer sees it: the message is refused with an alert, and every table,
  T001 too, flows on;
- the safety net under the typing: whatever error taking one table's message raises (here a floor whose
  reducer has a bug, planted in a subclass: no message of today's types reaches one) quarantines that
  table with the error as its reason, the service keeps running and every other table flows on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg

from controller.floor.checks import TableProjection
from controller.floor.panel import FloorPanelSettings, FloorUser, serve_panel
from controller.floor.service import FloorService
from controller.journal import entries as typed
from controller.journal.chain import entry_hash
from controller.uplink import wire
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, floor_problems, last_seq, wait_until
from tests.floor.test_bad_input import _alerts, _all_on_the_floor, _floor_seqs, _publish_as
from tests.floor.test_floor_sessions import login


def _chained_next(
    tables: Tables,
    table_id: str,
    kind: str,
    payload: dict[str, Any],
    *,
    round_id: str | None = None,
    version: int | None = None,
) -> dict[str, Any]:
    """An entry N+1 chained to the table's real entry N, as anyone with the table's credentials can
    write it (the chain has no key)."""
    last = tables.journals[table_id].last_entry()
    assert last is not None
    document: dict[str, Any] = {
        "seq": last.seq + 1, "time_utc": last.time_utc, "table_id": table_id, "round_id": round_id,
        "source": "engine", "kind": kind, "version": last.version if version is None else version,
        "payload": payload,
        "private_digest": None, "prev_hash": last.hash,
    }  # fmt: skip
    document["hash"] = entry_hash(**document)
    return document


def _serve(
    floor: Any, tables: Tables, service: FloorService | None = None
) -> tuple[Running, asyncio.Task[None]]:
    running = Running(floor, tables)
    running.start_uplinks()
    serving = asyncio.create_task((service or FloorService(floor.floor_config())).run(running.stop))
    running.tasks.append(serving)
    return running, serving


def _forged_entry_is_refused_and_the_floor_flows_on(
    tmp_path: Path,
    make_floor: MakeFloor,
    forge: Callable[[Tables], dict[str, Any]],
    message_id: str,
    refusal_words: str,
) -> None:
    """T001 publishes the entry ``forge`` chains after its journal (its own credentials may): the floor
    refuses it in one line (one ``undecodable`` alert naming ``refusal_words``), goes on with both tables
    and quarantines neither; every other entry is on the floor exactly once."""
    ids = ["T001", "T002"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        running, serving = _serve(floor, tables)
        await _all_on_the_floor(floor, tables, ids, "on the floor")
        await _publish_as(floor, "T001", wire.entry_body(forge(tables)), message_id)

        async def alerted() -> bool:
            return any(table == "T001" for table, *_ in _alerts(floor)) or serving.done()

        await wait_until(alerted, 30, "T001's alert")
        assert not serving.done(), serving
        for table_id in ids:
            tables.play(table_id, 1)
            running.uplinks[table_id].notify()
        await _all_on_the_floor(floor, tables, ids, "after the forged entry")
        assert not serving.done(), serving
        await running.close()

    asyncio.run(scenario())
    alerts = _alerts(floor)
    assert [(table, kind) for table, _seq, kind, _message in alerts] == [("T001", "undecodable")], alerts
    assert refusal_words in alerts[0][3], alerts
    assert floor_problems(floor, tables) == []  # both tables exactly their journals, T001 not quarantined
    tables.close()


def test_a_settlement_whose_seats_are_strings_is_refused_and_the_floor_flows_on(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """Before the fix: AttributeError out of floor serve (the floor stopped)."""

    def forge(tables: Tables) -> dict[str, Any]:
        started = tables.journals["T001"].last_entries(1, ["round_started"])[0]
        return _chained_next(
            tables, "T001", "round_settled", {"settlement": {"seats": ["boom"]}}, round_id=started.round_id
        )

    _forged_entry_is_refused_and_the_floor_flows_on(tmp_path, make_floor, forge, "T001:forged", "settlement")


def test_a_seat_past_the_floors_column_is_refused_and_the_floor_flows_on(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """``dp_waived {"seat": 3000000000}``: the class's seat is an unbounded int and floor_entries.seat a
    32-bit integer. Before the wire bounded it the batch's COPY failed (out of range), was NAKed and
    retried for ever: T001's partition stopped, no alert. Now refused at the wire in one line."""

    def forge(tables: Tables) -> dict[str, Any]:
        return _chained_next(tables, "T001", "dp_waived", {"seat": 3_000_000_000})

    _forged_entry_is_refused_and_the_floor_flows_on(
        tmp_path, make_floor, forge, "T001:huge-seat", "seat out of range 0..1000000"
    )


def test_a_round_holding_an_entry_of_a_newer_release_is_shown_with_one_line_not_a_500(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """A table upgraded before the floor (or a forged version) puts an entry of version 3 in a round; the
    floor stores it (its shape is today's). The round's page and its JSON answer 200 with one line
    saying why its record is not built (the recall's reader refuses to judge a newer release's parts);
    the events are listed as stored. Before: the round page raised JournalError, an HTTP 500."""
    ids = ["T001"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play("T001", 1)
    started = tables.journals["T001"].last_entries(1, ["round_started"])[0]
    round_id = str(started.round_id)
    user = FloorUser.with_password("mo", "manager", "manager-pw")

    async def scenario() -> None:
        running, serving = _serve(floor, tables)
        await _all_on_the_floor(floor, tables, ids, "on the floor")
        forged = _chained_next(
            tables, "T001", "state_changed",
            {"machine": "round", "from": "complete", "to": "complete", "trigger": "noop"},
            round_id=round_id, version=3,
        )  # fmt: skip
        await _publish_as(floor, "T001", wire.entry_body(forged), "T001:newer")

        async def stored() -> bool:
            return forged["seq"] in _floor_seqs(floor, "T001") or serving.done()

        await wait_until(stored, 30, "the newer release's entry on the floor")
        assert not serving.done(), serving
        server = await serve_panel(
            FloorPanelSettings(floor.reporting_dsn, floor.writer_dsn, {"mo": user}), port=0
        )
        client = httpx.AsyncClient(base_url=server.url, timeout=30)
        try:
            await login(client, "mo", "manager-pw")
            page = await client.get(f"/tables/T001/rounds/{round_id}")
            assert page.status_code == 200, page.text[-2000:]
            assert "The round&#39;s record is not shown" in page.text, page.text[-3000:]
            assert "written by a newer release" in page.text
            api = await client.get(f"/api/tables/T001/rounds/{round_id}")
            assert api.status_code == 200, api.text[-2000:]
            detail = api.json()
            assert detail["record"] is None
            assert "written by a newer release" in detail["record_refused"], detail["record_refused"]
            assert "\n" not in detail["record_refused"]
            assert any(event["seq"] == forged["seq"] for event in detail["events"])
        finally:
            await client.aclose()
            await server.stop()
            await running.close()

    asyncio.run(scenario())
    tables.close()


def _forged_card_with_a_part_that_does_not_decode(
    tables: Tables, round_id: str
) -> tuple[dict[str, Any], str]:
    """As ``table-T001`` can write it: a ``card_dealt`` entry (a kind with a private part) chained after
    the table's last entry in ``round_id``, committing to a private part that is not even JSON; and that
    part."""
    malformed = '{"part": '
    forged = _chained_next(tables, "T001", "card_dealt", {}, round_id=round_id)
    forged["private_digest"] = typed.commitment(malformed)
    forged["hash"] = entry_hash(**{name: value for name, value in forged.items() if name != "hash"})
    return forged, malformed


def test_a_round_holding_a_private_part_that_does_not_decode_is_shown_with_one_line_not_a_500(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """The floor takes a private part by its commitment alone (checks.py ``private_verdict``), not by its
    shape: a table's credentials can commit to any text. As ``table-T001``, a ``card_dealt`` entry chained
    into a settled round, committing to a part that is not even JSON, then that part: the floor stores
    both (no alert: an honest table may journal a late card with a settled round's id). For a manager and an
    auditor (readers of private parts) the round's page and its JSON
    answer 200 with one line naming the entry and why its part does not decode, the events listed, that
    part neither shown nor offered for disclosure; the round's CSV answers 200. Before 5d9633f: the page,
    its JSON and its CSV decoded the part outside any refusal, an HTTP 500. A viewer, shown no private
    part, is shown the round's record (built from the public parts), that part withheld as every one is;
    before: refused the record with the same line."""
    ids = ["T001"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play("T001", 1)
    started = tables.journals["T001"].last_entries(1, ["round_started"])[0]
    round_id = str(started.round_id)
    forged, malformed = _forged_card_with_a_part_that_does_not_decode(tables, round_id)
    refusal = f"The round's record is not shown: entry {forged['seq']}: "
    users = {
        "mo": FloorUser.with_password("mo", "manager", "manager-pw"),
        "al": FloorUser.with_password("al", "auditor", "auditor-pw"),
        "vi": FloorUser.with_password("vi", "viewer", "viewer-pw"),
    }

    async def scenario() -> None:
        running, serving = _serve(floor, tables)
        await _all_on_the_floor(floor, tables, ids, "on the floor")
        await _publish_as(floor, "T001", wire.entry_body(forged), "T001:forged-card")
        await _publish_as(
            floor, "T001", wire.private_body("T001", forged["seq"], malformed), "T001:forged-card:private"
        )

        async def stored() -> bool:
            with psycopg.connect(floor.owner_dsn) as connection:
                held = connection.execute(
                    "SELECT private_text FROM floor_private WHERE table_id = 'T001' AND seq = %s",
                    (forged["seq"],),
                ).fetchone()
            return held == (malformed,) or serving.done()

        await wait_until(stored, 30, "the forged card's part on the floor")
        assert not serving.done(), serving
        await running.close()
        # No alert: a card with a settled round's id is one an honest table may write (the shoe's late
        # card for a seat dead at the deal's timeout: tests/floor/test_floor_checks.py).
        assert _alerts(floor) == []
        server = await serve_panel(FloorPanelSettings(floor.reporting_dsn, floor.writer_dsn, users), port=0)
        try:
            for user, password in (("mo", "manager-pw"), ("al", "auditor-pw")):
                async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                    await login(client, user, password)
                    page = await client.get(f"/tables/T001/rounds/{round_id}")
                    assert page.status_code == 200, (user, page.text[-2000:])
                    assert "The round&#39;s record is not shown" in page.text, page.text[-3000:]
                    assert 'id="disclose-form"' not in page.text  # nothing withheld to disclose
                    api = await client.get(f"/api/tables/T001/rounds/{round_id}")
                    assert api.status_code == 200, (user, api.text[-2000:])
                    detail = api.json()
                    assert detail["record"] is None
                    refused = detail["record_refused"]
                    assert refused.startswith(refusal), refused
                    assert "card_dealt private part" in refused, refused
                    assert "\n" not in refused
                    (damaged,) = [event for event in detail["events"] if event["seq"] == forged["seq"]]
                    assert damaged["private"] is None
                    assert not damaged["withheld"]  # nothing an auditor could be shown: it does not decode
                    journal_entries = list(tables.journals["T001"].entries(round_id=round_id))
                    assert len(detail["events"]) == len(journal_entries) + 1  # the forged card
                    csv = await client.get(f"/tables/T001/rounds/{round_id}/csv")
                    assert csv.status_code == 200, (user, csv.text[-2000:])
                    assert csv.text.startswith("round_id,status,")
            # A viewer is shown no private part, this one no more than another: the round's record is
            # built from the public parts, as for any round, and that part is withheld as every one is.
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                await login(client, "vi", "viewer-pw")
                api = await client.get(f"/api/tables/T001/rounds/{round_id}")
                assert api.status_code == 200, api.text[-2000:]
                detail = api.json()
                assert detail["record_refused"] == "", detail["record_refused"]
                page = await client.get(f"/tables/T001/rounds/{round_id}")
                assert page.status_code == 200, page.text[-2000:]
                assert 'id="record-refused"' not in page.text
                assert detail["record"]["status"] == "settled", detail["record"]
                (recorded,) = [event for event in detail["record"]["events"] if event["seq"] == forged["seq"]]
                assert recorded["private"] is None
                (damaged,) = [event for event in detail["events"] if event["seq"] == forged["seq"]]
                assert damaged["private"] is None
                assert damaged["withheld"]
                cards = [event for event in detail["events"] if event["kind"] == "card_dealt"]
                assert all(event["private"] is None and event["withheld"] for event in cards)
                csv = await client.get(f"/tables/T001/rounds/{round_id}/csv")
                assert csv.status_code == 200, csv.text[-2000:]
                assert csv.text.startswith("round_id,status,")
        finally:
            await server.stop()

    asyncio.run(scenario())
    tables.close()


class _FloorWithABug(FloorService):
    """A floor service whose fold raises for one table's entries: the kind of bug the typed decode is
    there to keep out (the reducer meeting a value it does not expect), planted so that the safety net
    under it can be shown on the real servers."""

    BUGGY_TABLE = "T001"

    def _take_next_entry(self, batch: Any, projection: TableProjection, *args: Any) -> None:
        entry = args[0]
        if projection.table_id == self.BUGGY_TABLE and entry.kind == "login":
            raise AttributeError("'str' object has no attribute 'get'")
        super()._take_next_entry(batch, projection, *args)


def test_any_error_taking_a_tables_message_quarantines_that_table_and_nothing_else(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    ids = ["T001", "T002", "T003"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    quarantined_after = 0

    async def scenario() -> None:
        nonlocal quarantined_after
        service = _FloorWithABug(floor.floor_config())
        running, serving = _serve(floor, tables, service)
        await _all_on_the_floor(floor, tables, ids, "on the floor")
        quarantined_after = last_seq(tables.journals["T001"])
        tables.journals["T001"].append(
            "login", {"user": "ann", "role": "dealer", "remote": "127.0.0.1"}, round_id=None, source="panel"
        )
        for table_id in ids:
            tables.play(table_id, 1)
            running.uplinks[table_id].notify()
        await _all_on_the_floor(floor, tables, ["T002", "T003"], "the other tables, after the bug")

        def held() -> tuple[Any, ...] | None:
            with psycopg.connect(floor.reporting_dsn) as connection:
                return connection.execute(
                    "SELECT quarantined_at_seq, quarantine_reason FROM floor_tables WHERE table_id = 'T001'"
                ).fetchone()

        async def t001_quarantined() -> bool:
            row = held()
            return row is not None and row[0] is not None

        await wait_until(t001_quarantined, 30, "T001 quarantined")
        assert not serving.done(), serving
        assert held() == (quarantined_after, f"floor_error at entry {quarantined_after + 1}")
        assert _floor_seqs(floor, "T001")[-1] == quarantined_after
        assert service.status.db_failures == 0
        await running.close()

    asyncio.run(scenario())
    alerts = [(table, seq, kind) for table, seq, kind, _message in _alerts(floor)]
    assert alerts == [("T001", quarantined_after + 1, "floor_error")], alerts
    assert "AttributeError" in _alerts(floor)[0][3]
    assert floor_problems(floor, {t: tables.path(t) for t in ("T002", "T003")}) == []
    tables.close()


def test_bets_locked_again_in_a_settled_round_is_stored_with_one_alert(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """As ``table-T001``: a ``bets_locked`` entry chained validly after the table's last entry, in the round
    the table settled (its wagers locked again after its money moved: impossible for an honest table).
    The floor stores it (it is the table's signed record) and raises one alert ``entry_after_close``
    naming the entry and the round; the same message sent again (a resend, under another id) raises
    none; the table is not quarantined. Before: stored with no alert at all."""
    ids = ["T001"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play("T001", 1)
    settled = tables.journals["T001"].last_entries(1, ["round_settled"])[0]
    round_id = str(settled.round_id)
    forged = _chained_next(tables, "T001", "bets_locked", {"wagers": {}}, round_id=round_id)

    service = FloorService(floor.floor_config())

    async def scenario() -> None:
        running, serving = _serve(floor, tables, service)
        await _all_on_the_floor(floor, tables, ids, "on the floor")
        await _publish_as(floor, "T001", wire.entry_body(forged), "T001:locked-after-close")

        async def stored() -> bool:
            return forged["seq"] in _floor_seqs(floor, "T001") or serving.done()

        await wait_until(stored, 30, "the wagers locked after the close on the floor")
        await _publish_as(floor, "T001", wire.entry_body(forged), "T001:locked-after-close:again")

        async def resend_taken() -> bool:
            return service.status.duplicates >= 1 or serving.done()

        await wait_until(resend_taken, 30, "the same entry sent again, taken as a resend")
        assert not serving.done(), serving
        await running.close()  # the service ends after its batch: the resend's batch is committed

    asyncio.run(scenario())
    alerts = _alerts(floor)
    assert [(table, seq, kind) for table, seq, kind, _message in alerts] == [
        ("T001", forged["seq"], "entry_after_close")
    ], alerts
    message = alerts[0][3]
    assert f"a bets_locked entry for round {round_id}" in message, message
    assert "closed before (round_settled)" in message, message
    assert _floor_seqs(floor, "T001")[-1] == forged["seq"]
    with psycopg.connect(floor.reporting_dsn) as connection:
        held = connection.execute(
            "SELECT quarantined_at_seq FROM floor_tables WHERE table_id = 'T001'"
        ).fetchone()
    assert held == (None,), held
    tables.close()


def test_wagers_locked_in_a_round_never_started_are_stored_with_one_alert(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """As ``table-T001``: a ``bets_locked`` entry chained validly after the table's last entry, for a round
    the table never started (no ``round_started`` of it in its chain). The floor stores it (the table's
    signed record: the chain holds) and raises one alert ``entry_without_start`` naming the entry and
    the round, the table not quarantined and its stream going on. Before: stored with no alert at all."""
    ids = ["T001"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play("T001", 1)
    round_id = "R-never-started"
    forged = _chained_next(tables, "T001", "bets_locked", {"wagers": {}}, round_id=round_id)

    service = FloorService(floor.floor_config())

    async def scenario() -> None:
        running, serving = _serve(floor, tables, service)
        await _all_on_the_floor(floor, tables, ids, "on the floor")
        await _publish_as(floor, "T001", wire.entry_body(forged), "T001:locked-never-started")

        async def stored() -> bool:
            return forged["seq"] in _floor_seqs(floor, "T001") or serving.done()

        await wait_until(stored, 30, "the wagers locked in a round never started on the floor")
        assert not serving.done(), serving
        await running.close()

    asyncio.run(scenario())
    alerts = _alerts(floor)
    assert [(table, seq, kind) for table, seq, kind, _message in alerts] == [
        ("T001", forged["seq"], "entry_without_start")
    ], alerts
    message = alerts[0][3]
    assert f"a bets_locked entry for round {round_id}, which the table never started" in message, message
    assert _floor_seqs(floor, "T001")[-1] == forged["seq"]
    with psycopg.connect(floor.reporting_dsn) as connection:
        held = connection.execute(
            "SELECT quarantined_at_seq FROM floor_tables WHERE table_id = 'T001'"
        ).fetchone()
    assert held == (None,), held
    tables.close()
