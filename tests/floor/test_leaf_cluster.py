"""A site joined as a leaf node to a three-node cluster hub (docs/floor.md "Deploying the floor"), on
real servers on 127.0.0.1: three hub nats-servers (routes over TLS, the hub's JetStream domain on each,
a TLS leaf listener on each), the site's nats-server as a leaf node given every hub node's leaf URL,
PostgreSQL, the uplinks and the floor service. No mock.

The site's tables publish to the site's stream; the hub's R3 stream sources it; the floor service reads
the hub through any node. Then the hub node the site's leaf is connected to is killed (SIGKILL) while
the tables play: the leaf dials another node, and every entry still reaches the floor exactly once."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from controller.floor.service import FloorService
from controller.journal.store import Journal
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor.site import EmbeddedSite
from controller.uplink.uplink import Uplink
from controller.uplink.wire import STREAM_NAME, site_stream_name
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import (
    Tables,
    expected_messages,
    floor_count,
    floor_problems,
    journal_total,
    private_count,
    wait_until,
)

SITE = "east"
SITE_TABLES = ["E1", "E2", "E3"]
HUB_TABLES = ["H1"]  # a table of the hub's own pit, publishing to the hub's nodes directly
# Only a failing test waits this long (a loaded two-core machine); a passing one takes seconds.
FLOOR_TIMEOUT_S = 90.0
LEAF_TIMEOUT_S = 30.0


def _messages(tables: Tables, ids: list[str]) -> int:
    """Messages the uplinks send for ``ids``: every entry, and every private part released."""
    total = 0
    for table_id in ids:
        hashes, privates = expected_messages(tables.path(table_id), table_id)
        total += len(hashes) + len(privates)
    return total


@dataclass
class LeafFloor:
    """A cluster hub, its site, the tables' uplinks (each to its own server) and the floor service."""

    floor: EmbeddedFloor
    site: EmbeddedSite
    tables: Tables
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    uplinks: dict[str, Uplink] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def start(self) -> None:
        for table_id in self.tables.ids:
            owner = self.site if table_id in SITE_TABLES else self.floor
            config = owner.uplink_config(table_id, backoff_max_s=1.0)
            self.uplinks[table_id] = Uplink(config, self.tables.path(table_id), table_id)
            self.tasks.append(asyncio.create_task(self.uplinks[table_id].run(self.stop)))
        service = FloorService(self.floor.floor_config(backoff_max_s=1.0))
        self.tasks.append(asyncio.create_task(service.run(self.stop)))

    def play(self, rounds: int) -> None:
        for table_id in self.tables.ids:
            self.tables.play(table_id, rounds)
            self.uplinks[table_id].notify()

    async def everything_on_floor(self, what: str) -> None:
        privates = sum(len(expected_messages(self.tables.path(t), t)[1]) for t in self.tables.ids)

        async def there() -> bool:
            return (
                floor_count(self.floor) == journal_total(self.tables)
                and private_count(self.floor) == privates
            )

        try:
            await wait_until(there, FLOOR_TIMEOUT_S, what)
        except AssertionError as error:
            raise AssertionError(
                f"{error}: {floor_count(self.floor)} of {journal_total(self.tables)} entries; "
                f"problems {floor_problems(self.floor, self.tables)[:5]}"
            ) from None

    async def hub_stream_messages(self) -> int:
        admin = await self.floor.connect_admin()
        try:
            info = await admin.jetstream().stream_info(STREAM_NAME)
        finally:
            await admin.close()
        return info.state.messages

    async def close(self) -> None:
        self.stop.set()
        await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), 30)


def _leaf_floor(tmp_path: Path, make_floor: MakeFloor) -> LeafFloor:
    floor = make_floor(HUB_TABLES, sites=[SITE], nodes=3, ack_wait_s=2)
    site = EmbeddedSite(tmp_path / "site", floor, SITE, SITE_TABLES)
    site.start()
    return LeafFloor(floor, site, Tables(tmp_path / "tables", HUB_TABLES + SITE_TABLES))


def test_a_sites_tables_reach_a_cluster_hub_through_their_leaf(tmp_path: Path, make_floor: MakeFloor) -> None:
    running = _leaf_floor(tmp_path, make_floor)
    floor, site = running.floor, running.site
    assert floor.cluster is not None

    async def scenario() -> None:
        admin = await floor.connect_admin()
        info = await admin.jetstream().stream_info(STREAM_NAME)
        await admin.close()
        assert info.config.num_replicas == 3
        assert [s.name for s in info.config.sources or []] == [site_stream_name(SITE)]
        running.start()
        running.play(2)
        await running.everything_on_floor("every table's rounds on the floor through the cluster hub")
        assert await running.hub_stream_messages() == _messages(running.tables, running.tables.ids)
        await running.close()

    try:
        asyncio.run(scenario())
    finally:
        site.stop()
    # The site's leaf server was given every hub node's leaf URL; every node listens for it.
    site_conf = (tmp_path / "site" / "nats" / "nats.conf").read_text()
    for url in floor.leaf_urls:
        assert url.removeprefix("tls://") in site_conf
    for node in floor.cluster.nodes:
        assert 'domain: "hub"' in node.config_path.read_text()
        assert node.leaf_listen is not None
    assert floor_problems(floor, running.tables) == []
    running.tables.close()


async def _stream_leader(floor: EmbeddedFloor) -> str | None:
    admin = await floor.connect_admin()
    try:
        info = await admin.jetstream().stream_info(STREAM_NAME)
    finally:
        await admin.close()
    return info.cluster.leader if info.cluster is not None else None


async def _lead_the_stream(floor: EmbeddedFloor, node: str, *, there: bool) -> None:
    """Move the hub stream's leadership onto ``node`` (``there``) or off it: a leader step-down with a
    preferred server (nats-server 2.11+), asked again until it holds (bounded)."""
    assert floor.cluster is not None
    names = [n.server_name for n in floor.cluster.nodes]
    preferred = node if there else next(n for n in names if n != node)

    async def placed() -> bool:
        leader = await _stream_leader(floor)
        if (leader == node) == there and leader is not None:
            return True
        admin = await floor.connect_admin()
        try:
            body = json.dumps({"placement": {"preferred": preferred}}).encode()
            await admin.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{STREAM_NAME}", body, timeout=10)
        finally:
            await admin.close()
        return False

    await wait_until(placed, LEAF_TIMEOUT_S, f"the stream's leader {'on' if there else 'off'} {node}")


@pytest.mark.parametrize(
    "leading", [False, True], ids=["another_node_leads_the_stream", "it_leads_the_stream"]
)
def test_the_hub_node_a_leaf_is_connected_to_killed_mid_stream(
    tmp_path: Path, make_floor: MakeFloor, leading: bool
) -> None:
    """The node the site's leaf server is connected to is SIGKILLed while the tables play; in the
    second case that node leads the hub's stream too, so the stream's new leader sources the site
    afresh while the leaf is dialling another node."""
    running = _leaf_floor(tmp_path, make_floor)
    floor, site = running.floor, running.site
    assert floor.cluster is not None
    cluster = floor.cluster
    timings: dict[str, float] = {}

    async def scenario() -> None:
        running.start()
        running.play(1)
        await running.everything_on_floor("every table's first round on the floor")
        connected = site.hub_node()
        assert connected is not None
        victim = cluster.nodes[connected].server_name
        assert victim is not None
        await _lead_the_stream(floor, victim, there=leading)
        # The tables play on from a thread while the kill lands: on the floor's own count, a part of
        # what they play is committed and the rest is still in the site's stream, the sourcing or the
        # uplinks (mid-stream whatever the machine's load).
        loop = asyncio.get_running_loop()
        before = floor_count(floor)
        playing = asyncio.create_task(asyncio.to_thread(_play_from_thread, running, 3, loop))

        async def moving() -> bool:
            return floor_count(floor) > before + 50

        await wait_until(moving, FLOOR_TIMEOUT_S, "the floor committing the tables' new rounds")
        cluster.kill(connected)
        killed = time.monotonic()
        assert floor_count(floor) < journal_total(running.tables) or not playing.done()

        async def leaf_elsewhere() -> bool:
            node = await asyncio.to_thread(site.hub_node)
            return node is not None and node != connected

        await wait_until(leaf_elsewhere, LEAF_TIMEOUT_S, "the site's leaf connected to another hub node")
        timings["kill -> leaf on another node s"] = round(time.monotonic() - killed, 1)
        await playing
        running.play(1)  # and a round after the kill, published with the node still down
        await running.everything_on_floor("every entry on the floor with the leaf's node killed")
        timings["kill -> floor complete s"] = round(time.monotonic() - killed, 1)
        assert await running.hub_stream_messages() == _messages(running.tables, running.tables.ids)
        assert await _stream_leader(floor) != victim
        await running.close()

    try:
        asyncio.run(scenario())
    finally:
        site.stop()
    print(
        f"leaf on a cluster hub (its node led the stream: {leading}):",
        timings,
        "entries",
        journal_total(running.tables),
    )
    assert floor_problems(floor, running.tables) == []
    running.tables.close()


def _play_from_thread(running: LeafFloor, rounds: int, loop: asyncio.AbstractEventLoop) -> None:
    """Each table plays ``rounds``, one at a time; its uplink told on its own loop (an asyncio.Event
    is set on its own loop only: tests/test_waits.py)."""
    for _ in range(rounds):
        for table_id in running.tables.ids:
            running.tables.play(table_id, 1)
            loop.call_soon_threadsafe(running.uplinks[table_id].notify)


def test_floor_demo_with_a_site_on_a_three_node_hub_prints_the_counts_and_exits_0() -> None:
    """`flushtable floor demo --nodes 3 --site east` as a user runs it (a child process): half the
    tables publish to the site's leaf server, which is given the three hub nodes' leaf URLs."""
    base = Path(tempfile.mkdtemp(prefix="flushtable-floor-site-cluster-demo-"))
    os.chmod(base, 0o755)  # the cluster runs as the postgres user
    try:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        result = subprocess.run(
            [sys.executable, "-m", "controller.cli", "floor", "demo", "--tables", "4", "--rounds", "1",
             "--dir", str(base / "floor"), "--seed", "5", "--site", "east", "--nodes", "3", "--port", "0"],
            capture_output=True, text=True, timeout=240, env=env, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        report = json.loads(result.stdout.strip().splitlines()[-1])
        in_journals = 0
        for path in sorted((base / "floor" / "tables").glob("*.sqlite")):
            with Journal.open_existing(path) as journal:
                last = journal.last_entry()
                assert last is not None
                in_journals += last.seq
        assert report == {
            "tables": 4,
            "entries_in_journals": in_journals,
            "entries_on_floor": in_journals,
            "missing": 0,
            "doubled": 0,
            "chains_verified": 4,
        }
        site_conf = (base / "floor" / "site-east" / "nats" / "nats.conf").read_text()
        for node in ("n1", "n2", "n3"):
            hub_conf = (base / "floor" / "nats" / node / "nats.conf").read_text()
            assert 'domain: "hub"' in hub_conf
            assert '"table-T001"' in hub_conf
            assert '"table-T003"' not in hub_conf
            leaf_listen = hub_conf.split("leafnodes {", 1)[1].split("listen: ", 1)[1].split("\n", 1)[0]
            assert json.loads(leaf_listen) in site_conf  # the site is given every node's leaf URL
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_sites_leaf_server_started_while_its_hub_node_is_down_dials_another(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """Why the site is given every hub node's leaf URL: once connected, a leaf learns the other nodes'
    from the hub (nats-server's gossip), but a leaf server that starts while the node it knows is down
    has only its configuration. Here the site's server is stopped, the hub node it was connected to
    killed, the site's tables play (their uplinks wait for their server), and the site's server started
    again: it dials another node and everything reaches the floor exactly once."""
    running = _leaf_floor(tmp_path, make_floor)
    floor, site = running.floor, running.site
    assert floor.cluster is not None
    assert site.nats is not None
    timings: dict[str, float] = {}

    async def scenario() -> None:
        running.start()
        running.play(1)
        await running.everything_on_floor("every table's first round on the floor")
        connected = site.hub_node()
        assert connected is not None
        await asyncio.to_thread(site.nats.stop)  # type: ignore[union-attr]
        floor.cluster.kill(connected)  # type: ignore[union-attr]
        running.play(1)
        await asyncio.to_thread(site.nats.start)  # type: ignore[union-attr]
        started = time.monotonic()

        async def leaf_elsewhere() -> bool:
            node = await asyncio.to_thread(site.hub_node)
            return node is not None and node != connected

        await wait_until(leaf_elsewhere, LEAF_TIMEOUT_S, "the site's leaf connected to another hub node")
        timings["site start -> leaf on another node s"] = round(time.monotonic() - started, 1)
        await running.everything_on_floor("every entry on the floor after the site's server came back")
        timings["site start -> floor complete s"] = round(time.monotonic() - started, 1)
        assert await running.hub_stream_messages() == _messages(running.tables, running.tables.ids)
        await running.close()

    try:
        asyncio.run(scenario())
    finally:
        site.stop()
    print("leaf server restarted beside a dead hub node:", timings)
    assert floor_problems(floor, running.tables) == []
    running.tables.close()
