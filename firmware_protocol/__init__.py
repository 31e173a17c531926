"""The firmware protocol between the table controller and its devices, v2 and v1 (docs/protocol.md).

The core is sans-I/O: no ports, no asyncio, no clock, and nothing of ours is imported. The layers,
bottom up:

- ``framing``: ``0x00 COBS(body) 0x00`` frames with a CRC-32, and ``FrameDecoder`` for byte streams.
- ``crypto``: truncated HMAC-SHA256 tags and the HKDF-SHA256 session key.
- ``messages``: every message as a frozen dataclass with ``encode()``, ``decode_message(payload)`` and
  a JSON form (``message_to_json`` / ``message_from_json``); below it ``field_codecs`` (how each field
  is checked, written, read and shown) and ``vocabulary`` (the wire's positions, enumerations, codes).
- ``link``: ``Link``, the h11-style state machine for either end: ``receive_data(bytes, now_s)``,
  ``next_event()``, ``send(message, now_s)``, ``bytes_to_send()``, ``handle_timers(now_s)``. It
  composes ``handshake`` (``Handshake``), ``session`` (``Session``), ``send_window`` (``SendWindow``),
  ``receive_window`` (``ReceiveWindow``) and ``resume``; its events and plain types are in ``events``.
- ``capture``: decode a captured byte stream into reports (what ``flushtable protocol decode`` prints).

One module is the I/O edge and is not imported here: ``firmware_protocol.runner``, the asyncio
``LinkRunner`` around a Link (reading, writing, timers, events) that the drivers and the simulated
firmware share, with its one timing configuration ``LinkTiming``.
"""

from firmware_protocol.constants import PROTOCOL_V1, PROTOCOL_V2, PROTOCOL_VERSION
from firmware_protocol.errors import FieldError, FrameError, LinkError, ProtocolError
from firmware_protocol.events import (
    NEED_DATA,
    SUPPORTED_VERSIONS,
    AnyHello,
    DeviceIdentity,
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
from firmware_protocol.link import Link
from firmware_protocol.messages import (
    ALL_MESSAGE_CLASSES,
    AuthChallenge,
    AuthConfirm,
    AuthConfirmV2,
    CardDealt,
    DealerKey,
    DealRequest,
    DpBankKeyed,
    ErrorReport,
    HandComplete,
    Heartbeat,
    Hello,
    HelloV2,
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
    StatusQuery,
    StatusReport,
    UnlockBets,
    decode_message,
    message_from_json,
    message_to_json,
)
from firmware_protocol.vocabulary import COMMUNITY_POSITION, DEALER_POSITION

__all__ = [
    "ALL_MESSAGE_CLASSES",
    "COMMUNITY_POSITION",
    "DEALER_POSITION",
    "NEED_DATA",
    "PROTOCOL_V1",
    "PROTOCOL_V2",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "AnyHello",
    "AuthChallenge",
    "AuthConfirm",
    "AuthConfirmV2",
    "CardDealt",
    "DealRequest",
    "DealerKey",
    "DeviceIdentity",
    "DpBankKeyed",
    "ErrorReport",
    "FieldError",
    "FrameError",
    "HandComplete",
    "Heartbeat",
    "Hello",
    "HelloV2",
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
    "StatusQuery",
    "StatusReport",
    "UnlockBets",
    "decode_message",
    "message_from_json",
    "message_to_json",
]
