"""The floor service's take of a message that waits for nothing (controller/floor/service.py ``_take_now``):
a held table's next entry, and a private part whose commitment the table holds, are taken by a plain call,
without the coroutine ``_take_one`` (one a message was a measurable share of the service's CPU: docs/floor.md
"Tenth stop: the take's CPU"); what needs more still goes ``_take_one``'s way, and both ways leave the same
batch.

No servers: every table is held in memory (as in a running service) and nothing taken here asks
PostgreSQL or the stream; the real engine's journals give the bodies.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any, cast

from controller.floor.checks import TableProjection
from controller.floor.intake import Delivery, RawHeaders
from controller.floor.service import FloorConfig, FloorService
from controller.floor.store import Batch, Connection
from controller.journal.state import TableState
from controller.journal.store import Journal
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink import wire

_HEADERS = RawHeaders(b"NATS/1.0\r\nNats-Msg-Id: x\r\n\r\n")


class _Config:
    """What the service reads of its configuration while it is made and takes a batch."""

    consumer = "floor"
    backoff_initial_s = 0.2
    backoff_max_s = 5.0


class _CountedService(FloorService):
    """The service, counting the messages that went ``_take_one``'s way (a coroutine each)."""

    def __init__(self) -> None:
        super().__init__(cast("FloorConfig", _Config()))
        self.taken_one_by_one: list[int] = []

    async def _take_one(self, connection: Connection, batch: Batch, message: Any, *decoded: Any) -> None:
        self.taken_one_by_one.append(message.stream_seq)
        await super()._take_one(connection, batch, message, *decoded)


def _bodies(base: Path, rounds: int) -> list[tuple[str, bytes]]:
    """Three tables' entries (one of each game), each private part of a round right after its entry."""
    bodies: list[tuple[str, bytes]] = []
    for index, game in enumerate(MIXED_GAMES):
        table_id = f"W{index}"
        journal = Journal.open(base / f"{table_id}.sqlite", table_id, synchronous="OFF")
        try:
            sim = SimTable(journal, game, random.Random(index))
            for _ in range(rounds):
                sim.play_round()
            for stored in journal.entries():
                bodies.append((table_id, wire.entry_body(stored.public_json())))
                # A private part of an entry of no round: its commitment is not held in memory (the
                # floor asks PostgreSQL for it), so none of those here.
                if stored.private_text is not None and stored.round_id is not None:
                    bodies.append((table_id, wire.private_body(table_id, stored.seq, stored.private_text)))
        finally:
            journal.close()
    return bodies


def _deliveries(bodies: list[tuple[str, bytes]]) -> list[Delivery]:
    return [
        Delivery(
            stream_seq=n,
            subject=f"flushtable.main.{table_id}.journal",
            headers=_HEADERS,
            data=body,
            reply=f"$JS.ACK.FLUSHTABLE.floor.1.{n}.{n}.1764912345123456789.5",
        )
        for n, (table_id, body) in enumerate(bodies, 1)
    ]


def _take(service: _CountedService, deliveries: list[Delivery]) -> Batch:
    """The deliveries taken as one batch, the service holding every table from its start."""
    for table_id in sorted({d.subject.split(".")[2] for d in deliveries}):
        service._projections._tables[table_id] = TableProjection(table_id, state=TableState(table_id))
    batch = Batch()
    asyncio.run(service._take_all(cast("Connection", None), batch, deliveries))
    return batch


def test_a_held_tables_next_entries_and_their_private_parts_take_no_coroutine(tmp_path: Path) -> None:
    deliveries = _deliveries(_bodies(tmp_path, 2))
    privates = sum(1 for d in deliveries if b'"type":"private"' in d.data)
    assert privates > 0
    service = _CountedService()
    batch = _take(service, deliveries)
    assert batch.quarantine == []
    assert batch.alerts == []
    assert (len(batch.entries), len(batch.privates)) == (len(deliveries) - privates, privates)
    assert service.taken_one_by_one == []


class _OneByOne(_CountedService):
    """Every message ``_take_one``'s way, as the service took each before ``_take_now``."""

    def _take_now(self, batch: Batch, message: Any) -> bool:
        return False


def _outcome(service: FloorService, batch: Batch) -> tuple[Any, ...]:
    tables = {
        table_id: (p.last_seq, p.last_hash, p.quarantined_at_seq, p.quarantine_reason, p.last_stream_seq,
                   p.last_seen_stream_seq, p.digests, p.touched_rounds, p.closed_round, p.state.last_seq)
        for table_id, p in service._projections._tables.items()
    }  # fmt: skip
    rows = (batch.entries, batch.privates, batch.quarantine, batch.alerts, sorted(batch.tables))
    return tables, rows, service.status, service.site_of


def test_what_needs_more_goes_the_coroutines_way_and_both_ways_leave_the_same_batch(tmp_path: Path) -> None:
    """A resend (an entry of this batch sent again), a private part sent twice, a body that is no
    message, and a forged entry (its envelope changed, its hash kept) with what its table sends after it
    (quarantined): taken or refused alike, whether ``_take_now`` takes what it can or not."""
    bodies = _bodies(tmp_path, 1)
    resent = next(body for table_id, body in bodies if table_id == "W1")
    private = next(body for table_id, body in bodies if table_id == "W1" and b'"type":"private"' in body)
    w2_entries = [
        i for i, (table_id, body) in enumerate(bodies) if table_id == "W2" and b'"type":"entry"' in body
    ]
    forged_at = w2_entries[len(w2_entries) // 2]
    bodies[forged_at] = ("W2", bodies[forged_at][1].replace(b'"source":"', b'"source":"forged-', 1))
    bodies += [("W1", resent), ("W1", private), ("W0", b"not json")]
    deliveries = _deliveries(bodies)
    with_now, one_by_one = _CountedService(), _OneByOne()
    taken = _take(with_now, deliveries)
    assert _outcome(with_now, taken) == _outcome(one_by_one, _take(one_by_one, deliveries))
    assert [alert[3] for alert in taken.alerts] == ["bad_hash", "undecodable"]
    assert with_now.status.duplicates == 2
    # The forged table's later messages (its table quarantined) and the resend went ``_take_one``'s way.
    after_the_forged = [d.stream_seq for d in deliveries[forged_at + 1 : -3] if ".W2." in d.subject]
    assert after_the_forged
    assert with_now.taken_one_by_one == [*after_the_forged, len(deliveries) - 2]
