"""The floor treats every message from a table as hostile, as a property over the real servers
(docs/floor.md "A table's messages are hostile").

Two good tables play on with their uplinks while, in each example, one "bad" table (its real journal
and uplink too) has hypothesis-made messages published with its own credentials between its real
entries: random bytes, random JSON, entries of every kind chained validly to its real last entry (or
with a wrong hash, a wrong link, a gap) whose payload is random or a real entry's payload mutated
anywhere, mutated copies of its real entries, private parts. After each example:

- the floor service is alive (never ended by a message);
- every good table's entries are on the floor exactly once, in order, chains verified, its released
  private parts there (``floor_problems``);
- every hostile message was handled: quarantined (kept in floor_quarantine), or taken (a well-formed
  entry that continued the chain), or a resend of what the floor holds;
- the bad table is its journal on the floor exactly, or it is quarantined: whatever the floor took of it
  that the table did not write (a valid chain anyone with its credentials can extend) quarantines it
  when the table's own entry comes (a fork).

Few examples in the suite (each costs a few seconds of real servers); ``FLUSHTABLE_HOSTILE_EXAMPLES=200``
runs a longer search. The figures are printed (``-s``).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.floor.service import FloorService
from controller.journal import entries as typed
from controller.journal.chain import entry_hash
from controller.uplink import wire
from controller.uplink.wire import FLOOR_CONSUMER, STREAM_NAME, table_inbox, table_subject
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import ANSWER_TIMEOUT_S, Running, Tables, expected_messages, floor_problems, last_seq

EXAMPLES = int(os.environ.get("FLUSHTABLE_HOSTILE_EXAMPLES", "6"))
GOOD = ["G1", "G2"]
BAD = [f"B{n:02d}" for n in range(1, 13)]
T = TypeVar("T")

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


_DEEP_KINDS = frozenset({"round_settled", "round_dead", "round_voided", "round_started", "bets_locked"})


class _LoopThread:
    """The servers' clients (uplinks, the floor service) run on a loop of their own, so that each
    hypothesis example (synchronous) can drive them and wait on them."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, work: Coroutine[Any, Any, T], timeout_s: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout_s)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def _places(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (itself, each member, each member's members ...)."""
    places = [path]
    if isinstance(node, dict):
        for key in sorted(node):
            places += _places(node[key], (*path, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            places += _places(item, (*path, index))
    return places


def _replaced(node: Any, path: tuple[Any, ...], replacement: Any) -> Any:
    if not path:
        return replacement
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        return {**node, head: _replaced(node[head], rest, replacement)}
    return [*node[:head], _replaced(node[head], rest, replacement), *node[head + 1 :]]


def _mutated(value: Any, data: st.DataObject) -> Any:
    """``value`` with one place anywhere in it (most often a leaf deep inside: a wager's stake) replaced
    by random JSON. The draws never depend on ``value`` (the table's journal is not hypothesis's to
    replay): a number that picks the place, then the new value."""
    choice = data.draw(st.integers(0, 2**16))
    replacement = data.draw(JSON_VALUES)
    places = _places(value)
    return _replaced(value, places[choice % len(places)], replacement)


def _hostile_body(
    tables: Tables, table_id: str, data: st.DataObject, previous: dict[str, Any] | None
) -> bytes:
    """One hostile message for the table. Every draw is made whatever the journal holds (indexes taken
    modulo its length), so that hypothesis can replay an example on another table's journal."""
    journal = tables.journals[table_id]
    last = journal.last_entry()
    assert last is not None
    entries = list(journal.entries())
    shape = data.draw(
        st.sampled_from(["bytes", "json", "entry", "entry", "entry", "entry", "copy", "private"])
    )
    if shape == "bytes":
        return data.draw(st.binary(max_size=120))
    if shape == "json":
        return json.dumps(data.draw(JSON_VALUES)).encode()
    if shape == "private":
        seq = 1 + data.draw(st.integers(0, 2**16)) % (last.seq + 2)
        return wire.private_body(table_id, seq, data.draw(st.text(max_size=40)))
    # Most of the time one of the entries whose payload the reducer reads deepest (a settlement, a round's
    # banking, locked wagers), where a well-chained forgery does the most harm.
    deep = [e for e in entries if e.kind in _DEEP_KINDS]
    pool = deep if data.draw(st.integers(0, 3)) and deep else entries
    real = pool[data.draw(st.integers(0, 2**16)) % len(pool)].public_json()
    if shape == "copy":  # a real entry's message with one field anywhere changed (not hashed again)
        copy = _mutated(real, data)
        return wire.entry_body(copy if isinstance(copy, dict) else {**real, "payload": copy})
    # An entry after the real last one (or after the previous forged one), of any kind.
    onto_previous = data.draw(st.booleans())
    head = previous if previous is not None and onto_previous else last.public_json()
    other_kind = data.draw(st.sampled_from(sorted(typed.KINDS)))
    kind = real["kind"] if data.draw(st.integers(0, 3)) else other_kind
    source_payload = real["payload"] if real["kind"] == kind else {}
    how = data.draw(st.sampled_from(["real", "mutated", "mutated", "random"]))
    mutated = _mutated(source_payload, data)
    random_payload = data.draw(JSON_VALUES)
    payload = {"real": source_payload, "mutated": mutated, "random": random_payload}[how]
    round_id = data.draw(st.sampled_from([real["round_id"]] * 3 + [None, last.round_id, "x" * 300]))
    document: dict[str, Any] = {
        "seq": head["seq"] + 1,
        "time_utc": last.time_utc,
        "table_id": table_id,
        "round_id": round_id,
        "source": "engine",
        "kind": kind,
        "version": last.version,
        "payload": payload if isinstance(payload, dict) else {"value": payload},
        "private_digest": None,
        "prev_hash": head["hash"],
    }
    link = data.draw(st.sampled_from(["valid"] * 5 + ["bad_hash", "broken", "gap"]))
    if link == "broken":
        document["prev_hash"] = "e" * 64
    if link == "gap":
        document["seq"] += 2
    document["hash"] = entry_hash(**document)
    if link == "bad_hash":
        document["hash"] = "d" * 64
    return wire.entry_body(document)


def _rows(floor: Any, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(floor.reporting_dsn) as connection:
        return connection.execute(sql, args).fetchall()


def test_no_table_message_stops_the_floor_or_touches_another_table(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    floor = make_floor(GOOD + BAD, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", GOOD + BAD)
    for table_id in GOOD:
        tables.play(table_id, 1)
    loop = _LoopThread()
    running = Running(floor, tables)
    service = FloorService(floor.floor_config(release_poll_interval_s=60))
    figures = {"examples": 0, "hostile_messages": 0, "quarantined_messages": 0, "taken_forged": 0}
    used: list[str] = []

    async def start() -> asyncio.Task[None]:
        running.start_uplinks(GOOD)
        serving = asyncio.create_task(service.run(running.stop))
        running.tasks.append(serving)
        return serving

    serving = loop.run(start())

    async def publish(table_id: str, body: bytes, n: int) -> int:
        client = await floor.connect_as(
            f"table-{table_id}", floor.passwords[f"nats:table:{table_id}"], inbox_prefix=table_inbox(table_id)
        )
        try:
            ack = await client.jetstream(timeout=ANSWER_TIMEOUT_S).publish(
                table_subject(floor.site, table_id), body, headers={wire.MSG_ID: f"{table_id}:hostile:{n}"}
            )
            return int(ack.seq)
        finally:
            await client.close()

    async def handled_through(stream_seq: int) -> None:
        admin = await floor.connect_admin()
        try:
            for _ in range(600):  # bounded: 60 s
                info = await admin.jetstream().consumer_info(STREAM_NAME, FLOOR_CONSUMER)
                if info.ack_floor is not None and (info.ack_floor.stream_seq or 0) >= stream_seq:
                    return
                await asyncio.sleep(0.1)
            raise AssertionError(f"the floor did not handle stream seq {stream_seq} within 60 s")
        finally:
            await admin.close()

    def wait_for(predicate: Any, what: str) -> None:
        async def waiting() -> None:
            for _ in range(600):  # bounded: 60 s
                if predicate() or serving.done():
                    return
                await asyncio.sleep(0.1)
            raise AssertionError(f"timed out after 60 s waiting for {what}")

        loop.run(waiting())
        assert not serving.done(), serving

    def on_floor_through(table_id: str) -> bool:
        got = _rows(floor, "SELECT max(seq) FROM floor_entries WHERE table_id = %s", table_id)[0][0]
        return bool(got == last_seq(tables.journals[table_id]))

    def quarantined(table_id: str) -> bool:
        row = _rows(floor, "SELECT quarantined_at_seq FROM floor_tables WHERE table_id = %s", table_id)
        return bool(row) and row[0][0] is not None

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(data=st.data())
    def example(data: st.DataObject) -> None:
        bad = BAD[len(used) % len(BAD)]
        used.append(bad)
        if bad not in running.uplinks:
            tables.play(bad, 1)

            async def start_bad() -> None:
                running.start_uplinks([bad])

            loop.run(start_bad())
            wait_for(lambda: on_floor_through(bad), f"{bad}'s first round")
        count = data.draw(st.integers(1, 3))
        seqs: list[int] = []
        previous: dict[str, Any] | None = None
        for n in range(count):
            body = _hostile_body(tables, bad, data, previous)
            try:
                decoded = wire.decode(body)
                previous = json.loads(body) if isinstance(decoded, wire.EntryMessage) else previous
            except wire.BadMessage:
                pass
            seqs.append(loop.run(publish(bad, body, len(used) * 10 + n)))
        figures["hostile_messages"] += count
        # The tables play on: the bad table's own next entries come after the hostile ones.
        for table_id in [*GOOD, bad]:
            tables.play(table_id, 1)
            loop.loop.call_soon_threadsafe(running.uplinks[table_id].notify)
        for table_id in GOOD:
            wait_for(
                lambda table_id=table_id: on_floor_through(table_id), f"{table_id} after {bad}'s messages"
            )
        wait_for(lambda: on_floor_through(bad) or quarantined(bad), f"{bad} on the floor or quarantined")
        loop.run(handled_through(max(seqs)))
        assert not serving.done(), serving
        # Every other table: exactly its journal, once, in order, its chain verified.
        assert floor_problems(floor, {t: tables.path(t) for t in GOOD}) == []
        # Every hostile message handled: held, taken, or a resend of what the floor holds.
        held = {
            int(s)
            for (s,) in _rows(floor, "SELECT stream_seq FROM floor_quarantine WHERE table_id = %s", bad)
        }
        taken = {
            int(s) for (s,) in _rows(floor, "SELECT stream_seq FROM floor_entries WHERE table_id = %s", bad)
        }
        hashes = {
            int(q): str(h)
            for q, h in _rows(floor, "SELECT seq, hash FROM floor_entries WHERE table_id = %s", bad)
        }
        journal_hashes, _privates = expected_messages(tables.path(bad), bad)
        for stream_seq in seqs:
            if stream_seq in held or stream_seq in taken:
                figures["quarantined_messages"] += stream_seq in held
                figures["taken_forged"] += stream_seq in taken
                continue
            raw = loop.run(_stream_body(floor, stream_seq))
            decoded = wire.decode(raw)  # not held: it must be a well-formed resend
            assert isinstance(decoded, wire.EntryMessage | wire.PrivateMessage), decoded
            if isinstance(decoded, wire.EntryMessage):
                assert hashes.get(decoded.seq) == decoded.hash, (stream_seq, decoded.seq)
        # The bad table: its journal exactly, or quarantined (it holds something the table did not write).
        differs = any(journal_hashes.get(seq) != hash_ for seq, hash_ in hashes.items())
        if differs or not on_floor_through(bad):
            assert quarantined(bad), (bad, differs)
        else:
            assert floor_problems(floor, {bad: tables.path(bad)}) == [] or quarantined(bad)
        figures["examples"] += 1

    try:
        example()
    finally:
        loop.run(running.close())
        loop.close()
        tables.close()
    figures["tables_quarantined"] = len(
        _rows(floor, "SELECT 1 FROM floor_tables WHERE quarantined_at_seq IS NOT NULL")
    )
    figures["service_alive_throughout"] = 1
    print(f"\nhostile-table property: {json.dumps(figures)}")
    assert figures["examples"] >= 1
    assert _rows(
        floor,
        "SELECT count(*) FROM floor_tables WHERE table_id = ANY(%s) AND quarantined_at_seq IS NOT NULL",
        GOOD,
    ) == [(0,)]


async def _stream_body(floor: Any, stream_seq: int) -> bytes:
    admin = await floor.connect_admin()
    try:
        raw = await admin.jetstream().get_msg(STREAM_NAME, seq=stream_seq)
        return raw.data or b""
    finally:
        await admin.close()
