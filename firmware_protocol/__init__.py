"""The firmware protocol between the table controller and its devices, v1 (docs/protocol.md).

Sans-I/O: no ports, no asyncio, no clock, and nothing of ours is imported. The layers, bottom up:

- ``framing``: ``0x00 COBS(body) 0x00`` frames with a CRC-32, and ``FrameDecoder`` for byte streams.
- ``crypto``: truncated HMAC-SHA256 tags and the HKDF-SHA256 session key.
- ``messages``: every message as a frozen dataclass with ``encode()``, ``decode_message(payload)`` and
  a JSON form (``message_to_json`` / ``message_from_json``).
- ``link``: ``Link``, the h11-style state machine for either end: ``receive_data(bytes, now_s)``,
  ``next_event()``, ``send(message, now_s)``, ``bytes_to_send()``, ``handle_timers(now_s)``.
- ``capture``: decode a captured byte stream into reports (what ``flushtable protocol decode`` prints).
"""

from firmware_protocol.constants import PROTOCOL_VERSION
from firmware_protocol.errors import FieldError, FrameError, LinkError, ProtocolError
from firmware_protocol.link import (
    NEED_DATA,
    DeviceIdentity,
    Link,
    LinkDown,
    LinkEvent,
    LinkState,
    LinkStats,
    LinkUp,
    MessageAcked,
    MessageReceived,
    MessageRejected,
    Role,
    SecurityAlert,
)
from firmware_protocol.messages import (
    ALL_MESSAGE_CLASSES,
    COMMUNITY_POSITION,
    DEALER_POSITION,
    AuthChallenge,
    AuthConfirm,
    CardDealt,
    DealerKey,
    DealRequest,
    ErrorReport,
    HandComplete,
    Heartbeat,
    Hello,
    LockBets,
    Message,
    Reset,
    ShowButton,
    ShowSeatResult,
    ShowText,
    Shuffle,
    ShuffleDone,
    ShufflerFault,
    SpotLamp,
    SpotState,
    Status,
    UnlockBets,
    decode_message,
    message_from_json,
    message_to_json,
)

__all__ = [
    "ALL_MESSAGE_CLASSES",
    "COMMUNITY_POSITION",
    "DEALER_POSITION",
    "NEED_DATA",
    "PROTOCOL_VERSION",
    "AuthChallenge",
    "AuthConfirm",
    "CardDealt",
    "DealRequest",
    "DealerKey",
    "DeviceIdentity",
    "ErrorReport",
    "FieldError",
    "FrameError",
    "HandComplete",
    "Heartbeat",
    "Hello",
    "Link",
    "LinkDown",
    "LinkError",
    "LinkEvent",
    "LinkState",
    "LinkStats",
    "LinkUp",
    "LockBets",
    "Message",
    "MessageAcked",
    "MessageReceived",
    "MessageRejected",
    "ProtocolError",
    "Reset",
    "Role",
    "SecurityAlert",
    "ShowButton",
    "ShowSeatResult",
    "ShowText",
    "Shuffle",
    "ShuffleDone",
    "ShufflerFault",
    "SpotLamp",
    "SpotState",
    "Status",
    "UnlockBets",
    "decode_message",
    "message_from_json",
    "message_to_json",
]
