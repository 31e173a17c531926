"""Forks: two bodies for one entry of a table (docs/floor.md "Forks"), on the real servers.

The reproduction of issue 30 item 2: as T002, a forged entry N+1 published with the next real entry's
``Nats-Msg-Id`` (``T002:N+1``) before the uplink sends the real one. JetStream's de-duplication kept the
forgery, the uplink took the duplicate's ack as its own, the floor held the forgery as entry N+1, and the
only alert was ``broken_chain at entry N+2``. Now the uplink's ids name their body (nobody without the
body can take one first), the uplink checks the server's last message before it resumes after it and
the stored message before it takes a duplicate's ack as its own, and the floor holds both bodies: alert
``fork``, the table quarantined, the forgery where it was taken, the table's own entry in
floor_quarantine. A release is refused while the table's own chain continues the other entry.

Also: a forger who has the very body's id (the uplink gets a duplicate ack: it compares, finds a fork,
and sends its own under a fresh id), and a forgery that comes after the real entry (the floor keeps the
real one; a release sets the forgery aside and the table flows on).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg

from controller.floor import release
from controller.floor.service import FloorService
from controller.journal.chain import entry_hash
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink import wire
from controller.uplink.outbox import Outbox
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, last_seq, wait_until
from tests.floor.test_bad_input import _alerts, _all_on_the_floor, _floor_seqs, _publish_as


def _forged_after(tables: Tables, table_id: str, seq: int) -> dict[str, Any]:
    """An entry ``seq`` of the table chained to its real entry ``seq - 1``: what anyone with the table's
    credentials can write (the chain has no key)."""
    before = tables.journals[table_id].entry(seq - 1)
    assert before is not None
    document: dict[str, Any] = {
        "seq": seq, "time_utc": before.time_utc, "table_id": table_id, "round_id": None,
        "source": "operator:mallory", "kind": "table_closed", "version": before.version,
        "payload": {"by": "mallory", "reason": "forged"}, "private_digest": None, "prev_hash": before.hash,
    }  # fmt: skip
    document["hash"] = entry_hash(**document)
    return document


def _uplink_id(tables: Tables, table_id: str, seq: int) -> str:
    """The id the table's uplink gives its entry ``seq`` (a forger who somehow has the body)."""
    outbox = Outbox(table_id)
    for stored in tables.journals[table_id].entries():
        for message in outbox.feed(stored):
            if message.position == wire.Position(seq, 0):
                return message.msg_id
    raise AssertionError(f"no entry {seq}")


def _rows(floor: EmbeddedFloor, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(floor.reporting_dsn) as connection:
        return connection.execute(sql, args).fetchall()


def _release(floor: EmbeddedFloor, table_id: str) -> str:
    with psycopg.connect(floor.writer_dsn) as connection:
        try:
            return release.release_table(
                connection, table_id, reason="looked at it", by="maria", via="cli"
            ).summary()
        except release.ReleaseRefused as refused:
            return f"refused: {refused}"


def _pre_empted(tmp_path: Path, make_floor: MakeFloor, forged_id: Any) -> None:
    """T002's next real entry's id taken first by a forgery (``forged_id(seq)``), while its uplink is
    down; then its uplink comes back."""
    ids = ["T001", "T002"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks(["T001"])
        serving = asyncio.create_task(FloorService(floor.floor_config()).run(running.stop))
        running.tasks.append(serving)
        t002 = Running(floor, tables)
        t002.start_uplinks(["T002"])
        await _all_on_the_floor(floor, tables, ids, "on the floor")
        await t002.close()  # the uplink down (the table plays on)
        real_next = last_seq(tables.journals["T002"]) + 1
        tables.play("T002", 1)
        forged = _forged_after(tables, "T002", real_next)
        await _publish_as(floor, "T002", wire.entry_body(forged), forged_id(tables, real_next))
        uplink_back = Running(floor, tables)
        uplink_back.start_uplinks(["T002"])

        async def forked() -> bool:
            return any(kind == "fork" for _table, _seq, kind, _message in _alerts(floor))

        await wait_until(forked, 60, "the floor's fork alert")
        tables.play("T001", 1)
        running.uplinks["T001"].notify()
        await _all_on_the_floor(floor, tables, ["T001"], "T001 after T002's fork")
        uplink = uplink_back.uplinks["T002"]
        assert uplink.status.forks >= 1, uplink.status
        assert f"not this journal's entry {real_next}" in uplink.status.last_fork, uplink.status.last_fork
        assert not serving.done(), serving
        await uplink_back.close()
        await running.close()

        # Evidence: the forgery where the floor took it, the table's own entry held with the alert.
        journal_hash = tables.journals["T002"].entry(real_next)
        assert journal_hash is not None
        assert _rows(
            floor, "SELECT hash FROM floor_entries WHERE table_id = 'T002' AND seq = %s", real_next
        ) == [(forged["hash"],)]
        held = [
            wire.decode(bytes(body))
            for (body,) in _rows(
                floor, "SELECT body FROM floor_quarantine WHERE table_id = 'T002' ORDER BY stream_seq"
            )
        ]
        assert any(isinstance(m, wire.EntryMessage) and m.hash == journal_hash.hash for m in held), held
        fork_alerts = [(seq, message) for table, seq, kind, message in _alerts(floor) if kind == "fork"]
        assert [(t, s) for t, s, k, _m in _alerts(floor) if k == "fork"] == [("T002", real_next)]
        assert forged["hash"] in fork_alerts[0][1], fork_alerts
        assert journal_hash.hash in fork_alerts[0][1], fork_alerts
        assert _rows(
            floor, "SELECT quarantined_at_seq, quarantine_reason FROM floor_tables WHERE table_id = 'T002'"
        ) == [(real_next, f"fork at entry {real_next}")]
        # The table's own chain continues the other entry: no release can make the floor's copy right.
        refusal = _release(floor, "T002")
        assert refusal.startswith("refused: table T002: a fork at entry"), refusal
        assert "the floor took an entry the table did not write" in refusal, refusal
        assert _floor_seqs(floor, "T001")[-1] == last_seq(tables.journals["T001"])

    asyncio.run(scenario())
    tables.close()


def test_a_forgery_that_takes_the_next_entrys_id_first_is_a_fork(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """The issue's reproduction: the forgery under ``T002:<next seq>``, the id the uplink used to give."""
    _pre_empted(tmp_path, make_floor, lambda _tables, seq: f"T002:{seq}")


def test_a_forgery_under_the_uplinks_own_id_is_a_fork_found_by_the_uplink(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """A forger who has the real body's id: the uplink's publish gets a duplicate ack; it compares the
    server's stored message with its own, finds a fork and sends its own under a fresh id."""
    _pre_empted(tmp_path, make_floor, lambda tables, seq: _uplink_id(tables, "T002", seq))


def test_a_forgery_after_the_real_entry_is_a_fork_and_the_release_sets_it_aside(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """The floor holds the table's own entry N; a second entry N (chained to N-1) comes: alert ``fork``,
    the table quarantined; the table's own entries after it continue the floor's chain, so a manager's
    release verifies, sets the forgery aside (kept as evidence) and the table flows on."""
    ids = ["T001", "T002"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)
    forged_seqs: list[int] = []  # the entry the forgery claims to be (read after the scenario)

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        service = FloorService(floor.floor_config(release_poll_interval_s=0.2))
        serving = asyncio.create_task(service.run(running.stop))
        running.tasks.append(serving)
        await _all_on_the_floor(floor, tables, ids, "on the floor")
        last = last_seq(tables.journals["T002"])
        forged_seqs.append(last)
        forged = _forged_after(tables, "T002", last)
        await _publish_as(floor, "T002", wire.entry_body(forged), "T002:late")

        async def quarantined() -> bool:
            return _rows(floor, "SELECT quarantined_at_seq FROM floor_tables WHERE table_id = 'T002'") == [
                (last,)
            ]

        await wait_until(quarantined, 30, "T002 quarantined by the fork")
        for table_id in ids:
            tables.play(table_id, 1)
            running.uplinks[table_id].notify()
        await _all_on_the_floor(floor, tables, ["T001"], "T001 flowing")
        end = last_seq(tables.journals["T002"])

        async def held_through_end() -> bool:
            rows = _rows(floor, "SELECT body FROM floor_quarantine WHERE table_id = 'T002'")
            seqs = set()
            for (body,) in rows:
                decoded = wire.decode(bytes(body))
                seqs.add(decoded.seq)
            return end in seqs

        await wait_until(held_through_end, 30, "T002's own entries held")
        summary = await asyncio.to_thread(_release, floor, "T002")
        assert summary.startswith(f"table T002 released (release 1): the chain verifies from entry {last}"), (
            summary
        )
        await _all_on_the_floor(floor, tables, ["T002"], "T002 released")
        assert not serving.done(), serving
        await running.close()

    asyncio.run(scenario())
    alerts = [(table, seq, kind) for table, seq, kind, _message in _alerts(floor)]
    assert alerts == [("T002", forged_seqs[0], "fork")], alerts  # one fork alert, at the forged entry
    hashes = _rows(floor, "SELECT seq, hash FROM floor_entries WHERE table_id = 'T002' ORDER BY seq")
    for seq, hash_ in hashes:
        stored = tables.journals["T002"].entry(int(seq))
        assert stored is not None
        assert stored.hash == hash_  # the table's own entries only
    assert len(hashes) == last_seq(tables.journals["T002"])
    tables.close()
