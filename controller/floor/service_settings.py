"""The floor service's settings and its status figures (docs/floor.md "The floor service",
docs/configuration.md "[floor]"); controller/floor/service.py runs with them and names them too.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import nats.errors
import psycopg

from controller.locale import DEFAULT_PROPERTY, PropertySettings
from controller.logs import log_nats_error
from controller.uplink.wire import (
    FLOOR_CONSUMER,
    FLOOR_INBOX,
    NATS_MAX_OUTSTANDING_PINGS,
    NATS_PING_INTERVAL_S,
)

__all__ = ["FLOOR_IO_ERRORS", "FloorConfig", "FloorStatus", "floor_nats_options"]

# The floor's own I/O failing (NATS and JetStream, whose errors are nats.errors.Error's, PostgreSQL,
# the network, a timeout, TLS): what its loops retry with their backoff, never a table's fault.
FLOOR_IO_ERRORS: tuple[type[BaseException], ...] = (
    nats.errors.Error,
    psycopg.Error,
    OSError,
    TimeoutError,
    ssl.SSLError,
)


class FloorNatsSettings(Protocol):
    """What a floor process connects to NATS with (the service's FloorConfig, the progressive's config)."""

    @property
    def servers(self) -> tuple[str, ...]: ...
    @property
    def user(self) -> str: ...
    @property
    def password(self) -> str: ...
    @property
    def ca_file(self) -> Path: ...
    @property
    def inbox_prefix(self) -> str: ...


def floor_nats_options(settings: FloorNatsSettings, name: str | None = None) -> dict[str, Any]:
    """The floor's processes' one way to connect to NATS (``nats.connect(**options)``): TLS to the
    floor's CA, their own inbox prefix, no reconnection by the client (each loop reconnects itself,
    with its backoff), a 5 s connect, a ping every second (a silent node noticed within 3-4 s),
    errors in one structured line (controller/logs.py)."""
    options: dict[str, Any] = {
        "servers": list(settings.servers),
        "user": settings.user,
        "password": settings.password,
        "tls": ssl.create_default_context(cafile=str(settings.ca_file)),
        "inbox_prefix": settings.inbox_prefix,
        "allow_reconnect": False,
        "connect_timeout": 5,
        # A silent node (its sockets open) noticed in seconds, not nats-py's minutes (wire.py's why).
        "ping_interval": NATS_PING_INTERVAL_S,
        "max_outstanding_pings": NATS_MAX_OUTSTANDING_PINGS,
        "error_cb": log_nats_error,
    }
    if name is not None:
        options["name"] = name
    return options


@dataclass(frozen=True, slots=True)
class FloorConfig:
    servers: tuple[str, ...]
    user: str
    password: str = field(repr=False)  # repr (logs, test failures) never shows a secret
    ca_file: Path
    dsn: str = field(repr=False)
    inbox_prefix: str = FLOOR_INBOX
    batch_size: int = 2000  # = the consumers' max_ack_pending (stream.py MAX_ACK_PENDING)
    # When the consumer has nothing, a pull request waits this long (taken at its first message): a
    # quiet floor's loop turns this often (the idle sweep's check), and adds nothing to the lag.
    fetch_timeout_s: float = 0.05
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 5.0
    sweep_interval_s: float = 5.0  # when idle, this often: check every table's tail in the stream
    release_poll_interval_s: float = 1.0  # this often: apply releases of quarantined tables (release.py)
    # This often: reconcile each progressive link's in-meter against the tables' journals, a difference
    # raised as a floor alert (controller/floor/progressive_view.py).
    reconcile_interval_s: float = 5.0
    # The property's time zone, gaming day, shifts and currency (docs/configuration.md "[property]";
    # controller/locale.py): the reports', the panel's and the reconciliation's one definition.
    property_settings: PropertySettings = DEFAULT_PROPERTY
    # A seat's win in one round at or above this is a big win for surveillance (controller/floor/
    # surveillance.py): 5,000.00 by default, a figure a surveillance room asks to watch.
    surveillance_big_win_cents: int = 500_000
    surveillance_poll_interval_s: float = 0.5  # this often: publish new surveillance events
    # The durable consumer pulled: ``floor`` for the one-worker floor; a partition's own
    # (controller/floor/workers.py ``partition_consumer``) when the floor runs partitioned workers.
    consumer: str = FLOOR_CONSUMER
    # The floor-wide duties that are no table's (the progressive reconciliation, surveillance events):
    # run by one service only when the floor is partitioned (the holder of partition 0).
    side_duties: bool = True


@dataclass
class FloorStatus:
    batches: int = 0
    entries: int = 0
    privates: int = 0
    duplicates: int = 0
    quarantined: int = 0
    alerts: int = 0
    db_failures: int = 0
    gap_fills: int = 0  # messages read back from the stream that the consumer had skipped
    releases: int = 0  # releases of quarantined tables applied (controller/floor/release.py)
    sweeps: int = 0  # idle sweeps of every table's tail in the stream
    surveillance_events: int = 0  # published (controller/floor/surveillance.py)
    surveillance_error: str = ""  # the publisher's last error (its own: the intake's is last_error)
    last_error: str = ""
