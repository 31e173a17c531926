"""`flushtable floor partitions`: make a partitioned floor's partitions, or show them (docs/floor.md
"Partitioned floor workers").

    flushtable floor partitions --config floor.toml [--partitions P]
    flushtable floor partitions --config floor.toml --create P [--lease-ttl 6] [--replicas 3]
        --admin-password-file nats-admin.pw

``--create`` is ``ensure_partitions`` (controller/floor/workers.py) as the floor's NATS admin
(``floor-admin``: making consumers and buckets is the admin's, never the reader's): the ``floor_leases``
bucket and each partition's durable consumer, with the consumers' ``ack_wait`` derived from the lease TTL.
Run again it changes nothing but an existing consumer's ``ack_wait``. Showing needs the floor's own file
only: the bucket (its TTL, replicas), each lease PostgreSQL holds (worker, epoch, last renewal) and each
partition consumer (its ``ack_wait``, messages pending and delivered unacked), as the floor reader.
Every refusal and every failure to reach NATS or PostgreSQL is one line (``PartitionsRefused``).
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence

import nats
import nats.errors
import nats.js.errors
import psycopg
from nats.aio.client import Client

from controller.errors import UserError
from controller.floor.service import FloorConfig
from controller.floor.workers import (
    MAX_PARTITIONS,
    LeaseTtlMismatch,
    WorkerSettings,
    check_bucket_ttl,
    ensure_partitions,
    partition_ack_wait_s,
    partition_consumer,
)
from controller.uplink.wire import LEASE_BUCKET, STREAM_NAME

ADMIN_USER = "floor-admin"  # controller/simulation/floor/servers.py admin_user
MAX_REPLICAS = 5  # JetStream's own limit

_REACH_ERRORS: tuple[type[BaseException], ...] = (
    nats.errors.Error,
    nats.js.errors.Error,
    OSError,
    TimeoutError,
    ssl.SSLError,
)


class PartitionsRefused(UserError):
    """A bad argument, or NATS or PostgreSQL could not do it: one line."""


def check_create(partitions: int, lease_ttl_s: float, replicas: int) -> WorkerSettings:
    """The arguments of ``--create``, refused in one line each."""
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise PartitionsRefused(f"--create: 1 to {MAX_PARTITIONS} partitions, not {partitions}")
    if not 1 <= replicas <= MAX_REPLICAS:
        raise PartitionsRefused(
            f"--replicas: 1 to {MAX_REPLICAS} (3 on a three-node cluster), not {replicas}"
        )
    try:
        return WorkerSettings("admin", partitions, lease_ttl_s=lease_ttl_s, renew_interval_s=lease_ttl_s / 3)
    except ValueError as error:
        raise PartitionsRefused(str(error)) from None


async def _quiet(_error: Exception) -> None:
    """nats-py's default logs each connection error with its traceback; the command says one line."""


async def _connect(config: FloorConfig, user: str, password: str, *, inbox_prefix: str) -> Client:
    return await nats.connect(
        servers=list(config.servers),
        user=user,
        password=password,
        tls=ssl.create_default_context(cafile=str(config.ca_file)),
        inbox_prefix=inbox_prefix,
        allow_reconnect=False,
        max_reconnect_attempts=0,
        connect_timeout=5,
        error_cb=_quiet,
        name="flushtable-floor-partitions",
    )


def _nats_line(error: BaseException) -> str:
    if isinstance(error, nats.js.errors.APIError):
        return f"JetStream refused: {error.description or error}"
    if isinstance(error, nats.errors.NoServersError):
        return "NATS: no server of the floor's file answered (its servers, user and password, ca_file)"
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    text = text.removeprefix("nats: ")
    return f"NATS: {text}"


async def create_partitions(
    config: FloorConfig, admin_password: str, partitions: int, *, lease_ttl_s: float, replicas: int
) -> list[str]:
    """``ensure_partitions`` as the floor's admin; the lines that say what is there now."""
    settings = check_create(partitions, lease_ttl_s, replicas)
    client: Client | None = None
    try:
        client = await _connect(config, ADMIN_USER, admin_password, inbox_prefix="_INBOX")
        js = client.jetstream()
        try:
            await check_bucket_ttl(await js.key_value(LEASE_BUCKET), lease_ttl_s)
        except nats.js.errors.BucketNotFoundError:
            pass  # made below, with this TTL
        except LeaseTtlMismatch as error:
            # The bucket's TTL is what every worker is checked against: it is not changed here.
            raise PartitionsRefused(f"{error} (the bucket is kept: its TTL is set when it is made)") from None
        await ensure_partitions(client, partitions, lease_ttl_s=lease_ttl_s, replicas=replicas)
        lines = await _nats_lines(client, [partitions])
    except _REACH_ERRORS as error:
        raise PartitionsRefused(_nats_line(error)) from None
    finally:
        if client is not None and not client.is_closed:
            await client.close()
    lines.append(
        f"a dead worker's partitions move within {settings.takeover_bound_s:g} s "
        f"(lease TTL {lease_ttl_s:g} s + 2 renewals; ack_wait {partition_ack_wait_s(lease_ttl_s):g} s)"
    )
    return lines


async def _nats_lines(client: Client, counts: Sequence[int]) -> list[str]:
    js = client.jetstream()
    lines: list[str] = []
    try:
        bucket = await js.stream_info(f"KV_{LEASE_BUCKET}")
    except nats.js.errors.NotFoundError:
        lines.append(f"bucket {LEASE_BUCKET}: none (flushtable floor partitions --create P makes it)")
    else:
        ttl_s = bucket.config.max_age or 0
        lines.append(f"bucket {LEASE_BUCKET}: TTL {ttl_s:g} s, R{bucket.config.num_replicas or 1}")
    for partitions in counts:
        for partition in range(partitions):
            name = partition_consumer(partition, partitions)
            try:
                info = await js.consumer_info(STREAM_NAME, name)
            except nats.js.errors.NotFoundError:
                lines.append(f"consumer {name}: none")
                continue
            lines.append(
                f"consumer {name}: ack_wait {info.config.ack_wait or 0:g} s, "
                f"{info.num_pending or 0} pending, {info.num_ack_pending or 0} delivered unacked"
            )
    return lines


async def show_partitions(config: FloorConfig, partitions: int | None) -> list[str]:
    """The bucket, PostgreSQL's leases and the consumers of ``partitions`` (else of the leases' count)."""
    if partitions is not None and not 1 <= partitions <= MAX_PARTITIONS:
        raise PartitionsRefused(f"--partitions: 1 to {MAX_PARTITIONS}, not {partitions}")
    try:
        async with await psycopg.AsyncConnection.connect(
            config.dsn, autocommit=True, connect_timeout=10
        ) as connection:
            rows = await (
                await connection.execute(
                    "SELECT partition, partitions, worker, epoch, "
                    "round(extract(epoch FROM clock_timestamp() - renewed_utc)::numeric, 1) "
                    "FROM floor_partition_leases ORDER BY partitions, partition"
                )
            ).fetchall()
    except psycopg.Error as error:
        raise PartitionsRefused(f"PostgreSQL: {str(error).strip().splitlines()[0]}") from None
    lines = [
        f"partition {p} of {n}: worker {w}, epoch {e}, renewed {ago} s ago" for p, n, w, e, ago in rows
    ] or ["no partition leased yet (no worker has run)"]
    counts = [partitions] if partitions is not None else sorted({int(row[1]) for row in rows})
    client: Client | None = None
    try:
        client = await _connect(config, config.user, config.password, inbox_prefix=config.inbox_prefix)
        lines += await _nats_lines(client, counts)
    except _REACH_ERRORS as error:
        raise PartitionsRefused(_nats_line(error)) from None
    finally:
        if client is not None and not client.is_closed:
            await client.close()
    return lines
