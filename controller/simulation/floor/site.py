"""A site of the floor on this machine: a card room whose link to the hub can fail (docs/floor.md
"Sites"). Its own nats-server runs as a **leaf node** of the hub (it dials the hub's leaf listener over
TLS) with JetStream in a domain of its own; the site's tables publish to the site's stream there, and
the hub's stream sources it across the leaf connection, so the floor service reads one stream on the
hub. While the hub is away the site's tables go on publishing and are acked by their site's server;
when it is back, the hub's stream resumes sourcing after the last site message it holds.

A cluster hub (``EmbeddedFloor(..., nodes=3, sites=[...])``): the site's leaf server is given every
node's leaf URL and dials one; when that node is lost it dials another (``reconnect``), and the hub's
R3 stream, whichever node leads it, goes on sourcing the site's stream through it.

The tests start a site with this, beside an ``EmbeddedFloor`` made with ``sites=[...]``. A real site
runs the same configuration text (``nats_config_text`` with ``domain`` and ``hub``) under systemd.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nats
import nats.errors
from nats.aio.client import Client

from controller.config import UplinkConfig
from controller.floor.stream import DEFAULT_DUPLICATE_WINDOW_S, ensure_site_stream, ensure_stream
from controller.logs import log_nats_error
from controller.simulation.floor.embedded import EmbeddedFloor, _run_apart
from controller.simulation.floor.servers import (
    HubRemote,
    NatsServer,
    NatsUser,
    ServerError,
    free_port,
    nats_server_binary,
    site_admin_user,
    table_user,
)
from controller.tls import ssl_context
from controller.uplink.wire import SITES_MIN_NATS_VERSION, site_domain, site_reply_prefix, site_stream_name

LEAF_CONNECT_TIMEOUT_S = 20.0


@dataclass
class EmbeddedSite:
    directory: Path
    floor: EmbeddedFloor  # the hub (started, with this site in its ``sites``)
    site: str
    table_ids: Sequence[str]
    duplicate_window_s: float = DEFAULT_DUPLICATE_WINDOW_S
    passwords: dict[str, str] = field(default_factory=dict)
    nats: NatsServer | None = None

    def _password(self, name: str) -> str:
        if name not in self.passwords:
            self.passwords[name] = secrets.token_urlsafe(18)
        return self.passwords[name]

    @property
    def stream(self) -> str:
        return site_stream_name(self.site)

    def nats_users(self) -> list[NatsUser]:
        users = [site_admin_user(self.site, self._password("nats:site-admin"))]
        users += [
            table_user(self.site, t, self._password(f"nats:table:{t}"), stream=self.stream)
            for t in self.table_ids
        ]
        return users

    def start(self) -> None:
        """Start the leaf server, wait until the hub reaches the site's JetStream through it, create the
        site's stream, and make the hub's stream source it."""
        hub = self.floor.nats
        if hub is None or hub.leaf_listen is None or self.floor.tls is None:
            raise ServerError("start the hub first, with this site in its sites")
        monitor_port = free_port()
        if self.site not in self.floor.sites:
            raise ServerError(f"the hub has no leaf user for site {self.site!r} (EmbeddedFloor sites)")
        tls = self.floor.tls  # the floor CA signs the site's server certificate too (one PKI)
        self.nats = NatsServer(
            self.directory / "nats",
            free_port(),
            tls,
            self.nats_users(),
            server_name=f"flushtable-site-{self.site}",
            domain=site_domain(self.site),
            hub=HubRemote(
                urls=self.floor.leaf_urls,
                user=f"leaf-{self.site}",
                password=self.floor.leaf_password(self.site),
                ca_file=tls.ca_cert,
            ),
            binary=nats_server_binary(SITES_MIN_NATS_VERSION),
            monitor_port=monitor_port,
        )
        self.nats.start()
        _run_apart(self._setup)

    async def _setup(self) -> None:
        site_admin = await self.connect_site_admin()
        try:
            await ensure_site_stream(site_admin, self.site, duplicate_window_s=self.duplicate_window_s)
        finally:
            await site_admin.close()
        # From every hub node: the stream's leader (any node of a cluster hub) asks the site for its
        # sourcing consumer at once, and a first ask that finds no route to the leaf waits nats-server's
        # 30 s and a back-off before the next (docs/floor.md "Sites").
        for url in self.floor.nats_urls:
            node_admin = await self.floor.connect_admin(url)
            try:
                await wait_for_site(node_admin, self.site, LEAF_CONNECT_TIMEOUT_S)
            finally:
                await node_admin.close()
        hub_admin = await self.floor.connect_admin()
        try:
            await ensure_stream(
                hub_admin,
                duplicate_window_s=self.floor.duplicate_window_s,
                ack_wait_s=self.floor.ack_wait_s,
                sites=[self.site],
                replicas=self.floor.replicas,  # R3 on a cluster hub: never scaled down by a site's setup
            )
        finally:
            await hub_admin.close()

    async def connect_site_admin(self) -> Client:
        assert self.nats is not None
        assert self.floor.tls is not None
        return await nats.connect(
            servers=[self.nats.url],
            user=f"site-admin-{self.site}",
            password=self._password("nats:site-admin"),
            tls=ssl_context(self.floor.tls.ca_cert),
            allow_reconnect=False,
            connect_timeout=5,
            error_cb=log_nats_error,
        )

    def uplink_config(self, table_id: str, **overrides: float) -> UplinkConfig:
        """A site table's uplink: its site's leaf server and stream, its own credentials there."""
        assert self.nats is not None
        assert self.floor.tls is not None
        return UplinkConfig(
            servers=(self.nats.url,),
            site=self.site,
            user=f"table-{table_id}",
            password=self._password(f"nats:table:{table_id}"),
            ca_file=self.floor.tls.ca_cert,
            stream=self.stream,
            **overrides,
        )

    def hub_node(self, timeout_s: float = 5.0) -> int | None:
        """The index in the hub's ``leaf_urls`` of the node the site's leaf server is connected to now,
        from the site server's own monitoring (``/leafz``); None while it is connected to none."""
        assert self.nats is not None
        assert self.nats.monitor_port is not None
        url = f"http://127.0.0.1:{self.nats.monitor_port}/leafz"
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            leafz = json.loads(answer.read())
        ports = [int(u.rsplit(":", 1)[1]) for u in self.floor.leaf_urls]
        for leaf in leafz.get("leafs") or []:
            if int(leaf.get("port", 0)) in ports:
                return ports.index(int(leaf["port"]))
        return None

    def stop(self) -> None:
        if self.nats is not None:
            self.nats.stop()


async def site_reachable(hub_client: Client, site: str, timeout_s: float = 0.5) -> bool:
    """Whether the site's JetStream answers from the hub (its leaf connection is up). The answer comes
    on the site's own reply prefix: the site's leaf connection may not publish to the hub's inboxes
    (servers.leaf_user)."""
    reply = f"{site_reply_prefix(site)}.{secrets.token_hex(8)}"
    subscription = await hub_client.subscribe(reply)
    try:
        await hub_client.publish(f"$JS.{site_domain(site)}.API.INFO", b"", reply=reply)
        answer = await subscription.next_msg(timeout=timeout_s)
    except nats.errors.TimeoutError:
        return False
    finally:
        await subscription.unsubscribe()
    # No JetStream behind the subject: the server answers with a header-only "no responders" (503).
    return not (answer.headers and answer.headers.get("Status") == "503")


async def wait_for_site(hub_client: Client, site: str, timeout_s: float) -> None:
    """Until the site's JetStream answers from the hub; a one-line error after ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await site_reachable(hub_client, site):
        if loop.time() > deadline:
            raise ServerError(f"site {site!r}: its leaf server did not reach the hub in {timeout_s} s")
        await asyncio.sleep(0.1)
