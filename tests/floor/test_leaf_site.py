"""A site whose link to the hub fails (docs/floor.md "Sites"), on real servers on 127.0.0.1: the hub's
nats-server (JetStream domain ``hub``, a TLS leaf listener), the site's nats-server as its leaf node
(domain ``site-east``, TLS to the hub), PostgreSQL, the uplinks and the floor service. No mock.

The site's tables publish to the site's stream on the leaf server; the hub's stream sources it; the
floor service reads the hub. The hub is killed (SIGKILL): the site's tables go on committing and their
uplinks are acked by the site's server, the hub's own table waits; the hub comes back and everything
reaches the floor exactly once per (table, seq), in order, chains verified. Then a resend stored twice
at the site (after the site's de-duplication window) is dropped by the hub's own de-duplication, which
the sourced message's ``Nats-Msg-Id`` carries. Also: the site server's per-table permissions and its
stream's refusal of delete and purge; the hub's own limits on a site's leaf connection (a hostile
site, spoken to the hub's leaf port by hand); `flushtable floor demo --site`; the uplink's
``stream`` key; a hub too old to source a site refused in one line."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nats
import nats.errors
import nats.js.errors
import psycopg
import pytest
from nats.js.api import ExternalStream, StreamSource

from controller.config import ConfigError, load_config
from controller.floor.service import STREAM_SOURCE_HEADER, FloorService, site_of_source
from controller.floor.stream import ensure_stream, stream_config
from controller.journal.store import Journal
from controller.simulation.floor.servers import ServerError, nats_server_version
from controller.simulation.floor.site import EmbeddedSite, site_reachable
from controller.tls import ssl_context
from controller.uplink import wire
from controller.uplink.uplink import Uplink, read_high_water_mark
from controller.uplink.wire import (
    FLOOR_CONSUMER,
    FLOOR_INBOX,
    HUB_DOMAIN,
    SITES_MIN_NATS_VERSION,
    STREAM_NAME,
    site_deliver_prefix,
    site_domain,
    site_reply_prefix,
    site_stream_name,
    stored_subject,
    table_inbox,
    table_subject,
)
from tests.config.test_config import BASE
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import (
    ANSWER_TIMEOUT_S,
    NO_OLD_NATS,
    Tables,
    expected_messages,
    floor_count,
    floor_problems,
    journal_total,
    last_seq,
    old_nats_server,
    private_count,
    wait_until,
)

SITE = "east"
SITE_TABLES = ["E1", "E2", "E3"]
HUB_TABLES = ["H1"]  # a table of the hub's own pit, publishing to the hub directly


def _message_count(tables: Tables, ids: list[str]) -> int:
    """Messages the uplinks send for ``ids``: every entry, and every private part released."""
    total = 0
    for table_id in ids:
        hashes, privates = expected_messages(tables.path(table_id), table_id)
        total += len(hashes) + len(privates)
    return total


def _private_total(tables: Tables) -> int:
    return sum(len(expected_messages(tables.path(t), t)[1]) for t in tables.ids)


def test_site_tables_publish_to_their_leaf_while_the_hub_is_away(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    floor = make_floor(HUB_TABLES, sites=[SITE], ack_wait_s=2)
    assert floor.nats is not None
    site = EmbeddedSite(tmp_path / "site", floor, SITE, SITE_TABLES, duplicate_window_s=1.0)
    site.start()
    tables = Tables(tmp_path / "tables", HUB_TABLES + SITE_TABLES)
    for table_id in tables.ids:
        tables.play(table_id, 1)

    async def everything_on_floor(timeout_s: float, what: str) -> None:
        privates = _private_total(tables)

        async def there() -> bool:
            return floor_count(floor) == journal_total(tables) and private_count(floor) == privates

        try:
            await wait_until(there, timeout_s, what)
        except AssertionError as error:
            raise AssertionError(
                f"{error}: {floor_count(floor)} of {journal_total(tables)} entries; "
                f"problems {floor_problems(floor, tables)[:5]}"
            ) from None

    timings: dict[str, float] = {}

    async def scenario() -> None:
        stop = asyncio.Event()
        uplinks = {
            t: Uplink(site.uplink_config(t, backoff_max_s=1.0), tables.path(t), t) for t in SITE_TABLES
        }
        uplinks |= {
            t: Uplink(floor.uplink_config(t, backoff_max_s=1.0), tables.path(t), t) for t in HUB_TABLES
        }
        tasks = [asyncio.create_task(u.run(stop)) for u in uplinks.values()]
        service = FloorService(floor.floor_config(backoff_max_s=1.0))
        tasks.append(asyncio.create_task(service.run(stop)))
        site_admin = await site.connect_site_admin()
        site_js = site_admin.jetstream()

        # 1. Hub up: the site's entries reach the floor through the leaf and the hub's sourcing.
        await everything_on_floor(60, "the first round of every table on the floor")
        on_floor_before = floor_count(floor)

        # 2. The hub is killed (SIGKILL). The site's tables play on: their uplinks are acked by the
        #    site's own server and move their high-water marks; the hub's table cannot be acked.
        floor.nats.kill()  # type: ignore[union-attr]
        hub_killed = time.monotonic()
        hub_acked_before = uplinks["H1"].status.acked
        for table_id in tables.ids:
            tables.play(table_id, 2)
            uplinks[table_id].notify()

        async def site_acked_locally() -> bool:
            for table_id in SITE_TABLES:
                mark = read_high_water_mark(tables.path(table_id))
                if mark is None or mark.position.entry_seq != last_seq(tables.journals[table_id]):
                    return False
            return True

        await wait_until(site_acked_locally, 30, "the site's uplinks acked by the leaf with the hub away")
        timings["hub killed -> site acked locally s"] = round(time.monotonic() - hub_killed, 1)
        site_info = await site_js.stream_info(site_stream_name(SITE))
        assert site_info.state.messages == _message_count(tables, SITE_TABLES)
        assert uplinks["H1"].status.acked == hub_acked_before
        assert uplinks["H1"].status.acked.entry_seq < last_seq(tables.journals["H1"])
        assert floor_count(floor) == on_floor_before

        # 3. The hub is back: the leaf reconnects, the hub's stream resumes sourcing after the last site
        #    message it holds, the hub's table resumes after its last, and the floor catches up.
        floor.nats.start()  # type: ignore[union-attr]
        hub_back = time.monotonic()
        for uplink in uplinks.values():
            uplink.notify()
        # The hub's first try to source the site, at its start, finds no leaf connection yet and times
        # out (nats-server waits 30 s for a source consumer's creation, then backs off 10 s): measured
        # 42 s here, hence the bound (docs/floor.md "Sites").
        await everything_on_floor(120, "everything on the floor after the hub came back")
        timings["hub back -> floor complete s"] = round(time.monotonic() - hub_back, 1)
        hub_admin = await floor.connect_admin()
        hub_js = hub_admin.jetstream()
        hub_info = await hub_js.stream_info(STREAM_NAME)
        assert hub_info.state.messages == _message_count(tables, tables.ids)  # the stream: once each

        # 4. A resend stored twice at the site: the last message of E1's subject published again with
        #    its id after the site's window (1 s) has passed. The hub drops the sourced copy by its
        #    Nats-Msg-Id (its own window is 2 min); E1's uplink resynchronises after it and goes on.
        subject = table_subject(SITE, "E1")
        last = await site_js.get_last_msg(site_stream_name(SITE), subject)
        assert last.headers is not None
        copy_headers = {k: v for k, v in last.headers.items() if not k.startswith("Nats-Expected-")}

        async def stored_again() -> bool:
            ack = await site_js.publish(subject, last.data or b"", headers=copy_headers)
            return not ack.duplicate

        await wait_until(stored_again, 30, "the site storing the resend once its window passed")
        tables.play("E1", 1)
        uplinks["E1"].notify()
        await everything_on_floor(60, "E1's next round on the floor after the resend")
        site_info = await site_js.stream_info(site_stream_name(SITE))
        assert site_info.state.messages == _message_count(tables, SITE_TABLES) + 1
        hub_info = await hub_js.stream_info(STREAM_NAME)
        assert hub_info.state.messages == _message_count(tables, tables.ids)
        assert hub_info.sources is not None
        assert [s.name for s in hub_info.sources] == [site_stream_name(SITE)]
        assert await site_reachable(hub_admin, SITE, timeout_s=ANSWER_TIMEOUT_S)

        await hub_admin.close()
        await site_admin.close()
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
        assert all(u.status.acked.entry_seq == last_seq(tables.journals[t]) for t, u in uplinks.items())
        assert uplinks["E1"].status.reconnects >= 1  # it resynchronised after the resend

    try:
        asyncio.run(scenario())
    finally:
        site.stop()
    print("leaf site:", timings, "entries", journal_total(tables))
    assert floor_problems(floor, tables) == []
    with psycopg.connect(floor.reporting_dsn) as connection:
        alerts = connection.execute(
            "SELECT table_id, kind FROM floor_alerts WHERE origin = 'floor'"
        ).fetchall()
    assert alerts == []
    tables.close()


def test_floor_demo_with_a_site_prints_the_counts_and_exits_0() -> None:
    """`flushtable floor demo --site east` as a user runs it (a child process): half the tables publish
    to the site's leaf server (the hub has no user for them), and the floor still holds everything."""
    base = Path(tempfile.mkdtemp(prefix="flushtable-floor-site-demo-"))
    os.chmod(base, 0o755)  # the cluster runs as the postgres user
    try:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        result = subprocess.run(
            [sys.executable, "-m", "controller.cli", "floor", "demo", "--tables", "4", "--rounds", "2",
             "--dir", str(base / "floor"), "--seed", "5", "--site", "east", "--port", "0"],
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
        # The site's tables are users of the site's server only, the hub's tables of the hub's only.
        hub_conf = (base / "floor" / "nats" / "nats.conf").read_text()
        site_conf = (base / "floor" / "site-east" / "nats" / "nats.conf").read_text()
        assert '"table-T001"' in hub_conf
        assert '"table-T003"' not in hub_conf
        assert '"table-T003"' in site_conf
        assert '"table-T001"' not in site_conf
        assert 'domain: "site-east"' in site_conf
        assert "remotes" in site_conf
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_site_tables_uplink_names_its_sites_stream(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("a certificate\n")
    uplink = '[uplink]\nservers = ["tls://east-nats:4222"]\nsite = "east"\nuser = "table-E1"\n'
    uplink += 'password = "pw"\nca_file = "ca.pem"\n'

    def load(extra: str) -> str:
        path = tmp_path / "table.toml"
        path.write_text(BASE + uplink + extra)
        config = load_config(path).uplink
        assert config is not None
        return config.stream

    assert load("") == STREAM_NAME
    assert load('stream = "FLUSHTABLE_east"\n') == site_stream_name(SITE)
    with pytest.raises(ConfigError, match=r"uplink\.stream"):
        load('stream = "FLUSH.TABLE"\n')


@pytest.mark.skipif(
    old_nats_server() is None, reason=f"needs a nats-server too old to source a site: {NO_OLD_NATS}"
)
def test_a_hub_too_old_to_source_a_site_is_refused_in_one_line(make_floor: MakeFloor) -> None:
    """Debian bookworm's nats-server 2.9.10 stalls sourcing on the tables' expected-sequence header
    (docs/floor.md "Sites"): setting up a site's source on it is refused, naming the versions."""
    # Debian's nats-server 2.9, given explicitly: the floor's own default is 2.10 or later.
    old_nats = old_nats_server()
    assert old_nats is not None  # the skipif above
    assert (nats_server_version(old_nats) or (0, 0, 0))[:2] < SITES_MIN_NATS_VERSION
    floor = make_floor(["H1"], nats_binary=old_nats)

    async def scenario() -> None:
        admin = await floor.connect_admin()
        try:
            with pytest.raises(ServerError, match=r"sourcing a site's stream needs 2\.11 or later"):
                await ensure_stream(admin, sites=[SITE])
            info = await admin.jetstream().stream_info(STREAM_NAME)
            assert not info.config.sources
        finally:
            await admin.close()

    asyncio.run(scenario())


def test_a_site_keeps_the_hubs_protections(tmp_path: Path, make_floor: MakeFloor) -> None:
    """On the site's server: a table's credentials publish its own subject only, the site's stream
    refuses deletes and purges (to the site's admin too), and a site table has no user on the hub."""
    floor = make_floor(HUB_TABLES, sites=[SITE])
    site = EmbeddedSite(tmp_path / "site", floor, SITE, SITE_TABLES)
    site.start()
    assert site.nats is not None
    assert floor.tls is not None
    tls = ssl_context(floor.tls.ca_cert)

    async def scenario() -> None:
        errors: list[str] = []

        async def on_error(error: Exception) -> None:
            errors.append(str(error))

        e1 = await nats.connect(
            servers=[site.nats.url],  # type: ignore[union-attr]
            user="table-E1",
            password=site.passwords["nats:table:E1"],
            tls=tls,
            inbox_prefix=table_inbox("E1"),
            allow_reconnect=False,
            error_cb=on_error,
        )
        js = e1.jetstream(timeout=1.0)  # for the refusal: no answer comes
        ack = await e1.jetstream(timeout=ANSWER_TIMEOUT_S).publish(
            table_subject(SITE, "E1"), b"{}", headers={wire.MSG_ID: "E1:x"}
        )
        assert ack.stream == site_stream_name(SITE)
        with pytest.raises((nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError)):
            await js.publish(table_subject(SITE, "E2"), b"{}")

        async def violation_reported() -> bool:
            return any("permissions violation" in e.lower() for e in errors)

        await wait_until(violation_reported, 30, "the site server's permissions violation")
        await e1.close()
        # The site table's credentials are the site server's only: the hub refuses them.
        with pytest.raises((nats.errors.Error, OSError)):
            await nats.connect(
                servers=[floor.nats.url],  # type: ignore[union-attr]
                user="table-E1",
                password=site.passwords["nats:table:E1"],
                tls=tls,
                allow_reconnect=False,
                max_reconnect_attempts=0,
                connect_timeout=2,
            )
        site_admin = await site.connect_site_admin()
        site_js = site_admin.jetstream(timeout=ANSWER_TIMEOUT_S)
        with pytest.raises(nats.js.errors.APIError):
            await site_js.delete_msg(site_stream_name(SITE), 1)
        with pytest.raises(nats.js.errors.APIError):
            await site_js.purge_stream(site_stream_name(SITE))
        assert (await site_js.stream_info(site_stream_name(SITE))).state.messages == 1
        await site_admin.close()
        # The one message reached the hub's stream by sourcing, with its id.
        hub_admin = await floor.connect_admin()
        hub_js = hub_admin.jetstream(timeout=ANSWER_TIMEOUT_S)

        async def sourced() -> bool:
            return (await hub_js.stream_info(STREAM_NAME)).state.messages == 1

        await wait_until(sourced, 60, "the site's message sourced by the hub")
        copy = await hub_js.get_last_msg(STREAM_NAME, stored_subject(SITE, "E1"))
        assert copy.headers is not None
        assert copy.headers[wire.MSG_ID] == "E1:x"
        # The hub marks what it sourced with the site's stream: the floor service refuses a sourced
        # message whose subject is not the site's own (service.site_of_source).
        print("Nats-Stream-Source:", copy.headers.get(STREAM_SOURCE_HEADER))
        assert site_of_source(copy.headers) == SITE
        await hub_admin.close()

    try:
        asyncio.run(scenario())
    finally:
        site.stop()


class _RawLeaf:
    """A leaf connection to the hub spoken by hand (nats-server's leaf protocol: INFO in the clear,
    then TLS, CONNECT, PING/PONG, ``LMSG subject [reply] size``), with the site's own leaf
    credentials: a site machine that sends whatever it likes, none of a real leaf server's own
    filtering (the permissions the hub tells it, the site config's ``deny``) in the way. What it
    can still do is what the hub itself enforces."""

    def __init__(self, port: int, user: str, password: str, ca_file: Path) -> None:
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        self._buffer = b""
        self.seen: list[bytes] = []  # every line the hub sent
        self._socket: socket.socket = raw
        assert self.line().startswith(b"INFO ")
        context = ssl.create_default_context(cafile=str(ca_file))
        self._socket = context.wrap_socket(raw, server_hostname="127.0.0.1")
        connect = {"user": user, "pass": password, "tls_required": True, "name": "hostile-east"}
        self._socket.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        self.wait_for(b"PONG")

    def line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            chunk = self._socket.recv(65536)
            if not chunk:
                raise ConnectionError(f"closed by the hub; last: {self._buffer!r}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\r\n")
        self.seen.append(line)
        return line

    def wait_for(self, prefix: bytes) -> bytes:
        """The first line starting with ``prefix``, seen already or next (answering the hub's PINGs
        meanwhile)."""
        for line in self.seen:
            if line.startswith(prefix):
                self.seen.remove(line)
                return line
        while True:
            line = self.line()
            if line.startswith(prefix):
                self.seen.remove(line)
                return line
            if line == b"PING":
                self._socket.sendall(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise ConnectionError(line.decode())

    def publish(self, subject: str, payload: bytes, reply: str = "") -> None:
        head = f"LMSG {subject} {reply + ' ' if reply else ''}{len(payload)}\r\n".encode()
        self._socket.sendall(head + payload + b"\r\n")

    def subscribe(self, subject: str) -> None:
        self._socket.sendall(f"LS+ {subject}\r\n".encode())

    def ping(self) -> None:
        """Everything sent before has been processed by the hub (or refused: ConnectionError)."""
        self._socket.sendall(b"PING\r\n")
        self.wait_for(b"PONG")

    def close(self) -> None:
        self._socket.close()


def test_a_hostile_site_reaches_nothing_on_the_hub_but_its_own_sourcing(make_floor: MakeFloor) -> None:
    """A leaf connection with the site's credentials and no site-side deny (a raw leaf-protocol client
    on the hub's leaf port; no real leaf server, whose own filtering would hide the hub's): it may
    deliver on its sourcing prefix (it arrives) and receive the hub's requests to its API, but not the
    floor's deliveries though it subscribes to everything; a forged entry on a hub table's journal subject,
    a delete of the floor's stream or consumer through ``$JS.hub.API`` or ``$JS.API``, and a message
    into the floor's inbox are each refused by the hub (a permissions violation, the connection cut)
    and change nothing: the hub's stream holds no entry for the table, the stream and the floor's
    consumer still exist."""
    floor = make_floor(HUB_TABLES, sites=[SITE])
    assert floor.nats is not None
    assert floor.nats.leaf_listen is not None
    assert floor.tls is not None
    leaf_port = floor.nats.leaf_listen.port
    credentials = (f"leaf-{SITE}", floor.leaf_password(SITE), floor.tls.ca_cert)
    forged_subject = table_subject(floor.site, "H1")
    attacks = [
        (forged_subject, ""),
        (f"$JS.{HUB_DOMAIN}.API.STREAM.DELETE.{STREAM_NAME}", f"{site_reply_prefix(SITE)}.1"),
        (f"$JS.{HUB_DOMAIN}.API.CONSUMER.DELETE.{STREAM_NAME}.{FLOOR_CONSUMER}", ""),
        (f"$JS.API.STREAM.DELETE.{STREAM_NAME}", ""),
        (f"{FLOOR_INBOX}.1", ""),
    ]

    async def scenario() -> None:
        hub_admin = await floor.connect_admin()
        hub_js = hub_admin.jetstream(timeout=ANSWER_TIMEOUT_S)
        # Control: what the site may do arrives (the connection is real and authenticated).
        delivered = await hub_admin.subscribe(f"{site_deliver_prefix(SITE)}.>")
        await hub_admin.flush()
        leaf = _RawLeaf(leaf_port, *credentials)

        def deliver() -> None:
            # The hub tells the leaf its interest (LS+) before the message can be routed to it.
            leaf.wait_for(f"LS+ {site_deliver_prefix(SITE)}.>".encode())
            leaf.publish(f"{site_deliver_prefix(SITE)}.probe", b"ok")
            leaf.ping()

        try:
            await asyncio.to_thread(deliver)
        except TimeoutError:
            raise AssertionError(leaf.seen) from None
        assert (await delivered.next_msg(timeout=ANSWER_TIMEOUT_S)).data == b"ok"
        # Reading: the site asks for everything; the hub sends it only what it may receive. The floor's
        # deliveries (its inbox) do not come; a request to the site's API, published after them, does.
        leaf.subscribe(">")
        await asyncio.to_thread(leaf.ping)
        await hub_admin.publish(f"{FLOOR_INBOX}.1", b"a delivery to the floor")
        await hub_admin.publish(f"$JS.{site_domain(SITE)}.API.INFO", b"")
        await hub_admin.flush()
        seen = await asyncio.to_thread(leaf.wait_for, b"LMSG ")
        assert seen.startswith(f"LMSG $JS.{site_domain(SITE)}.API.INFO".encode()), seen
        assert not [line for line in leaf.seen if line.startswith(b"LMSG ")], leaf.seen
        leaf.close()
        for subject, reply in attacks:
            leaf = _RawLeaf(leaf_port, *credentials)

            def attack(leaf: _RawLeaf = leaf, subject: str = subject, reply: str = reply) -> str:
                leaf.publish(subject, b'{"forged": true}', reply)
                try:
                    leaf.ping()
                except ConnectionError as refused:
                    return str(refused)
                return "accepted"

            answer = await asyncio.to_thread(attack)
            leaf.close()
            assert "Permissions Violation for Publish" in answer, (subject, answer)
        assert (await hub_js.stream_info(STREAM_NAME)).config.name == STREAM_NAME
        assert (await hub_js.consumer_info(STREAM_NAME, FLOOR_CONSUMER)).name == FLOOR_CONSUMER
        with pytest.raises(nats.js.errors.NotFoundError):
            await hub_js.get_last_msg(STREAM_NAME, forged_subject)
        await hub_admin.close()

    asyncio.run(scenario())


def test_a_hub_set_up_before_the_sites_delivery_prefix_is_moved_to_it(make_floor: MakeFloor) -> None:
    """A hub stream sourcing a site with nats-server's default delivery subject (as before the hub
    limited its leaf users) is rewritten by ``ensure_stream`` to the site's own prefix, the one the
    site's leaf connection may publish to; the source is kept, not dropped and added again."""
    floor = make_floor(HUB_TABLES, sites=[SITE])

    async def scenario() -> None:
        hub_admin = await floor.connect_admin()
        js = hub_admin.jetstream(timeout=ANSWER_TIMEOUT_S)
        old = StreamSource(
            name=site_stream_name(SITE), external=ExternalStream(api=f"$JS.{site_domain(SITE)}.API")
        )
        await js.update_stream(stream_config(sources=[old]))
        before = (await js.stream_info(STREAM_NAME)).config.sources or []
        assert [(s.name, s.external.deliver if s.external else None) for s in before] == [
            (site_stream_name(SITE), "")  # nats-server's default: $JS.S.<random>
        ]
        await ensure_stream(hub_admin, sites=[SITE])
        after = (await js.stream_info(STREAM_NAME)).config.sources or []
        assert [(s.name, s.external.deliver if s.external else None) for s in after] == [
            (site_stream_name(SITE), site_deliver_prefix(SITE))
        ]
        await hub_admin.close()

    asyncio.run(scenario())
