"""What the floor reads of one message from the stream before its checks (docs/floor.md "The floor
service"): the message itself (``Incoming``), its subject's table and site, the site its stream copy
was sourced from, and its body decoded or None.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import msgspec

from controller.uplink import wire
from controller.uplink.wire import STREAM_NAME, SUBJECT_ROOT, partition_tokens

__all__ = [
    "STREAM_SOURCE_HEADER",
    "Incoming",
    "by_stream_seq",
    "decoded_or_none",
    "site_of_source",
    "site_of_subject",
    "subject_parts",
    "table_of_subject",
]


class Incoming(msgspec.Struct, frozen=True):
    """A message from the stream: from the consumer (then it is the intake's ``Delivery``, which adds its
    ack subject), or read back from the stream to fill a gap. A msgspec struct, built in C: one is built
    for every message (a frozen dataclass's per-field ``object.__setattr__`` was a measurable share of a
    message's CPU), and only one (a second, copied from the delivery, was 2% of the service's CPU)."""

    stream_seq: int
    subject: str
    headers: Mapping[str, str]
    data: bytes


def by_stream_seq(incoming: Incoming) -> int:
    return incoming.stream_seq


def site_of_subject(subject: str) -> str | None:
    return subject.split(".")[1] if table_of_subject(subject) is not None else None


STREAM_SOURCE_HEADER = "Nats-Stream-Source"


def site_of_source(headers: Mapping[str, str]) -> str | None:
    """The site whose stream a message was sourced from, from the header the hub's stream sets on what
    it sources (its value begins with the source stream's name, then ``:`` and a hash of the external
    API for a stream in another domain, then the sequence there ...). None: not sourced (published on
    the hub itself); "": sourced from a stream that is no site's."""
    value = headers.get(STREAM_SOURCE_HEADER)
    if not value:
        return None
    name = value.split(" ", 1)[0].split(":", 1)[0]
    prefix = f"{STREAM_NAME}_"
    return name.removeprefix(prefix) if name.startswith(prefix) else ""


def decoded_or_none(body: bytes) -> wire.EntryMessage | wire.PrivateMessage | None:
    """A message's body decoded, or None when it is not an uplink's (the reads quarantine those)."""
    try:
        return wire.decode(body)
    except (wire.BadMessage, *wire.UNFORESEEN_ERRORS):
        return None


@functools.lru_cache(maxsize=65_536)
def subject_parts(subject: str) -> tuple[str | None, str | None]:
    """(table, site) of a subject, remembered: a floor's subjects are its tables', one each, and every
    message of a table names the same one."""
    return table_of_subject(subject), site_of_subject(subject)


def table_of_subject(subject: str) -> str | None:
    """The table of a journal subject as published (four tokens) or as a stream with partition tokens
    stores it (those four, then the tokens nats-server computed: only the table's own are accepted)."""
    parts = subject.split(".", 4)
    if len(parts) < 4 or parts[0] != SUBJECT_ROOT or parts[3] != "journal":
        return None
    if len(parts) == 4 or parts[4] == partition_tokens(parts[2]):
        return parts[2]
    return None
