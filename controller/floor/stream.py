"""The floor's JetStream stream and its durable consumer, set up by the floor's admin user.

The stream keeps every table's subject, on disk, refuses message deletes and purges (``deny_delete``,
``deny_purge``), de-duplicates by ``Nats-Msg-Id`` within ``duplicate_window_s`` and answers direct gets
(the uplinks ask it for their subject's last message). The consumer ``floor`` is durable, pulls, and
needs each message acked (``AckPolicy.EXPLICIT``: an ack never covers a message the floor did not
hold, so a message skipped after a crash comes back); the floor acks only after its PostgreSQL commit.

A **site** (a card room whose link to the hub can fail) keeps a stream of its own on its leaf server,
``FLUSHTABLE_<site>`` in the site's JetStream domain, with the same protections; its tables publish
there. The hub's stream **sources** each site's stream across the leaf connection (``external.api`` =
``$JS.<site domain>.API``), so the floor service reads one stream on the hub (docs/floor.md "Sites").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import nats.js.errors
from nats.aio.client import Client
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    ExternalStream,
    RetentionPolicy,
    StorageType,
    StreamConfig,
    StreamSource,
    SubjectTransform,
)
from nats.js.client import JetStreamContext

from controller.errors import ServerError
from controller.uplink.wire import (
    FLOOR_CONSUMER,
    SITES_MIN_NATS_VERSION,
    STREAM_NAME,
    SUBJECT_ROOT,
    TABLE_JOURNAL_SOURCE,
    partition_transform_destination,
    site_deliver_prefix,
    site_domain,
    site_stream_name,
)

DEFAULT_DUPLICATE_WINDOW_S = 120.0
ACK_WAIT_S = 30.0
MAX_ACK_PENDING = 2000  # = FloorConfig.batch_size (docs/floor.md "Twelfth stop: the batch of 2,000")


def stream_config(
    duplicate_window_s: float = DEFAULT_DUPLICATE_WINDOW_S,
    *,
    sources: list[StreamSource] | None = None,
    replicas: int = 1,
    partition_tokens: bool = True,
) -> StreamConfig:
    """The hub's stream; ``sources``: its sites' streams (``site_source``); ``replicas``: 3 on a
    three-node cluster (controller/simulation/floor/cluster.py: every message on two nodes before it
    is acked). ``partition_tokens``: the subject transform that stores each table's journal with its
    partition tokens (wire.stored_subject), so that each partition consumer filters one wildcard; off
    only for a stream made before it that already holds tables' messages (``ensure_stream``)."""
    config = _protected_stream(STREAM_NAME, f"{SUBJECT_ROOT}.>", duplicate_window_s, sources, replicas)
    if partition_tokens:
        config.subject_transform = SubjectTransform(
            src=TABLE_JOURNAL_SOURCE, dest=partition_transform_destination()
        )
    return config


def has_partition_tokens(config: StreamConfig) -> bool:
    """Whether the stream stores the tables' journals with their partition tokens."""
    transform = config.subject_transform
    return transform is not None and transform.dest == partition_transform_destination()


def surveillance_stream_config(
    duplicate_window_s: float = DEFAULT_DUPLICATE_WINDOW_S, *, replicas: int = 1
) -> StreamConfig:
    """Where the floor service publishes surveillance events (controller/floor/surveillance.py): the
    same protections (no delete, no purge), and the de-duplication window keeps each event id once."""
    from controller.floor.surveillance import STREAM, SUBJECT_PREFIX  # noqa: PLC0415

    return _protected_stream(STREAM, f"{SUBJECT_PREFIX}.>", duplicate_window_s, None, replicas)


def site_stream_config(site: str, duplicate_window_s: float = DEFAULT_DUPLICATE_WINDOW_S) -> StreamConfig:
    """A site's stream on its leaf server: its own tables' subjects only, the hub's protections."""
    return _protected_stream(site_stream_name(site), f"{SUBJECT_ROOT}.{site}.>", duplicate_window_s, None)


def site_source(site: str) -> StreamSource:
    """The hub's stream sources a site's stream through the site's JetStream API across the leaf
    connection. Sourced messages keep their subject and headers (``Nats-Msg-Id`` among them: the
    hub de-duplicates a resend within its own window; the floor's (table, seq) key is the final guard)."""
    return StreamSource(
        name=site_stream_name(site),
        external=ExternalStream(
            api=f"$JS.{site_domain(site)}.API",
            # Deliveries on the site's own prefix: its leaf connection may publish there only
            # (servers.leaf_user), never on a sibling site's sourcing.
            deliver=site_deliver_prefix(site),
        ),
    )


def _protected_stream(
    name: str, subjects: str, duplicate_window_s: float, sources: list[StreamSource] | None, replicas: int = 1
) -> StreamConfig:
    return StreamConfig(
        name=name,
        subjects=[subjects],
        sources=sources or None,
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        discard=DiscardPolicy.NEW,  # never drop the oldest: a full stream refuses, the uplink retries
        duplicate_window=duplicate_window_s,
        deny_delete=True,
        deny_purge=True,
        allow_direct=True,
        num_replicas=replicas,
    )


async def ensure_stream(
    admin: Client,
    *,
    duplicate_window_s: float = DEFAULT_DUPLICATE_WINDOW_S,
    ack_wait_s: float = ACK_WAIT_S,
    max_ack_pending: int = MAX_ACK_PENDING,
    sites: Sequence[str] = (),
    replicas: int = 1,
) -> None:
    """Create or update the stream, and create the floor's consumer when missing (an existing one with
    another ``max_ack_pending`` is updated to it). ``max_ack_pending`` is the floor's batch size: after a
    crash, nothing newer is delivered before the unacked batch.
    ``sites``: sites whose streams the hub's stream sources (added to those it already sources; create
    each site's stream first, ``ensure_site_stream``, so the hub's first try finds it)."""
    js = admin.jetstream()
    wanted = [site_source(site) for site in sites]
    if wanted:
        _check_sourcing(admin)
    try:
        info = await js.stream_info(STREAM_NAME)
    except nats.js.errors.NotFoundError:
        await js.add_stream(stream_config(duplicate_window_s, sources=wanted, replicas=replicas))
    else:
        # A site once added stays: an update never drops a source (its messages would stop coming).
        # A source named again is written as today's ``site_source``: a hub set up before the sites'
        # own delivery prefix would otherwise keep delivering where its leaf users may not publish.
        by_name = {s.name: s for s in wanted}
        kept = [by_name.get(k.name, k) for k in info.config.sources or []]
        kept += [s for s in wanted if s.name not in {k.name for k in kept}]
        # A stream made before the partition tokens is given them only while it holds no message: once
        # a table has published, its next message would be stored on another subject than its last,
        # and the uplink's expected-last-subject-sequence would refuse it (docs/floor.md "Partitioned
        # floor workers": such a floor runs one service; ensure_partitions refuses workers on it).
        tokens = has_partition_tokens(info.config) or not (info.state and info.state.messages)
        await js.update_stream(
            stream_config(duplicate_window_s, sources=kept, replicas=replicas, partition_tokens=tokens)
        )
    try:
        consumer = await js.consumer_info(STREAM_NAME, FLOOR_CONSUMER)
    except nats.js.errors.NotFoundError:
        await js.add_consumer(
            STREAM_NAME,
            ConsumerConfig(
                durable_name=FLOOR_CONSUMER,
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.EXPLICIT,  # each message acked after its batch's commit
                ack_wait=ack_wait_s,
                max_ack_pending=max_ack_pending,
                filter_subject=f"{SUBJECT_ROOT}.>",
                max_deliver=-1,
            ),
        )
    else:
        await update_consumer_in_place(js, consumer.config, max_ack_pending=max_ack_pending)
    surveillance = surveillance_stream_config(duplicate_window_s, replicas=replicas)
    try:
        await js.stream_info(surveillance.name or "")
    except nats.js.errors.NotFoundError:
        await js.add_stream(surveillance)


async def update_consumer_in_place(
    js: JetStreamContext, config: ConsumerConfig, *, max_ack_pending: int, ack_wait_s: float | None = None
) -> None:
    """An existing durable consumer given ``max_ack_pending``, and ``ack_wait_s`` when one is given,
    where its ``config`` holds another: one made with another batch size (1000 before the twelfth stop:
    it must stay equal to the floor's batch), or a partition's made before its ack_wait was derived
    (30 s). The same durable created again with a changed setting is JetStream's consumer update
    (nats-server 2.9 accepts both; its delivered and ack state stay)."""
    updated = config
    if ack_wait_s is not None and (config.ack_wait is None or abs(config.ack_wait - ack_wait_s) > 1e-3):
        updated = dataclasses.replace(updated, ack_wait=ack_wait_s)
    if config.max_ack_pending != max_ack_pending:
        updated = dataclasses.replace(updated, max_ack_pending=max_ack_pending)
    if updated is not config:
        await js.add_consumer(STREAM_NAME, updated)


def _check_sourcing(admin: Client) -> None:
    """Refuse to source sites from a hub too old to do it right (wire.py SITES_MIN_NATS_VERSION)."""
    version = admin.connected_server_version
    if (version.major, version.minor) < SITES_MIN_NATS_VERSION:
        wanted = ".".join(map(str, SITES_MIN_NATS_VERSION))
        raise ServerError(
            f"the hub's nats-server is {version.major}.{version.minor}.{version.patch}: sourcing a site's "
            f"stream needs {wanted} or later (older ones stall on the tables' expected-sequence header)"
        )


async def ensure_site_stream(
    site_admin: Client, site: str, *, duplicate_window_s: float = DEFAULT_DUPLICATE_WINDOW_S
) -> None:
    """Create or update a site's stream on its leaf server (connected as the site's admin)."""
    js = site_admin.jetstream()
    config = site_stream_config(site, duplicate_window_s)
    try:
        await js.stream_info(config.name or "")
    except nats.js.errors.NotFoundError:
        await js.add_stream(config)
    else:
        await js.update_stream(config)
