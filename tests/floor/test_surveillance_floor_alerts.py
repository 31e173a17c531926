"""Issue 26 item 6: the alerts the floor raises itself reach surveillance. Over a real floor (nats-server,
PostgreSQL, the floor service): a seeded software check recorded as a mismatch (the floor's own
``record_check``, which writes the ``software_mismatch`` alert) is published on ``surveillance.T1`` once,
with ``Nats-Msg-Id`` ``floor:<alert_id>`` and a body valid against docs/surveillance-event.schema.json;
its mark deleted (a crash after the publish, before the mark): published again, the stream still holds
it once. A table's alert (origin ``table``) is not published from floor_alerts: its journal entry is.

Checked to fail: before the floor's alerts were published (publish_pending without its call of
publish_floor_alerts), the wait for the alert's mark timed out and the stream held no event."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import jsonschema
import psycopg

from controller import software
from controller.floor.service import FloorService
from controller.floor.software_check import ApprovedRelease, record_check
from controller.simulation.floor.embedded import EmbeddedFloor
from tests.floor.conftest import MakeFloor

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "surveillance-event.schema.json").read_text())
WAIT_S = 60.0


def _wait(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _marked(floor: EmbeddedFloor) -> set[int]:
    with psycopg.connect(floor.reporting_dsn) as connection:
        rows = connection.execute("SELECT alert_id FROM floor_surveillance_alert_marks").fetchall()
    return {int(a) for (a,) in rows}


async def _stream(floor: EmbeddedFloor) -> list[tuple[str, str, dict[str, Any]]]:
    """Every message of SURVEILLANCE (subject, Nats-Msg-Id, body), read as a surveillance system."""
    client = await floor.connect_surveillance()
    try:
        js = client.jetstream(timeout=30)
        total = (await js.stream_info("SURVEILLANCE")).state.messages
        subscription = await js.pull_subscribe("surveillance.>", stream="SURVEILLANCE")
        out: list[tuple[str, str, dict[str, Any]]] = []
        while len(out) < total:
            for message in await subscription.fetch(total - len(out), timeout=30):
                msg_id = (message.headers or {}).get("Nats-Msg-Id", "")
                out.append((message.subject, msg_id, json.loads(message.data)))
                await message.ack()
        return out
    finally:
        await client.close()


def test_a_software_mismatch_reaches_surveillance_once(make_floor: MakeFloor) -> None:
    floor = make_floor(["T1"])
    approved = ApprovedRelease("1.0.0", "ab" * 32, {"controller/x.py": b"print('approved')\n"})
    seed = b"s" * 16
    with psycopg.connect(floor.writer_dsn) as connection:
        record = record_check(
            connection,
            table_id="T1",
            requested_by="floor-sup",
            seed=seed,
            approved=approved,
            expected=approved.expected(seed),
            answer={"seed": seed.hex(), "aggregate": "00" * 32, "files": 1},
        )
        # A table's alert is in floor_alerts too; its event comes from its journal entry, not from here.
        connection.execute(
            "INSERT INTO floor_alerts (table_id, seq, origin, kind, message, fault_id) "
            "VALUES ('T1', 3, 'table', 'red_light', 'shoe', 'f-1')"
        )
        row = connection.execute(
            "SELECT alert_id, kind FROM floor_alerts WHERE origin = 'floor' AND table_id = 'T1'"
        ).fetchone()
    assert record.outcome == "mismatch"
    assert row is not None
    assert row[1] == "software_mismatch"
    alert_id = int(row[0])
    assert software.seeded_digests(seed, approved.files.items()).aggregate != "00" * 32

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def call(work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, loop).result(timeout=WAIT_S)

    stop = asyncio.Event()
    config = floor.floor_config(surveillance_poll_interval_s=0.1)

    async def start() -> asyncio.Task[None]:
        return asyncio.create_task(FloorService(config).run(stop))

    async def close(task: asyncio.Task[None]) -> None:
        stop.set()
        await asyncio.wait_for(task, 30)

    try:
        task = call(start())
        _wait(lambda: _marked(floor) == {alert_id}, "the alert's surveillance mark")
        call(close(task))
        published = call(_stream(floor))
        assert [(subject, msg_id) for subject, msg_id, _e in published] == [
            ("surveillance.T1", f"floor:{alert_id}")
        ]
        event = published[0][2]
        jsonschema.validate(event, SCHEMA)
        assert event["event_id"] == f"floor:{alert_id}"
        assert event["alert_id"] == alert_id
        assert (event["type"], event["category"], event["source"]) == ("alert", "software", "floor")
        assert event["details"]["kind"] == "software_mismatch"
        assert f"software check {record.check_id}" in event["details"]["reason"]

        # A crash after the publish, before the mark: published again, the stream keeps the first.
        with psycopg.connect(floor.owner_dsn) as connection:
            connection.execute("DELETE FROM floor_surveillance_alert_marks")
        stop = asyncio.Event()
        task = call(start())
        _wait(lambda: _marked(floor) == {alert_id}, "the alert's mark again")
        call(close(task))
        again = call(_stream(floor))
        assert [(s, m, e) for s, m, e in again] == published
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
