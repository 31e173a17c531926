"""Every message of protocols v1 and v2 as a frozen dataclass, with its byte encoding and its JSON form.

A message's payload is its type byte followed by its fields in the order the class declares them
(docs/protocol.md §11 lists each with units and ranges). Constructing a message checks every field, so
an out-of-range message cannot exist; ``decode_message`` refuses anything that is not the canonical
encoding of a valid message (wrong length, trailing bytes, out-of-range values, bad UTF-8).

    payload = CardDealt(position=3, index=0, card=51).encode()   # b"\\x23\\x03\\x00\\x33"
    decode_message(payload)                                       # CardDealt(position=3, index=0, card=51)
    CardDealt.decode(payload)                                     # the same; FieldError if not a card_dealt
    message_to_json(msg) / message_from_json({"type": ..., "fields": {...}})

``MESSAGE_TYPES`` maps each type byte to its class; ``MESSAGE_CLASSES_BY_NAME`` maps the JSON ``type``.
Each class says who may send it (``SENT_BY``), whether it belongs in a handshake frame, and the
protocol version that introduced it (``PROTOCOL``): a v1 session refuses a v2-only message, and a
handshake message travels in a frame of exactly its version.
"""

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, get_origin

from firmware_protocol.constants import MAX_WINDOW, PROTOCOL_V1, PROTOCOL_V2, STREAM_ID_LEN
from firmware_protocol.errors import FieldError
from firmware_protocol.field_codecs import (
    BANK_CENTS,
    CARD,
    CARD_COUNT,
    CARD_INDEX,
    NONCE,
    SEAT,
    SPOT,
    STREAM_ID,
    U16,
    U32,
    Bool,
    CardList,
    Choice,
    Codec,
    FieldReader,
    JsonValue,
    OptionalSeat,
    Position,
    PositionCounts,
    SInt64,
    Text,
    UInt,
    VersionSet,
)
from firmware_protocol.vocabulary import (
    DEAL_PROGRESS,
    DEALER_KEYS,
    DEVICE_KINDS,
    DEVICE_STATES,
    LAMP_COLOURS,
    SEAT_KEYS,
    SEAT_RESULTS,
    SHUFFLER_FAULTS,
    SPOT_LAMP_COLOURS,
    DealerKeyName,
    DealProgress,
    DeviceKind,
    DeviceState,
    LampColour,
    SeatResult,
    ShufflerFaultKind,
    SpotLampColour,
)

SentBy = Literal["controller", "device", "either"]


# --- messages --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Message:
    """Base of every message. Subclasses set TYPE, NAME and SENT_BY, and declare each field once, in
    wire order, with its codec: ``position: Annotated[int, Position()]``."""

    TYPE: ClassVar[int]
    NAME: ClassVar[str]
    SENT_BY: ClassVar[SentBy]
    HANDSHAKE: ClassVar[bool] = False
    PROTOCOL: ClassVar[int] = PROTOCOL_V1
    """The protocol version that introduced the message (a handshake message: its frame's version)."""
    FIELDS: ClassVar[tuple[tuple[str, Codec], ...]] = ()
    """(name, codec) in wire order: made from the field declarations, never written by hand."""

    def __init_subclass__(cls) -> None:
        # Made once, from the class's own declarations (evaluated as the class body ran: this module
        # does not postpone annotations, so no string is evaluated again here). slots=True remakes the
        # class from this one's namespace, FIELDS included: nothing to redo then. No super(): the
        # remade class would not match the zero-argument super()'s cell.
        if "FIELDS" in cls.__dict__:
            return
        fields: list[tuple[str, Codec]] = []
        for name, hint in inspect.get_annotations(cls).items():
            if isinstance(hint, str):  # `from __future__ import annotations` would leave every codec unread
                raise TypeError(f"{cls.__name__}.{name}: messages.py must not postpone its annotations")
            if ClassVar in (hint, get_origin(hint)):  # a class constant (bare or subscripted), not a field
                continue
            extras: tuple[object, ...] = getattr(hint, "__metadata__", ())  # Annotated's, after the type
            codecs = [extra for extra in extras if isinstance(extra, Codec)]
            if len(codecs) != 1:
                # A field without its codec would be left out of FIELDS: the message would build, then
                # encode without it and lose its value on the wire. Two would leave the encoding unsaid.
                raise TypeError(
                    f"{cls.__name__}.{name}: a message field is declared with exactly one codec, "
                    f"Annotated[type, Codec] (or ClassVar[...] for a class constant); found {len(codecs)}"
                )
            fields.append((name, codecs[0]))
        cls.FIELDS = tuple(fields)

    def __post_init__(self) -> None:
        for name, codec in self.FIELDS:
            codec.check(name, getattr(self, name))
        self._check_together()

    def _check_together(self) -> None:
        """Checks that involve more than one field (overridden where needed)."""

    def encode(self) -> bytes:
        """The payload: type byte, then each field."""
        out = bytearray((self.TYPE,))
        for name, codec in self.FIELDS:
            codec.write(getattr(self, name), out)
        return bytes(out)

    @classmethod
    def decode(cls, payload: bytes) -> "Message":
        """The message ``payload`` carries, which must be of this class (``Message.decode`` takes any);
        FieldError naming the field when it is not a valid one."""
        message = decode_message(payload)
        if not isinstance(message, cls):
            raise FieldError("type", f"payload is a {message.NAME}, not a {cls.NAME}")
        return message

    def fields_json(self) -> dict[str, JsonValue]:
        return {name: codec.to_json(getattr(self, name)) for name, codec in self.FIELDS}


def _check_stream_state(stream_id: bytes, peer_stream_id: bytes, delivered_seq: int) -> None:
    """The stream state both v2 handshake steps carry (HelloV2, AuthConfirmV2): one rule for both."""
    if stream_id == bytes(STREAM_ID_LEN):
        raise FieldError("stream_id", "must not be all zeros")
    if peer_stream_id == bytes(STREAM_ID_LEN) and delivered_seq != 0:
        raise FieldError("delivered_seq", "must be 0 when peer_stream_id is none")


def _check_fault_code(state: DeviceState, fault_code: int) -> None:
    """The state and fault code both status messages carry (Status, StatusReport): one rule for both."""
    if (state == "fault") != (fault_code != 0):
        raise FieldError("fault_code", "must be non-zero exactly when state is fault")


@dataclass(frozen=True, slots=True)
class AuthChallenge(Message):
    """Controller -> device, handshake step 1: the controller's fresh nonce."""

    TYPE = 0x01
    NAME = "auth_challenge"
    SENT_BY = "controller"
    HANDSHAKE = True

    controller_nonce: Annotated[bytes, NONCE]


@dataclass(frozen=True, slots=True)
class Hello(Message):
    """Device -> controller, handshake step 2: identity, its own nonce, the controller's echoed back."""

    TYPE = 0x02
    NAME = "hello"
    SENT_BY = "device"
    HANDSHAKE = True

    device_kind: Annotated[DeviceKind, Choice(DEVICE_KINDS)]
    protocol_version: Annotated[int, UInt(1, 1, 0xFF)]
    model: Annotated[str, Text(32)]
    serial_number: Annotated[str, Text(32)]
    firmware_version: Annotated[str, Text(32)]
    device_nonce: Annotated[bytes, NONCE]
    controller_nonce: Annotated[bytes, NONCE]


@dataclass(frozen=True, slots=True)
class AuthConfirm(Message):
    """Controller -> device, handshake step 3: the device's nonce echoed back under the device key."""

    TYPE = 0x03
    NAME = "auth_confirm"
    SENT_BY = "controller"
    HANDSHAKE = True

    device_nonce: Annotated[bytes, NONCE]


@dataclass(frozen=True, slots=True)
class HelloV2(Message):
    """Device -> controller, v2 handshake step 2: identity and nonces as in Hello, the versions the
    device speaks, the window it offers, and its stream state: its own outgoing stream (id, the seq
    of the first frame it will send) and the controller stream it last delivered from (id, the last
    seq delivered). Sent in a version-2 frame; a v1 controller refuses it."""

    TYPE = 0x04
    NAME = "hello_v2"
    SENT_BY = "device"
    HANDSHAKE = True
    PROTOCOL = PROTOCOL_V2

    device_kind: Annotated[DeviceKind, Choice(DEVICE_KINDS)]
    protocol_versions: Annotated[tuple[int, ...], VersionSet()]
    max_window: Annotated[int, UInt(1, 1, MAX_WINDOW)]
    model: Annotated[str, Text(32)]
    serial_number: Annotated[str, Text(32)]
    firmware_version: Annotated[str, Text(32)]
    device_nonce: Annotated[bytes, NONCE]
    controller_nonce: Annotated[bytes, NONCE]
    stream_id: Annotated[bytes, STREAM_ID]
    """The device's outgoing stream."""
    send_seq: Annotated[int, UInt(4, 1, 0xFFFF_FFFF)]
    """The seq of the first DATA frame the device will send (its oldest unacknowledged, or its next)."""
    peer_stream_id: Annotated[bytes, STREAM_ID]
    """The controller stream the device has delivered from (zeros: none)."""
    delivered_seq: Annotated[int, U32]
    """The last seq of ``peer_stream_id`` the device delivered (0 with no stream)."""

    def _check_together(self) -> None:
        if PROTOCOL_V2 not in self.protocol_versions:
            raise FieldError("protocol_versions", "a hello_v2 must offer version 2")
        _check_stream_state(self.stream_id, self.peer_stream_id, self.delivered_seq)

    @property
    def protocol_version(self) -> int:
        """The newest version offered (what a v1-minded reader of ``Hello.protocol_version`` wants)."""
        return self.protocol_versions[-1]


@dataclass(frozen=True, slots=True)
class AuthConfirmV2(Message):
    """Controller -> device, v2 handshake step 3: the device's nonce echoed back, the version and window
    chosen, and the controller's stream state (as in HelloV2, the controller's side of it). Sent in a
    version-2 frame under the device key."""

    TYPE = 0x05
    NAME = "auth_confirm_v2"
    SENT_BY = "controller"
    HANDSHAKE = True
    PROTOCOL = PROTOCOL_V2

    device_nonce: Annotated[bytes, NONCE]
    protocol_version: Annotated[int, UInt(1, PROTOCOL_V2, PROTOCOL_V2)]
    window: Annotated[int, UInt(1, 1, MAX_WINDOW)]
    stream_id: Annotated[bytes, STREAM_ID]
    send_seq: Annotated[int, UInt(4, 1, 0xFFFF_FFFF)]
    peer_stream_id: Annotated[bytes, STREAM_ID]
    """The device stream the controller has delivered from (zeros: it does not know the device's)."""
    delivered_seq: Annotated[int, U32]

    def _check_together(self) -> None:
        _check_stream_state(self.stream_id, self.peer_stream_id, self.delivered_seq)


@dataclass(frozen=True, slots=True)
class Heartbeat(Message):
    """Either side, when it has sent nothing for HEARTBEAT_INTERVAL_S. The Link sends and absorbs these."""

    TYPE = 0x08
    NAME = "heartbeat"
    SENT_BY = "either"

    uptime_ms: Annotated[int, U32]
    """The sender's clock in milliseconds, modulo 2**32; for logs only."""


@dataclass(frozen=True, slots=True)
class Status(Message):
    """Device -> controller: its state, fault code (0 = none) and lamp colour; sent on every change."""

    TYPE = 0x09
    NAME = "status"
    SENT_BY = "device"

    state: Annotated[DeviceState, Choice(DEVICE_STATES)]
    fault_code: Annotated[int, U16]
    lamp: Annotated[LampColour, Choice(LAMP_COLOURS)]

    def _check_together(self) -> None:
        _check_fault_code(self.state, self.fault_code)


@dataclass(frozen=True, slots=True)
class ErrorReport(Message):
    """Either side: a command it could not carry out (code from ERROR_CODES) and why, in words."""

    TYPE = 0x0A
    NAME = "error"
    SENT_BY = "either"

    code: Annotated[int, UInt(1, 1, 0xFF)]
    refused_seq: Annotated[int, U32]
    """The seq of the DATA frame refused, or 0 when the error concerns no one frame."""
    detail: Annotated[str, Text(64)]


@dataclass(frozen=True, slots=True)
class Reset(Message):
    """Controller -> device: abandon what it is doing (hard: also reboot) and report status afterwards."""

    TYPE = 0x0B
    NAME = "reset"
    SENT_BY = "controller"

    hard: Annotated[bool, Bool()]


@dataclass(frozen=True, slots=True)
class StatusQuery(Message):
    """Controller -> any v2 device: report your state now (answered by StatusReport). The controller
    asks after every handshake, so it never has to guess what a device did while the line was down."""

    TYPE = 0x0C
    NAME = "status_query"
    SENT_BY = "controller"
    PROTOCOL = PROTOCOL_V2


@dataclass(frozen=True, slots=True)
class StatusReport(Message):
    """Device -> controller, the answer to a StatusQuery: its state, fault code and lamp (as Status),
    and for a shoe the deal it holds: ``deal`` (none, dealing, complete, stopped), the positions asked
    for, and how many cards it has reported for that deal so far. Every card it reported before this
    answer precedes it in the stream. Other devices answer with deal none."""

    TYPE = 0x0D
    NAME = "status_report"
    SENT_BY = "device"
    PROTOCOL = PROTOCOL_V2

    state: Annotated[DeviceState, Choice(DEVICE_STATES)]
    fault_code: Annotated[int, U16]
    lamp: Annotated[LampColour, Choice(LAMP_COLOURS)]
    deal: Annotated[DealProgress, Choice(DEAL_PROGRESS)] = "none"
    positions: Annotated[tuple[tuple[int, int], ...], PositionCounts(allow_empty=True)] = ()
    cards_reported: Annotated[int, CARD_COUNT] = 0

    def _check_together(self) -> None:
        _check_fault_code(self.state, self.fault_code)
        if (self.deal == "none") != (self.positions == ()):
            raise FieldError("positions", "must be empty exactly when deal is none")
        if self.deal == "none" and self.cards_reported != 0:
            raise FieldError("cards_reported", "must be 0 when deal is none")


@dataclass(frozen=True, slots=True)
class Shuffle(Message):
    """Controller -> shuffler: shuffle a fresh deck and verify it; answered by ShuffleDone."""

    TYPE = 0x20
    NAME = "shuffle"
    SENT_BY = "controller"


@dataclass(frozen=True, slots=True)
class ShuffleDone(Message):
    """Shuffler -> controller: the deck is shuffled; what the shoe read of it."""

    TYPE = 0x21
    NAME = "shuffle_done"
    SENT_BY = "device"

    card_count: Annotated[int, UInt(1, 0, 0xFF)]
    """Cards the shoe counted; 52 for a good deck (more when a card was read twice)."""
    missing_cards: Annotated[tuple[int, ...], CardList()]
    """Cards not read at all, ascending."""
    extra_cards: Annotated[tuple[int, ...], CardList()]
    """Cards read more than once, ascending."""

    def _check_together(self) -> None:
        if set(self.missing_cards) & set(self.extra_cards):
            raise FieldError("extra_cards", "a card cannot be both missing and extra")


@dataclass(frozen=True, slots=True)
class DealRequest(Message):
    """Controller -> shuffler: deal each position its card_count, in the order given, one at a time."""

    TYPE = 0x22
    NAME = "deal_request"
    SENT_BY = "controller"

    positions: Annotated[tuple[tuple[int, int], ...], PositionCounts()]


@dataclass(frozen=True, slots=True)
class CardDealt(Message):
    """Shuffler -> controller: one card left the shoe for ``position``, the ``index``-th (0-based) there."""

    TYPE = 0x23
    NAME = "card_dealt"
    SENT_BY = "device"

    position: Annotated[int, Position()]
    index: Annotated[int, CARD_INDEX]
    card: Annotated[int, CARD]


@dataclass(frozen=True, slots=True)
class HandComplete(Message):
    """Shuffler -> controller: the shoe finished ``position`` and counted ``card_count`` cards there."""

    TYPE = 0x24
    NAME = "hand_complete"
    SENT_BY = "device"

    position: Annotated[int, Position()]
    card_count: Annotated[int, CARD_COUNT]


@dataclass(frozen=True, slots=True)
class ShufflerFault(Message):
    """Shuffler -> controller: a fault; ``position`` where the deal stood (None when not dealing)."""

    TYPE = 0x25
    NAME = "shuffler_fault"
    SENT_BY = "device"

    fault: Annotated[ShufflerFaultKind, Choice(SHUFFLER_FAULTS)]
    position: Annotated[int | None, Position(optional=True)]
    detail: Annotated[str, Text(64)]


@dataclass(frozen=True, slots=True)
class SpotState(Message):
    """Bet sensors -> controller: what lies on one spot now (sent on every change, and after a lock)."""

    TYPE = 0x40
    NAME = "spot_state"
    SENT_BY = "device"

    seat: Annotated[int, SEAT]
    spot: Annotated[int, SPOT]
    amount_cents: Annotated[int, U32]
    chip_count: Annotated[int, U16]
    locked: Annotated[bool, Bool()]

    def _check_together(self) -> None:
        if (self.amount_cents == 0) != (self.chip_count == 0):
            raise FieldError("chip_count", "must be 0 exactly when amount_cents is 0")


@dataclass(frozen=True, slots=True)
class LockBets(Message):
    """Controller -> bet sensors: bets are locked; changes from now on are reported with locked=true."""

    TYPE = 0x41
    NAME = "lock_bets"
    SENT_BY = "controller"


@dataclass(frozen=True, slots=True)
class UnlockBets(Message):
    """Controller -> bet sensors: bets are open again."""

    TYPE = 0x42
    NAME = "unlock_bets"
    SENT_BY = "controller"


@dataclass(frozen=True, slots=True)
class SpotLamp(Message):
    """Controller -> bet sensors: light one spot's lamp (off, or the win / lose / push colour)."""

    TYPE = 0x43
    NAME = "spot_lamp"
    SENT_BY = "controller"

    seat: Annotated[int, SEAT]
    spot: Annotated[int, SPOT]
    colour: Annotated[SpotLampColour, Choice(SPOT_LAMP_COLOURS)]


@dataclass(frozen=True, slots=True)
class ShowButton(Message):
    """Controller -> dealer display: the button (designated player) is at ``seat``; None shows none."""

    TYPE = 0x60
    NAME = "show_button"
    SENT_BY = "controller"

    seat: Annotated[int | None, OptionalSeat()]


@dataclass(frozen=True, slots=True)
class ShowText(Message):
    """Controller -> dealer display: one line of text for the dealer (replaces the previous one)."""

    TYPE = 0x61
    NAME = "show_text"
    SENT_BY = "controller"

    text: Annotated[str, Text(120)]


@dataclass(frozen=True, slots=True)
class ShowSeatResult(Message):
    """Controller -> dealer display: a seat's result and its net win (+) or loss (-) in cents."""

    TYPE = 0x62
    NAME = "show_seat_result"
    SENT_BY = "controller"

    seat: Annotated[int, SEAT]
    result: Annotated[SeatResult, Choice(SEAT_RESULTS)]
    net_cents: Annotated[int, SInt64()]


@dataclass(frozen=True, slots=True)
class DealerKey(Message):
    """Dealer display -> controller: the dealer pressed a key; ``seat`` only (and always) for the keys
    that name a seat (fold_seat, kill_seat: SEAT_KEYS)."""

    TYPE = 0x63
    NAME = "dealer_key"
    SENT_BY = "device"

    key: Annotated[DealerKeyName, Choice(DEALER_KEYS)]
    seat: Annotated[int | None, OptionalSeat()] = None
    """1..7 for fold_seat and kill_seat; None for every other key."""

    def _check_together(self) -> None:
        if (self.key in SEAT_KEYS) != (self.seat is not None):
            raise FieldError("seat", "must be 1..7 for fold_seat and kill_seat and null for every other key")


@dataclass(frozen=True, slots=True)
class DpBankKeyed(Message):
    """Dealer display -> controller: the dealer keyed the bank the offered player posts (a table with no
    bank spot, or chips the sensors cannot read) and pressed accept. Added after v1's message set: a
    controller that does not know 0x64 refuses it as bad_message, as any unknown type. Version 2 only."""

    TYPE = 0x64
    NAME = "dp_bank_keyed"
    SENT_BY = "device"
    PROTOCOL = PROTOCOL_V2  # a v2 session's message: v1 stays byte for byte as it was

    seat: Annotated[int, SEAT]
    amount_cents: Annotated[int, BANK_CENTS]


ALL_MESSAGE_CLASSES: tuple[type[Message], ...] = (
    AuthChallenge,
    Hello,
    AuthConfirm,
    HelloV2,
    AuthConfirmV2,
    Heartbeat,
    Status,
    ErrorReport,
    Reset,
    StatusQuery,
    StatusReport,
    Shuffle,
    ShuffleDone,
    DealRequest,
    CardDealt,
    HandComplete,
    ShufflerFault,
    SpotState,
    LockBets,
    UnlockBets,
    SpotLamp,
    ShowButton,
    ShowText,
    ShowSeatResult,
    DealerKey,
    DpBankKeyed,
)
MESSAGE_TYPES: dict[int, type[Message]] = {cls.TYPE: cls for cls in ALL_MESSAGE_CLASSES}
MESSAGE_CLASSES_BY_NAME: dict[str, type[Message]] = {cls.NAME: cls for cls in ALL_MESSAGE_CLASSES}
assert len(MESSAGE_TYPES) == len(MESSAGE_CLASSES_BY_NAME) == len(ALL_MESSAGE_CLASSES)


def decode_message(payload: bytes) -> Message:
    """The message a payload carries; FieldError (naming the field) when it is not a valid one."""
    if not payload:
        raise FieldError("type", "payload is empty")
    cls = MESSAGE_TYPES.get(payload[0])
    if cls is None:
        raise FieldError("type", f"unknown message type 0x{payload[0]:02x}")
    reader = FieldReader(payload, 1)
    values = {name: codec.read(reader, name) for name, codec in cls.FIELDS}
    if reader.offset != len(payload):
        raise FieldError(cls.NAME, f"{len(payload) - reader.offset} bytes after the last field")
    return cls(**values)


def message_to_json(message: Message) -> dict[str, JsonValue]:
    """``{"type": name, "fields": {...}}`` with bytes as hex and tuples as lists."""
    return {"type": message.NAME, "fields": message.fields_json()}


def message_from_json(data: Mapping[str, JsonValue]) -> Message:
    """The message ``{"type": name, "fields": {...}}`` describes; FieldError naming what is wrong."""
    if not isinstance(data, Mapping):
        raise FieldError("message", "must be a JSON object with type and fields")
    name = data.get("type")
    if not isinstance(name, str) or name not in MESSAGE_CLASSES_BY_NAME:
        raise FieldError(
            "type", f"{name!r} is not a message type (one of {', '.join(MESSAGE_CLASSES_BY_NAME)})"
        )
    cls = MESSAGE_CLASSES_BY_NAME[name]
    raw_fields = data.get("fields", {})
    if not isinstance(raw_fields, Mapping):
        raise FieldError("fields", "must be a JSON object")
    expected = [field for field, _ in cls.FIELDS]
    unknown = sorted(set(raw_fields) - set(expected))
    if unknown:
        raise FieldError(f"fields.{unknown[0]}", f"is not a field of {name} (fields: {', '.join(expected)})")
    values: dict[str, Any] = {}
    for field, codec in cls.FIELDS:
        if field not in raw_fields:
            raise FieldError(f"fields.{field}", "is missing")
        values[field] = codec.from_json(f"fields.{field}", raw_fields[field])
    try:
        return cls(**values)
    except FieldError as error:
        raise FieldError(f"fields.{error.field}", error.reason) from None
