"""Security of the floor, against the real servers: each table's credentials publish to its own subject
only, the floor's reader publishes nothing, plain (non-TLS) connections and wrong passwords are refused,
the stream refuses deletes and purges even to its admin, and PostgreSQL's roles hold."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from pathlib import Path

import nats
import nats.errors
import nats.js.errors
import psycopg
import pytest

from controller.tls import ssl_context
from controller.uplink import wire
from controller.uplink.wire import STREAM_NAME, table_inbox, table_subject
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import ANSWER_TIMEOUT_S, wait_until


def test_nats_permissions_tls_and_stream_protection(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["T1", "T2"])
    assert floor.nats is not None

    async def scenario() -> None:
        errors: list[str] = []

        async def on_error(error: Exception) -> None:
            errors.append(str(error))

        table1 = await nats.connect(
            servers=[floor.nats.url],  # type: ignore[union-attr]
            user="table-T1",
            password=floor.passwords["nats:table:T1"],
            tls=floor_ssl(),
            inbox_prefix=table_inbox("T1"),
            allow_reconnect=False,
            error_cb=on_error,
        )
        # What must be answered is given a loaded machine's time (the server stores the message before
        # it acks); what must be refused has no answer to wait for, so its short timeout is the refusal.
        js = table1.jetstream(timeout=1.0)
        body = wire.entry_body({"table_id": "T2", "seq": 1})
        # Its own subject: accepted.
        ack = await table1.jetstream(timeout=ANSWER_TIMEOUT_S).publish(
            table_subject("main", "T1"), b"{}", headers={wire.MSG_ID: "T1:x"}
        )
        assert ack.stream == STREAM_NAME
        # Another table's subject: the server refuses it (no ack; a permissions violation).
        with pytest.raises((nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError)):
            await js.publish(table_subject("main", "T2"), body)
        # Another table's last entry: refused too (the direct get is allowed for its own subject only).
        with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError, nats.js.errors.Error)):
            await js.get_last_msg(STREAM_NAME, table_subject("main", "T2"), direct=True)

        async def violation_reported() -> bool:
            return any("permissions violation" in e.lower() for e in errors)

        await wait_until(violation_reported, 30, "the server's permissions violation")
        await table1.close()

        # The floor's reader cannot publish a journal subject.
        reader_errors: list[str] = []

        async def on_reader_error(error: Exception) -> None:
            reader_errors.append(str(error))

        reader = await nats.connect(
            servers=[floor.nats.url],  # type: ignore[union-attr]
            user="floor-reader",
            password=floor.passwords["nats:floor"],
            tls=floor_ssl(),
            inbox_prefix="_INBOX_FLOOR",
            allow_reconnect=False,
            error_cb=on_reader_error,
        )
        with pytest.raises((nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError)):
            await reader.jetstream(timeout=1.0).publish(table_subject("main", "T1"), body)
        await reader.close()
        assert any("permissions violation" in e.lower() for e in reader_errors), reader_errors

        # Nothing but T1's own message reached the stream.
        admin = await floor.connect_admin()
        admin_js = admin.jetstream(timeout=ANSWER_TIMEOUT_S)
        info = await admin_js.stream_info(STREAM_NAME)
        assert info.state.messages == 1
        # The stream refuses deletes and purges, even to its admin.
        with pytest.raises(nats.js.errors.APIError):
            await admin_js.delete_msg(STREAM_NAME, 1)
        with pytest.raises(nats.js.errors.APIError):
            await admin_js.purge_stream(STREAM_NAME)
        assert (await admin_js.stream_info(STREAM_NAME)).state.messages == 1
        await admin.close()

        # A wrong password: refused.
        with pytest.raises((nats.errors.Error, OSError)):
            await nats.connect(
                servers=[floor.nats.url],  # type: ignore[union-attr]
                user="table-T1",
                password="not-the-password",
                tls=floor_ssl(),
                allow_reconnect=False,
                max_reconnect_attempts=0,
                connect_timeout=2,
            )

    def floor_ssl() -> ssl.SSLContext:
        assert floor.tls is not None
        return ssl_context(floor.tls.ca_cert)

    asyncio.run(scenario())

    # A plain connection: the server requires TLS, and never answers a plain CONNECT.
    with socket.create_connection(("127.0.0.1", floor.nats.port), timeout=5) as sock:
        info_line = sock.recv(4096).decode()
        assert info_line.startswith("INFO ")
        assert json.loads(info_line[5:])["tls_required"] is True
        password = floor.passwords["nats:table:T1"]
        sock.sendall(
            f'CONNECT {{"user":"table-T1","pass":"{password}","verbose":false}}\r\nPING\r\n'.encode()
        )
        received = b""
        try:
            while chunk := sock.recv(4096):
                received += chunk
        except (ConnectionResetError, TimeoutError):
            pass
        assert b"PONG" not in received


def test_postgres_roles(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["T1"])
    with psycopg.connect(floor.writer_dsn) as writer:
        writer.execute(
            "INSERT INTO floor_entries (table_id, seq, time_utc, time_text, source, kind, version, payload, "
            "prev_hash, hash, stream_seq, typed_columns) VALUES ('T1', 1, now(), 'x', 'engine', "
            "'table_closed', 2, '{}', repeat('0', 64), repeat('1', 64), 1, 2)"
        )
        writer.commit()
        for statement in (
            "DELETE FROM floor_entries",
            "UPDATE floor_entries SET hash = repeat('2', 64)",
            "DELETE FROM floor_alerts",
            "DROP TABLE floor_alerts",
        ):
            with pytest.raises(psycopg.Error):
                writer.execute(statement)
            writer.rollback()
    with psycopg.connect(floor.owner_dsn) as owner:
        # Even the schema's owner cannot edit the record: the triggers refuse it.
        with pytest.raises(psycopg.Error, match="append-only"):
            owner.execute("UPDATE floor_entries SET hash = repeat('2', 64)")
        owner.rollback()
    with psycopg.connect(floor.reporting_dsn) as reporting:
        row = reporting.execute("SELECT count(*) FROM floor_entries").fetchone()
        assert row is not None
        assert row[0] == 1
        with pytest.raises(psycopg.Error):
            reporting.execute("INSERT INTO floor_table_config (table_id) VALUES ('T9')")
