"""`flushtable floor partitions` (controller/floor/partitions.py; docs/floor.md "Partitioned floor
workers"): the partitions made as the floor's NATS admin from the command line, shown with the floor's
own file, and every refusal one line with exit status 2, never a traceback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import psycopg
import pytest

from controller.cli import main
from controller.floor.config import write_floor_config
from controller.floor.workers import claim_epoch, ensure_partitions, partition_consumer
from controller.uplink.wire import LEASE_BUCKET
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import table_ids

ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


class Ran(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def _flushtable(capsys: pytest.CaptureFixture[str], *args: str) -> Ran:
    """The command in this process (its code path is the installed command's: controller.cli.main)."""
    code = main(["floor", "partitions", *args])
    captured = capsys.readouterr()
    # Log lines (JSON) are the libraries'; the command's own lines are the others.
    own = "".join(line for line in captured.err.splitlines(keepends=True) if not line.startswith("{"))
    return Ran(code, captured.out, own)


def _refused(result: Ran) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("flushtable floor: "), line
    return line


def test_partitions_are_made_shown_and_bad_input_refused_in_one_line(
    tmp_path: Path, make_floor: MakeFloor, capsys: pytest.CaptureFixture[str]
) -> None:
    floor = make_floor(table_ids(1))
    config = str(write_floor_config(tmp_path / "floor-config", floor.floor_config()))
    admin_file = tmp_path / "nats-admin.pw"
    admin_file.write_text(floor.passwords["nats:admin"] + "\n")
    wrong_file = tmp_path / "wrong.pw"
    wrong_file.write_text("not-the-password\n")
    admin = ("--admin-password-file", str(admin_file))

    # Refused before anything is made.
    assert "--create needs --admin-password-file" in _refused(
        _flushtable(capsys, "--config", config, "--create", "2")
    )
    assert "--create: 1 to 256 partitions, not 0" in _refused(
        _flushtable(capsys, "--config", config, "--create", "0", *admin)
    )
    assert "--lease-ttl: 1 to 300 seconds, not 0.5" in _refused(
        _flushtable(capsys, "--config", config, "--create", "2", "--lease-ttl", "0.5", *admin)
    )
    assert "only with --create P" in _refused(_flushtable(capsys, "--config", config, *admin))
    assert "NATS:" in _refused(
        _flushtable(capsys, "--config", config, "--create", "2", "--admin-password-file", str(wrong_file))
    )
    # One server: a bucket of three replicas cannot be placed (JetStream's own refusal, one line).
    assert "JetStream refused" in _refused(
        _flushtable(capsys, "--config", config, "--create", "2", "--replicas", "3", *admin)
    )

    # Made as an operator runs it (a process of its own).
    made_run = subprocess.run(
        [sys.executable, "-m", "controller.cli", "floor", "partitions", "--config", config,
         "--create", "2", *admin],
        capture_output=True, text=True, timeout=120, env=ENV, check=False,
    )  # fmt: skip
    assert made_run.returncode == 0, made_run.stderr
    made = Ran(made_run.returncode, made_run.stdout, made_run.stderr)
    assert made.stdout.splitlines() == [
        f"bucket {LEASE_BUCKET}: TTL 6 s, R1",
        "consumer floor-p0of2: ack_wait 3 s, 0 pending, 0 delivered unacked",
        "consumer floor-p1of2: ack_wait 3 s, 0 pending, 0 delivered unacked",
        "a dead worker's partitions move within 10 s (lease TTL 6 s + 2 renewals; ack_wait 3 s)",
    ]
    assert (
        _flushtable(capsys, "--config", config, "--create", "2", *admin).stdout == made.stdout
    )  # again: the same
    # The bucket's TTL is what every worker is checked against: another one is refused, the bucket kept.
    line = _refused(_flushtable(capsys, "--config", config, "--create", "2", "--lease-ttl", "10", *admin))
    assert f"--lease-ttl 10 but the {LEASE_BUCKET} bucket's TTL is 6 s" in line

    shown = _flushtable(capsys, "--config", config, "--partitions", "2")  # the floor reader's own file only
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:2] == [
        "no partition leased yet (no worker has run)",
        made.stdout.splitlines()[0],
    ]

    async def lease() -> None:
        async with await psycopg.AsyncConnection.connect(floor.writer_dsn, autocommit=True) as connection:
            assert await claim_epoch(connection, 1, 2, 7, "w2")

    asyncio.run(lease())
    shown = _flushtable(capsys, "--config", config)  # the count taken from the leases
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("partition 1 of 2: worker w2, epoch 7, renewed ")
    assert lines[2:] == made.stdout.splitlines()[1:3]
    assert partition_consumer(1, 2) in lines[3]

    # The bucket lost while PostgreSQL holds an epoch: not made again (its revisions would start below
    # the epoch and every claim be refused); refused in one line naming the documented step.
    async def delete_bucket() -> None:
        admin_client = await floor.connect_admin()
        try:
            await admin_client.jetstream().delete_key_value(LEASE_BUCKET)
        finally:
            await admin_client.close()

    asyncio.run(delete_bucket())
    line = _refused(_flushtable(capsys, "--config", config, "--create", "2", *admin))
    assert "floor_partition_leases holds epochs (1 rows): stop every worker and clear" in line
    assert _flushtable(capsys, "--config", config, "--partitions", "2").stdout.splitlines()[1] == (
        f"bucket {LEASE_BUCKET}: none (flushtable floor partitions --create P makes it)"
    )  # not remade


def test_the_lease_bucket_takes_the_streams_replicas(
    tmp_path: Path, make_floor: MakeFloor, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the three-node cluster (the stream R3): `--create` without `--replicas` makes the lease bucket
    R3, not R1 (one node lost would stop every renewal, so the whole floor); fewer replicas than the
    stream refused in one line; a bucket made with fewer (as before) flagged when shown."""
    floor = make_floor(table_ids(1), nodes=3)
    config = str(write_floor_config(tmp_path / "floor-config", floor.floor_config()))
    admin_file = tmp_path / "nats-admin.pw"
    admin_file.write_text(floor.passwords["nats:admin"] + "\n")
    admin = ("--admin-password-file", str(admin_file))

    line = _refused(_flushtable(capsys, "--config", config, "--create", "2", "--replicas", "1", *admin))
    assert "--replicas 1: fewer than the FLUSHTABLE stream's 3" in line
    made = _flushtable(capsys, "--config", config, "--create", "2", *admin)
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[0] == f"bucket {LEASE_BUCKET}: TTL 6 s, R3"

    async def remake_r1() -> None:  # as `--create` made it before it took the stream's replicas
        admin_client = await floor.connect_admin()
        try:
            await admin_client.jetstream().delete_key_value(LEASE_BUCKET)
            await ensure_partitions(admin_client, 2, replicas=1)
        finally:
            await admin_client.close()

    asyncio.run(remake_r1())
    shown = _flushtable(capsys, "--config", config, "--partitions", "2")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[1].startswith(
        f"bucket {LEASE_BUCKET}: TTL 6 s, R1 - FEWER than the FLUSHTABLE stream's R3"
    )
