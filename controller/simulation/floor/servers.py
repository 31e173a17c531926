"""The floor's two servers as child processes: a NATS server with JetStream and TLS, and a PostgreSQL
cluster, each under a directory of its own on 127.0.0.1 (docs/floor.md "Operations").

Used by `flushtable floor demo` and by the tests' fixtures, so both start the servers the same way. A
site runs its own nats-server and PostgreSQL under systemd; nothing here is needed there but the
configuration text (``nats_config_text``) and the certificate recipe (``make_ca``), which the docs show.

Every wait is bounded: a server that is not up in ``start_timeout_s`` is stopped and reported in one
line (its log's last lines attached), never waited for forever.

The code lives in four modules beside this one (certificates.py, nats_server.py, postgres.py,
processes.py); this one names it all in one place for the harness's users (the tests' fixtures, the
benches). The wire's names (subjects, the stream, the inboxes) are the wire contract's own: its users
import them from controller/uplink/wire.py, as the table and the floor do.
"""

from __future__ import annotations

from controller.errors import ServerError
from controller.simulation.floor.certificates import TlsFiles, make_ca
from controller.simulation.floor.nats_server import (
    NATS_SERVER,
    NATS_SERVER_ENV,
    ClusterRoutes,
    HubRemote,
    LeafListen,
    NatsServer,
    NatsUser,
    admin_user,
    cluster_tls,
    floor_reader_user,
    leaf_user,
    nats_config_text,
    nats_server_binary,
    nats_server_version,
    progressive_user,
    site_admin_user,
    surveillance_user,
    table_user,
)
from controller.simulation.floor.postgres import POSTGRES_USER, PostgresCluster, postgres_bindir
from controller.simulation.floor.processes import free_port

__all__ = [
    "NATS_SERVER",
    "NATS_SERVER_ENV",
    "POSTGRES_USER",
    "ClusterRoutes",
    "HubRemote",
    "LeafListen",
    "NatsServer",
    "NatsUser",
    "PostgresCluster",
    "ServerError",
    "TlsFiles",
    "admin_user",
    "cluster_tls",
    "floor_reader_user",
    "free_port",
    "leaf_user",
    "make_ca",
    "nats_config_text",
    "nats_server_binary",
    "nats_server_version",
    "postgres_bindir",
    "progressive_user",
    "site_admin_user",
    "surveillance_user",
    "table_user",
]
