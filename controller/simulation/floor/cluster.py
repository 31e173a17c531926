"""A three-node JetStream cluster on loopback (docs/floor.md "A JetStream cluster"): the fixtures' and
`flushtable floor demo --nodes 3`'s, each node a ``NatsServer`` with the same TLS, users and permissions
as the one-server floor, routed to the others over TLS (the floor's CA, a route user of its own).

A hub with sites (docs/floor.md "Deploying the floor"): every node has the hub's JetStream domain and
a leaf listener of its own with the sites' leaf users, so a site's leaf server, given every node's leaf
URL, connects to any node and, when that node is lost, to another.

The floor's stream is then R3 (controller/floor/stream.py ``replicas``): JetStream acknowledges a
message once a majority of its replicas (two of three) hold it, so losing any one node loses no
acknowledged message and stops nothing (the other two elect new leaders for the stream and the floor's
consumer). The tables' uplinks and the floor service are given every node's URL and connect to any.
"""

from __future__ import annotations

import asyncio
import secrets
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path

import nats
import nats.errors
import nats.js.errors

from controller.logs import log_nats_error
from controller.simulation.floor.servers import (
    ClusterRoutes,
    LeafListen,
    NatsServer,
    NatsUser,
    ServerError,
    TlsFiles,
    free_port,
)

__all__ = ["CLUSTER_NAME", "NatsCluster", "wait_jetstream_ready"]

CLUSTER_NAME = "flushtable"
ROUTE_USER = "flushtable-route"


@dataclass
class NatsCluster:
    """``size`` nats-server nodes under ``directory`` (``n1``, ``n2`` ...), routed to each other.
    ``kill(i)`` is SIGKILL of one node (the tests' crash); ``start_node(i)`` brings it back on its own
    store and ports, and it catches up from the others."""

    directory: Path
    tls: TlsFiles
    users: list[NatsUser]
    size: int = 3
    nodes: list[NatsServer] = field(default_factory=list)
    route_password: str = field(default_factory=lambda: secrets.token_urlsafe(18), repr=False)
    # A hub with sites: its JetStream domain on every node, and the sites' leaf users (servers.leaf_user),
    # each node then listening for leaf connections on a port of its own.
    domain: str | None = None
    leaf_users: tuple[NatsUser, ...] = ()
    binary: str = ""  # the nats-server to run; empty: servers.nats_server_binary() at start

    def __post_init__(self) -> None:
        if self.size < 3:
            raise ServerError("a JetStream cluster needs three nodes or more (a majority survives one loss)")
        # Distinct ports: free_port() closes its socket, so two calls can name the same port (seen here:
        # a node's route listener on another node's client port, "address already in use").
        # client, route and monitoring (each node's /routez: which peers it routes to); a hub with
        # sites, leaf too
        listeners = 4 if self.leaf_users else 3
        ports: list[int] = []
        for _ in range(100 * self.size):  # bounded; a repeat is rare
            port = free_port()
            if port not in ports:
                ports.append(port)
            if len(ports) == listeners * self.size:
                break
        else:
            raise ServerError("no distinct free ports for the cluster's nodes on 127.0.0.1")
        client_ports, route_ports = ports[: self.size], ports[self.size : 2 * self.size]
        monitor_ports, leaf_ports = ports[2 * self.size : 3 * self.size], ports[3 * self.size :]
        for index in range(self.size):
            routes = ClusterRoutes(
                name=CLUSTER_NAME,
                port=route_ports[index],
                routes=tuple(p for i, p in enumerate(route_ports) if i != index),
                user=ROUTE_USER,
                password=self.route_password,
            )
            self.nodes.append(
                NatsServer(
                    self.directory / f"n{index + 1}",
                    client_ports[index],
                    self.tls,
                    self.users,
                    server_name=f"flushtable-n{index + 1}",
                    cluster=routes,
                    domain=self.domain,
                    leaf_listen=LeafListen(leaf_ports[index], self.leaf_users) if self.leaf_users else None,
                    binary=self.binary,
                    monitor_port=monitor_ports[index],
                )
            )

    def start(self) -> None:
        for node in self.nodes:
            node.start()

    def start_node(self, index: int) -> None:
        self.nodes[index].start()

    def kill(self, index: int) -> None:
        self.nodes[index].kill()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


async def wait_jetstream_ready(
    servers: tuple[str, ...], user: str, password: str, ca_file: Path, timeout_s: float = 60.0
) -> None:
    """Until the cluster's JetStream answers (its meta leader elected: a few seconds after the nodes
    start), bounded: ServerError after ``timeout_s`` with the last error."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        try:
            client = await nats.connect(
                servers=list(servers),
                user=user,
                password=password,
                tls=ssl.create_default_context(cafile=str(ca_file)),
                allow_reconnect=False,
                connect_timeout=5,
                error_cb=log_nats_error,
            )
        except (nats.errors.Error, OSError, TimeoutError) as error:
            last = f"{type(error).__name__}: {error}"
        else:
            try:
                await client.jetstream().account_info()
                return
            except (nats.errors.Error, nats.js.errors.Error, TimeoutError) as error:
                last = f"{type(error).__name__}: {error}"
            finally:
                await client.close()
        await asyncio.sleep(0.25)  # a poll of the servers' state, bounded by the deadline above
    raise ServerError(f"the JetStream cluster did not answer in {timeout_s} s: {last}")
