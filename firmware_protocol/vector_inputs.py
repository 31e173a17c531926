"""The fixed inputs of the protocol's test vectors (firmware_protocol/vectors.py builds them): the keys,
nonces and stream ids, the messages every vector file carries, and the frame makers (a raw frame with
any field set on purpose, a valid vector, an invalid one, a card frame damaged on the wire).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any

from cobs import cobs

from firmware_protocol.constants import (
    KIND_DATA,
    PROTOCOL_V1,
    SENDER_CONTROLLER,
    SENDER_DEVICE,
)
from firmware_protocol.crypto import compute_tag, derive_session_key
from firmware_protocol.framing import KIND_NAMES, SENDER_NAMES, encode_frame
from firmware_protocol.messages import (
    AuthChallenge,
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
)

VECTOR_DEVICE_ID = 0x0000_1234
VECTOR_DEVICE_KEY = bytes(range(32))
VECTOR_OTHER_KEY = bytes(range(0x80, 0xA0))
VECTOR_CONTROLLER_NONCE = bytes(range(0xA0, 0xB0))
VECTOR_DEVICE_NONCE = bytes(range(0xB0, 0xC0))
VECTOR_SESSION_KEY = derive_session_key(
    VECTOR_DEVICE_KEY, VECTOR_CONTROLLER_NONCE, VECTOR_DEVICE_NONCE, VECTOR_DEVICE_ID
)

Vector = dict[str, Any]

VECTOR_DEVICE_STREAM = bytes.fromhex("d5d5d5d5d5d5d5d5")
VECTOR_CONTROLLER_STREAM = bytes.fromhex("c5c5c5c5c5c5c5c5")
VECTOR_PREVIOUS_CONTROLLER_STREAM = bytes.fromhex("c4c4c4c4c4c4c4c4")

VECTOR_HELLO = Hello(
    device_kind="shuffler",
    protocol_version=PROTOCOL_V1,
    model="FT-Shoe 2",
    serial_number="SN-000042",
    firmware_version="2.1.0",
    device_nonce=VECTOR_DEVICE_NONCE,
    controller_nonce=VECTOR_CONTROLLER_NONCE,
)

# (description, sender, seq, message) of the valid DATA vectors, all under the session key.
DATA_VECTORS: tuple[tuple[str, int, int, Message], ...] = (
    ("heartbeat from the controller", SENDER_CONTROLLER, 1, Heartbeat(uptime_ms=1_000)),
    ("heartbeat from a device", SENDER_DEVICE, 1, Heartbeat(uptime_ms=0xFFFF_FFFF)),
    ("status: ready, lamp green", SENDER_DEVICE, 2, Status(state="ready", fault_code=0, lamp="green")),
    (
        "status: fault 0x0102, lamp red",
        SENDER_DEVICE,
        3,
        Status(state="fault", fault_code=0x0102, lamp="red"),
    ),
    (
        "error: not_now, refusing seq 7",
        SENDER_DEVICE,
        4,
        ErrorReport(code=3, refused_seq=7, detail="no deck"),
    ),
    ("error from the controller", SENDER_CONTROLLER, 2, ErrorReport(code=1, refused_seq=9, detail="")),
    ("reset, soft", SENDER_CONTROLLER, 3, Reset(hard=False)),
    ("reset, hard", SENDER_CONTROLLER, 4, Reset(hard=True)),
    ("shuffle", SENDER_CONTROLLER, 5, Shuffle()),
    (
        "shuffle done, deck complete",
        SENDER_DEVICE,
        5,
        ShuffleDone(card_count=52, missing_cards=(), extra_cards=()),
    ),
    (
        "shuffle done, 7c missing (card 5), As read twice (card 51)",
        SENDER_DEVICE,
        6,
        ShuffleDone(card_count=52, missing_cards=(5,), extra_cards=(51,)),
    ),
    (
        "deal request: seats 1 and 3, then the dealer, 7 cards each",
        SENDER_CONTROLLER,
        6,
        DealRequest(positions=((1, 7), (3, 7), (0, 7))),
    ),
    (
        "deal request: Chase the Flush, seat 2, dealer, 4 community",
        SENDER_CONTROLLER,
        7,
        DealRequest(positions=((2, 3), (0, 3), (15, 4))),
    ),
    ("card dealt: seat 3, first card, 2c (card 0)", SENDER_DEVICE, 7, CardDealt(position=3, index=0, card=0)),
    (
        "card dealt: dealer, seventh card, As (card 51)",
        SENDER_DEVICE,
        8,
        CardDealt(position=0, index=6, card=51),
    ),
    ("card dealt: community, Th (card 34)", SENDER_DEVICE, 9, CardDealt(position=15, index=3, card=34)),
    ("hand complete: seat 3, 7 cards", SENDER_DEVICE, 10, HandComplete(position=3, card_count=7)),
    (
        "shuffler fault: jam at seat 2",
        SENDER_DEVICE,
        11,
        ShufflerFault(fault="jam", position=2, detail="feed roller"),
    ),
    (
        "shuffler fault: door open, not dealing",
        SENDER_DEVICE,
        12,
        ShufflerFault(fault="door_open", position=None, detail=""),
    ),
    (
        "spot state: seat 4 ante 25.00 in 2 chips, unlocked",
        SENDER_DEVICE,
        13,
        SpotState(seat=4, spot=0, amount_cents=2_500, chip_count=2, locked=False),
    ),
    (
        "spot state: seat 7 spot 3 empty, locked",
        SENDER_DEVICE,
        14,
        SpotState(seat=7, spot=3, amount_cents=0, chip_count=0, locked=True),
    ),
    ("lock bets", SENDER_CONTROLLER, 8, LockBets()),
    ("unlock bets", SENDER_CONTROLLER, 9, UnlockBets()),
    ("spot lamp: seat 1 spot 2 win", SENDER_CONTROLLER, 10, SpotLamp(seat=1, spot=2, colour="win")),
    ("spot lamp: seat 6 spot 0 push", SENDER_CONTROLLER, 11, SpotLamp(seat=6, spot=0, colour="push")),
    ("show button at seat 5", SENDER_CONTROLLER, 12, ShowButton(seat=5)),
    ("show no button", SENDER_CONTROLLER, 13, ShowButton(seat=None)),
    ("show text, UTF-8", SENDER_CONTROLLER, 14, ShowText(text="Seat 3 wins €12.50")),
    (
        "show seat result: seat 2 lost 150.00",
        SENDER_CONTROLLER,
        15,
        ShowSeatResult(seat=2, result="lose", net_cents=-15_000),
    ),
    (
        "show seat result: seat 6 won 3000.00",
        SENDER_CONTROLLER,
        16,
        ShowSeatResult(seat=6, result="win", net_cents=300_000),
    ),
    ("dealer key: next", SENDER_DEVICE, 15, DealerKey(key="next", seat=None)),
    ("dealer key: fold seat 3", SENDER_DEVICE, 16, DealerKey(key="fold_seat", seat=3)),
    ("dealer key: designated player waives", SENDER_DEVICE, 17, DealerKey(key="dp_waives", seat=None)),
    ("dealer key: void request", SENDER_DEVICE, 18, DealerKey(key="void_request", seat=None)),
)


def raw_frame(  # noqa: PLR0913 - one argument per field of a raw frame: vectors set each on purpose
    kind: int,
    sender: int,
    seq: int,
    payload: bytes,
    *,
    key: bytes | None,
    version: int = PROTOCOL_V1,
    device_id: int = VECTOR_DEVICE_ID,
    tag: bytes | None = None,
    crc_xor: int = 0,
) -> bytes:
    """A frame with any header, tag or CRC, for building invalid vectors."""
    signed = struct.pack(">BBBII", version, kind, sender, device_id, seq) + payload
    if tag is None:
        tag = compute_tag(key, signed) if key is not None else bytes(16)
    body = signed + tag
    body += struct.pack(">I", zlib.crc32(body) ^ crc_xor)
    encoded: bytes = cobs.encode(body)
    return b"\x00" + encoded + b"\x00"


def valid_vector(
    description: str,
    key: bytes,
    header: tuple[int, int, int],
    message: Message | None,
    *,
    version: int = PROTOCOL_V1,
    sack: bytes = b"",
) -> Vector:
    """A valid vector; ``header`` is (kind, sender, seq); ``sack`` a v2 ACK's bitmap."""
    kind, sender, seq = header
    payload = message.encode() if message is not None else sack
    frame = encode_frame(
        kind,
        sender,
        VECTOR_DEVICE_ID,
        seq,
        payload,
        key=None if isinstance(message, AuthChallenge) else key,
        version=version,
    )
    frame_fields: dict[str, Any] = {
        "kind": KIND_NAMES[kind],
        "sender": SENDER_NAMES[sender],
        "device_id": VECTOR_DEVICE_ID,
        "seq": seq,
    }
    if version != PROTOCOL_V1:
        frame_fields["version"] = version
    if message is None:
        body = {"type": KIND_NAMES[kind], "fields": {"sack": sack.hex()} if sack else {}}
    else:
        body = {"type": message.NAME, "fields": message.fields_json()}
    return {
        "description": description,
        "key": key.hex(),
        "frame": frame.hex(),
        "message": frame_fields | body,
    }


def invalid_vector(description: str, key: bytes, frame: bytes, error: str) -> Vector:
    return {"description": description, "key": key.hex(), "frame": frame.hex(), "error": error}


def refused_data_frame(
    description: str,
    sender: int,
    seq: int,
    payload: bytes,
    *,
    error: str = "bad_message",
    version: int = PROTOCOL_V1,
) -> Vector:
    """A DATA frame, well framed and signed with the session key, that a reader refuses for what it
    carries (most of them: a payload that is not a valid message for this sender and version)."""
    frame = raw_frame(KIND_DATA, sender, seq, payload, key=VECTOR_SESSION_KEY, version=version)
    return invalid_vector(description, VECTOR_SESSION_KEY, frame, error)


def damaged_on_the_wire(session_key: bytes, card: bytes, frame: Callable[..., bytes]) -> list[Vector]:
    """The same three damages in either version's frames (``frame`` builds one): a CRC bit, a payload
    byte, another device's key. The undamaged frame is the valid vector "card dealt: seat 3, first
    card", so that a mutation undoing a damage makes nothing but a frame that really was sent."""
    good = frame(KIND_DATA, SENDER_DEVICE, 7, card, key=session_key)
    return [
        invalid_vector(
            "CRC-32 wrong (last CRC bit flipped)",
            session_key,
            frame(KIND_DATA, SENDER_DEVICE, 7, card, key=session_key, crc_xor=1),
            "bad_crc",
        ),
        invalid_vector(
            "payload byte changed on the wire",
            session_key,
            good[:-3] + bytes([good[-3] ^ 0x10]) + good[-2:],
            "bad_crc",
        ),
        invalid_vector(
            "signed with another device's key",
            session_key,
            frame(KIND_DATA, SENDER_DEVICE, 7, card, key=VECTOR_OTHER_KEY),
            "bad_tag",
        ),
    ]
