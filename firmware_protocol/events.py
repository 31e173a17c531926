"""What a Link says to its caller and the vocabulary its parts share: the events ``Link.next_event()``
returns, the ``Role`` and ``LinkState`` of a link, the ``DeviceIdentity`` a device announces, and the
``LinkStats`` counters. Plain data, no behaviour: ``firmware_protocol.link`` re-exports all of it.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from firmware_protocol.constants import PROTOCOL_V1, PROTOCOL_V2, STREAM_ID_LEN
from firmware_protocol.messages import Hello, HelloV2, Message
from firmware_protocol.vocabulary import DeviceKind

SUPPORTED_VERSIONS: Final = (PROTOCOL_V1, PROTOCOL_V2)
NO_STREAM: Final = bytes(STREAM_ID_LEN)
"""A stream id of all zeros: no stream (what a side says of a peer stream it does not know)."""
AnyHello = Hello | HelloV2


class Role(enum.Enum):
    CONTROLLER = "controller"
    DEVICE = "device"


class LinkState(enum.Enum):
    IDLE = "idle"  # never connected (a device waits here for an AuthChallenge)
    HANDSHAKING = "handshaking"
    UP = "up"
    DOWN = "down"  # a controller must connect() again; a device waits for an AuthChallenge


class _NeedData:
    """The sentinel next_event() returns when no event is waiting (h11's NEED_DATA)."""

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()


# --- events -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LinkUp:
    """The handshake completed: the device is who it says (it holds its key) and a session key is set.
    ``version`` and ``window`` are what the session runs; ``resumed`` (v2) says the peer knew this
    side's stream, so nothing it had was sent again; ``dropped`` lists messages this link held and
    gave up, never delivered: the peer did not know this side's stream (it powered up or restarted,
    and lost what it knew), a different device answered, or the session fell back to v1."""

    device_id: int
    hello: AnyHello
    version: int = PROTOCOL_V1
    window: int = 1
    resumed: bool = False
    dropped: tuple[tuple[int, Message], ...] = ()


@dataclass(frozen=True, slots=True)
class MessageReceived:
    message: Message
    seq: int


@dataclass(frozen=True, slots=True)
class MessageAcked:
    """The peer acknowledged the message send() numbered ``seq``: it has it."""

    seq: int


@dataclass(frozen=True, slots=True)
class MessageRejected:
    """An authentic DATA frame whose payload is not a valid message for this side (acknowledged, so the
    peer moves on, and not delivered). A peer's bug or a version mismatch, not an attack."""

    seq: int
    reason: str


@dataclass(frozen=True, slots=True)
class SecurityAlert:
    """A frame refused for its tag, its sender or its sequence number. ``reason`` is one of
    bad_tag, unknown_device, wrong_device, wrong_sender, replay, bad_sequence, stale_handshake,
    handshake_failed (docs/protocol.md §12.3)."""

    reason: str
    detail: str
    device_id: int


@dataclass(frozen=True, slots=True)
class LinkDown:
    """The link is down. ``unacknowledged`` (v1 sessions only): (seq, message) sent or queued but never
    acknowledged; the peer may or may not have received the first of them. A v2 session keeps them
    and resends what the peer lacks after the next handshake, so it lists none."""

    reason: str
    unacknowledged: tuple[tuple[int, Message], ...] = ()


LinkEvent = LinkUp | MessageReceived | MessageAcked | MessageRejected | SecurityAlert | LinkDown


@dataclass(frozen=True, slots=True)
class DeviceIdentity:
    """What a device says about itself in its Hello."""

    device_kind: DeviceKind
    model: str
    serial_number: str
    firmware_version: str


@dataclass(slots=True)
class LinkStats:
    """Counters for the status panel and the logs."""

    frames_sent: int = 0
    frames_accepted: int = 0
    retransmissions: int = 0
    duplicates: int = 0
    naks_sent: int = 0
    out_of_order: int = 0
    """v2 DATA frames held until the gap before them was filled."""
    resent_after_resume: int = 0
    """v2 messages sent again after a handshake because the peer said it lacked them."""
    refused: Counter[str] = field(default_factory=Counter)
    """Frames refused, by code (bad_crc, bad_cobs, ..., and the security reasons)."""
