"""nats-server's CPU to deliver a partition's messages, by the shape of the partition consumer's filter
(docs/floor.md "Partitioned floor workers"): every message (one wildcard, the others' acked unread by
the service), the partition's tables listed (``filter_subjects``), one wildcard that matches the
partition alone (the shape a ``partition()`` subject mapping would give, the partition a token of the
stored subject), and two filters of which one is a wildcard (the multi-filter path with a short list).

    python bench/bench_partition_filters.py [--tables 300] [--per-table 200] [--out FILE]

One nats-server (the floor's, 2.10+), a stream of ``--tables`` subjects with ``--per-table`` 370-byte
messages each; for each shape a fresh durable pull consumer drained in batches of 1,000 with an ack
each. Prints JSON: the server's CPU (from /proc) per 1,000 stream messages and per delivered message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import nats
import nats.errors
from nats.aio.client import Client
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.simulation.floor.servers import nats_server_binary
from controller.uplink.wire import partition_of

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


async def _quiet(_error: Exception) -> None:
    """The connection attempts before the server listens are expected: not printed."""


async def _drain(client: Client, name: str, expected: int) -> int:
    subscription = await client.jetstream().pull_subscribe_bind(name, "S")
    delivered = 0
    for _ in range(expected // 100 + 10):  # bounded: a batch holds 1 to 1,000
        if delivered >= expected:
            break
        try:
            messages = await subscription.fetch(1000, timeout=2)
        except nats.errors.TimeoutError:
            break
        for message in messages:
            await message.ack()
        delivered += len(messages)
    await client.flush()
    return delivered


async def bench(tables: int, per_table: int) -> dict[str, Any]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    store = tempfile.mkdtemp(prefix="flushtable-bench-filters-")
    binary = nats_server_binary()
    server = subprocess.Popen(
        [binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", store],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client: Client | None = None
        for _ in range(200):  # bounded: the server's start
            try:
                client = await nats.connect(
                    f"nats://127.0.0.1:{port}", connect_timeout=1, error_cb=_quiet, allow_reconnect=False
                )
                break
            except (OSError, nats.errors.Error):
                await asyncio.sleep(0.05)
        assert client is not None, "nats-server did not start"
        js = client.jetstream()
        await js.add_stream(StreamConfig(name="S", subjects=["flushtable.>"]))
        ids = [f"T{n:04d}" for n in range(tables)]
        # The floor's own partition (nats-server's FNV-1a), as the workers' consumers split the tables.
        partition = {t: partition_of(t, 2) for t in ids}
        # The partition as a last token too, for the partition()-mapping shape; the other shapes ignore it.
        subjects = {t: f"flushtable.main.{t}.journal.{partition[t]}" for t in ids}
        body = b"x" * 370
        for _ in range(per_table):
            for t in ids:
                await js.publish(subjects[t], body)
        mine = sorted(subjects[t] for t in ids if partition[t] == 0)
        shapes: list[tuple[str, dict[str, Any], int]] = [
            ("every_message_one_wildcard", {"filter_subject": "flushtable.>"}, tables * per_table),
            ("tables_listed", {"filter_subjects": mine}, len(mine) * per_table),
            ("partition_token_one_wildcard", {"filter_subject": "flushtable.*.*.journal.0"},
             len(mine) * per_table),
            ("two_filters_one_wildcard", {"filter_subjects": ["flushtable.*.*.journal.0", "flushtable.none"]},
             len(mine) * per_table),
        ]  # fmt: skip
        figures: dict[str, Any] = {}
        for name, filters, expected in shapes:
            await js.add_consumer(
                "S",
                ConsumerConfig(
                    durable_name=name, ack_policy=AckPolicy.EXPLICIT, max_ack_pending=1000, **filters
                ),
            )
            before = _cpu_s(server.pid)
            delivered = await _drain(client, name, expected)
            spent = _cpu_s(server.pid) - before
            figures[name] = {
                "delivered": delivered,
                "server_cpu_s": round(spent, 2),
                "server_cpu_ms_per_1000_stream_messages": round(1e6 * spent / (tables * per_table), 1),
                "server_cpu_us_per_delivered_message": round(1e6 * spent / max(delivered, 1), 1),
            }
        await client.close()
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False).stdout
        return {
            "nats_server": version.strip(),
            "tables": tables,
            "messages": tables * per_table,
            "partition_tables": len(mine),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "shapes": figures,
        }
    finally:
        server.kill()
        server.wait(timeout=10)
        shutil.rmtree(store, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--per-table", type=int, default=200)
    parser.add_argument("--out", default=None, help="also write the JSON to bench/results/FILE")
    args = parser.parse_args()
    figures = asyncio.run(bench(args.tables, args.per_table))
    print(json.dumps(figures))
    if args.out:
        (Path(__file__).resolve().parent / "results" / args.out).write_text(
            json.dumps(figures, indent=2) + "\n"
        )


if __name__ == "__main__":
    main()
