"""The test vectors of docs/protocol-vectors.jsonl (v1) and docs/protocol-vectors-v2.jsonl (v2), built
from fixed keys, nonces and stream ids.

``flushtable protocol vectors`` prints them; the test suite checks the file against both this
builder and an independent decode. A firmware engineer checks a device against the file alone:
every valid vector must decode to its ``message`` with its ``key``, every invalid one must be refused
with its ``error``. Handshake vectors use the device key; the others use the session key that the
handshake vectors derive (shown in the auth_confirm vector as ``session_key``). The v1 file is what
it was under v1 and is checked by a v1 reader (a v2 frame is ``bad_version`` to it); the v2 file adds
the v2 handshake, every message in version-2 frames, ACKs with their SACK bitmap, and the v2 refusals.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any

from cobs import cobs

from firmware_protocol.constants import (
    KIND_ACK,
    KIND_DATA,
    KIND_HANDSHAKE,
    KIND_NAK,
    PROTOCOL_V1,
    PROTOCOL_V2,
    SENDER_CONTROLLER,
    SENDER_DEVICE,
)
from firmware_protocol.crypto import compute_tag, derive_session_key
from firmware_protocol.framing import KIND_NAMES, SENDER_NAMES, encode_frame
from firmware_protocol.messages import (
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

_HELLO = Hello(
    device_kind="shuffler",
    protocol_version=PROTOCOL_V1,
    model="FT-Shoe 2",
    serial_number="SN-000042",
    firmware_version="2.1.0",
    device_nonce=VECTOR_DEVICE_NONCE,
    controller_nonce=VECTOR_CONTROLLER_NONCE,
)

# (description, sender, seq, message) of the valid DATA vectors, all under the session key.
_DATA_VECTORS: tuple[tuple[str, int, int, Message], ...] = (
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


def _valid(
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


def _invalid(description: str, key: bytes, frame: bytes, error: str) -> Vector:
    return {"description": description, "key": key.hex(), "frame": frame.hex(), "error": error}


def _damaged_on_the_wire(session_key: bytes, card: bytes, frame: Callable[..., bytes]) -> list[Vector]:
    """The same three damages in either version's frames (``frame`` builds one): a CRC bit, a payload
    byte, another device's key. The undamaged frame is the valid vector "card dealt: seat 3, first
    card", so that a mutation undoing a damage makes nothing but a frame that really was sent."""
    good = frame(KIND_DATA, SENDER_DEVICE, 7, card, key=session_key)
    return [
        _invalid(
            "CRC-32 wrong (last CRC bit flipped)",
            session_key,
            frame(KIND_DATA, SENDER_DEVICE, 7, card, key=session_key, crc_xor=1),
            "bad_crc",
        ),
        _invalid(
            "payload byte changed on the wire",
            session_key,
            good[:-3] + bytes([good[-3] ^ 0x10]) + good[-2:],
            "bad_crc",
        ),
        _invalid(
            "signed with another device's key",
            session_key,
            frame(KIND_DATA, SENDER_DEVICE, 7, card, key=VECTOR_OTHER_KEY),
            "bad_tag",
        ),
    ]


def build_vectors() -> list[Vector]:
    """Every v1 vector, valid ones first, in a fixed order."""
    device_key, session_key = VECTOR_DEVICE_KEY, VECTOR_SESSION_KEY
    vectors = [
        _valid(
            "handshake 1: auth_challenge (unauthenticated: tag all zeros)",
            device_key,
            (KIND_HANDSHAKE, SENDER_CONTROLLER, 0),
            AuthChallenge(controller_nonce=VECTOR_CONTROLLER_NONCE),
        ),
        _valid(
            "handshake 2: hello, under the device key", device_key, (KIND_HANDSHAKE, SENDER_DEVICE, 0), _HELLO
        ),
        _valid(
            "handshake 3: auth_confirm, under the device key; derives session_key",
            device_key,
            (KIND_HANDSHAKE, SENDER_CONTROLLER, 0),
            AuthConfirm(device_nonce=VECTOR_DEVICE_NONCE),
        ),
    ]
    vectors[-1]["session_key"] = session_key.hex()
    for description, sender, seq, message in _DATA_VECTORS:
        vectors.append(_valid(description, session_key, (KIND_DATA, sender, seq), message))
    vectors.append(_valid("ack of the device's seq 7", session_key, (KIND_ACK, SENDER_CONTROLLER, 7), None))
    vectors.append(_valid("nak: the device expects seq 9", session_key, (KIND_NAK, SENDER_DEVICE, 9), None))

    card = CardDealt(position=3, index=0, card=0).encode()
    vectors += [
        *_damaged_on_the_wire(session_key, card, raw_frame),
        _invalid(
            "tag altered and CRC recomputed (a forger without the key)",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, card, key=None, tag=bytes(range(16))),
            "bad_tag",
        ),
        _invalid(
            "a frame of a previous session (device key, not session key)",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, card, key=device_key),
            "bad_tag",
        ),
        _invalid(
            "auth_challenge with a non-zero tag",
            device_key,
            raw_frame(
                KIND_HANDSHAKE,
                SENDER_CONTROLLER,
                0,
                AuthChallenge(controller_nonce=VECTOR_CONTROLLER_NONCE).encode(),
                key=None,
                tag=b"\x01" * 16,
            ),
            "bad_tag",
        ),
        _invalid("COBS code byte points past the end", session_key, bytes.fromhex("0005414200"), "bad_cobs"),
        _invalid(
            "too short to be a frame",
            session_key,
            b"\x00" + cobs.encode(bytes(10) + struct.pack(">I", zlib.crc32(bytes(10)))) + b"\x00",
            "bad_length",
        ),
        _invalid(
            "no delimiter within 255 bytes", session_key, b"\x00" + b"\x41" * 300 + b"\x00", "frame_too_long"
        ),
        _invalid(
            "protocol version 2",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, card, key=session_key, version=2),
            "bad_version",
        ),
        _invalid(
            "unknown frame kind 0x09",
            session_key,
            raw_frame(9, SENDER_DEVICE, 7, card, key=session_key),
            "bad_kind",
        ),
        _invalid(
            "unknown sender 0x05",
            session_key,
            raw_frame(KIND_DATA, 5, 7, card, key=session_key),
            "bad_sender",
        ),
        _invalid(
            "ack carrying a payload",
            session_key,
            raw_frame(KIND_ACK, SENDER_DEVICE, 7, b"\x00", key=session_key),
            "bad_length",
        ),
        _invalid(
            "data frame without a payload",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, b"", key=session_key),
            "bad_length",
        ),
        _invalid(
            "unknown message type 0x7f",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, b"\x7f", key=session_key),
            "bad_message",
        ),
        _invalid(
            "card 52 does not exist",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, b"\x23\x03\x00\x34", key=session_key),
            "bad_message",
        ),
        _invalid(
            "position 9 does not exist",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, b"\x23\x09\x00\x00", key=session_key),
            "bad_message",
        ),
        _invalid(
            "byte after the last field",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, card + b"\x00", key=session_key),
            "bad_message",
        ),
        _invalid(
            "card_dealt cut short",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, card[:-1], key=session_key),
            "bad_message",
        ),
        _invalid(
            "boolean byte 2",
            session_key,
            raw_frame(KIND_DATA, SENDER_CONTROLLER, 7, b"\x0b\x02", key=session_key),
            "bad_message",
        ),
        _invalid(
            "status fault with fault_code 0",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, b"\x09\x02\x00\x00\x03", key=session_key),
            "bad_message",
        ),
        _invalid(
            "show_text that is not UTF-8",
            session_key,
            raw_frame(KIND_DATA, SENDER_CONTROLLER, 7, b"\x61\x02\xc3\x28", key=session_key),
            "bad_message",
        ),
        _invalid(
            "missing cards out of order",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, b"\x21\x34\x02\x09\x05\x00", key=session_key),
            "bad_message",
        ),
        _invalid(
            "deal_request asking for 53 cards",
            session_key,
            raw_frame(KIND_DATA, SENDER_CONTROLLER, 7, b"\x22\x02\x01\x34\x00\x01", key=session_key),
            "bad_message",
        ),
        _invalid(
            "a device sending shuffle (a controller's message)",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, Shuffle().encode(), key=session_key),
            "bad_message",
        ),
        _invalid(
            "the controller sending card_dealt (a device's message)",
            session_key,
            raw_frame(KIND_DATA, SENDER_CONTROLLER, 7, card, key=session_key),
            "bad_message",
        ),
        _invalid(
            "hello inside a data frame",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, _HELLO.encode(), key=session_key),
            "bad_message",
        ),
        _invalid(
            "card_dealt inside a handshake frame",
            device_key,
            raw_frame(KIND_HANDSHAKE, SENDER_DEVICE, 0, card, key=device_key),
            "bad_message",
        ),
    ]
    return vectors


_HELLO_V2 = HelloV2(
    device_kind="shuffler",
    protocol_versions=(PROTOCOL_V1, PROTOCOL_V2),
    max_window=8,
    model="FT-Shoe 3",
    serial_number="SN-000043",
    firmware_version="3.0.0",
    device_nonce=VECTOR_DEVICE_NONCE,
    controller_nonce=VECTOR_CONTROLLER_NONCE,
    stream_id=VECTOR_DEVICE_STREAM,
    send_seq=41,
    peer_stream_id=VECTOR_PREVIOUS_CONTROLLER_STREAM,
    delivered_seq=17,
)

# v2-only DATA messages, and a resumed stream's seqs (they continue, they do not restart at 1).
_DATA_VECTORS_V2: tuple[tuple[str, int, int, Message], ...] = (
    ("status query (after every handshake)", SENDER_CONTROLLER, 1, StatusQuery()),
    (
        "status report: a shoe idle",
        SENDER_DEVICE,
        41,
        StatusReport(state="ready", fault_code=0, lamp="green"),
    ),
    (
        "status report: a shoe mid-deal, 9 of 14 cards reported",
        SENDER_DEVICE,
        42,
        StatusReport(
            state="busy",
            fault_code=0,
            lamp="amber",
            deal="dealing",
            positions=((1, 7), (0, 7)),
            cards_reported=9,
        ),
    ),
    (
        "status report: a shoe stopped by a jam",
        SENDER_DEVICE,
        43,
        StatusReport(
            state="fault",
            fault_code=0x11,
            lamp="red",
            deal="stopped",
            positions=((2, 3), (0, 3)),
            cards_reported=4,
        ),
    ),
    (
        "dealer key: next, seq 1,000,000 of a long-lived stream",
        SENDER_DEVICE,
        1_000_000,
        DealerKey(key="next", seat=None),
    ),
    # The designated player's bank at the table (issue 13): appended, every earlier vector unchanged.
    ("dealer key: the offered player accepts the button", SENDER_DEVICE, 44, DealerKey(key="dp_accepts")),
    (
        "dp bank keyed: seat 3 posts 2,500.00",
        SENDER_DEVICE,
        45,
        DpBankKeyed(seat=3, amount_cents=250_000),
    ),
    # Kill one seat by the dealer's key (issue 13): appended, every earlier vector unchanged.
    (
        "dealer key: kill seat 4 (a supervisor must confirm)",
        SENDER_DEVICE,
        46,
        DealerKey(key="kill_seat", seat=4),
    ),
)


def build_vectors_v2() -> list[Vector]:
    """Every v2 vector, valid ones first, in a fixed order. The device's Hello resumes: it knew an
    earlier controller stream (delivered up to 17 of it), and its own stream's next frame is seq 41;
    the controller, restarted, has a new stream and does not know the device's, so it confirms with
    no peer stream and its first seq."""
    device_key, session_key = VECTOR_DEVICE_KEY, VECTOR_SESSION_KEY
    confirm = AuthConfirmV2(
        device_nonce=VECTOR_DEVICE_NONCE,
        protocol_version=PROTOCOL_V2,
        window=8,
        stream_id=VECTOR_CONTROLLER_STREAM,
        send_seq=1,
        peer_stream_id=bytes(len(VECTOR_CONTROLLER_STREAM)),
        delivered_seq=0,
    )
    vectors = [
        _valid(
            "handshake 1: auth_challenge (a v1 frame: every device can answer it)",
            device_key,
            (KIND_HANDSHAKE, SENDER_CONTROLLER, 0),
            AuthChallenge(controller_nonce=VECTOR_CONTROLLER_NONCE),
        ),
        _valid(
            "handshake 2: hello_v2 (versions 1 and 2, window 8, its stream state), under the device key",
            device_key,
            (KIND_HANDSHAKE, SENDER_DEVICE, 0),
            _HELLO_V2,
            version=PROTOCOL_V2,
        ),
        _valid(
            "handshake 3: auth_confirm_v2 (version 2, window 8), under the device key; derives session_key",
            device_key,
            (KIND_HANDSHAKE, SENDER_CONTROLLER, 0),
            confirm,
            version=PROTOCOL_V2,
        ),
    ]
    vectors[-1]["session_key"] = session_key.hex()
    for description, sender, seq, message in _DATA_VECTORS + _DATA_VECTORS_V2:
        vectors.append(
            _valid(description, session_key, (KIND_DATA, sender, seq), message, version=PROTOCOL_V2)
        )
    vectors += [
        _valid(
            "ack: the device's stream delivered up to seq 44, nothing held beyond",
            session_key,
            (KIND_ACK, SENDER_CONTROLLER, 44),
            None,
            version=PROTOCOL_V2,
            sack=bytes(4),
        ),
        _valid(
            "ack: up to 44, and seqs 46 and 48 held (bits 0 and 2): 45 and 47 are missing",
            session_key,
            (KIND_ACK, SENDER_CONTROLLER, 44),
            None,
            version=PROTOCOL_V2,
            sack=(0b101).to_bytes(4, "big"),
        ),
        _valid(
            "nak: the controller expects seq 2",
            session_key,
            (KIND_NAK, SENDER_DEVICE, 2),
            None,
            version=PROTOCOL_V2,
        ),
    ]
    card = CardDealt(position=3, index=0, card=0).encode()

    def v2(kind: int, sender: int, seq: int, payload: bytes, **options: Any) -> bytes:
        return raw_frame(kind, sender, seq, payload, version=PROTOCOL_V2, **options)

    vectors += [
        *_damaged_on_the_wire(session_key, card, v2),
        _invalid(
            "a frame of a previous session (device key, not session key)",
            session_key,
            v2(KIND_DATA, SENDER_DEVICE, 7, card, key=device_key),
            "bad_tag",
        ),
        _invalid(
            "protocol version 3",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, card, key=session_key, version=3),
            "bad_version",
        ),
        _invalid(
            "v2 ack without its SACK bitmap",
            session_key,
            v2(KIND_ACK, SENDER_CONTROLLER, 44, b"", key=session_key),
            "bad_length",
        ),
        _invalid(
            "v2 ack with a 5-byte bitmap",
            session_key,
            v2(KIND_ACK, SENDER_CONTROLLER, 44, bytes(5), key=session_key),
            "bad_length",
        ),
        _invalid(
            "v2 nak carrying a payload",
            session_key,
            v2(KIND_NAK, SENDER_DEVICE, 2, bytes(4), key=session_key),
            "bad_length",
        ),
        _invalid(
            "hello_v2 in a v1 frame",
            device_key,
            raw_frame(KIND_HANDSHAKE, SENDER_DEVICE, 0, _HELLO_V2.encode(), key=device_key),
            "bad_message",
        ),
        _invalid(
            "v1 hello in a v2 frame",
            device_key,
            v2(KIND_HANDSHAKE, SENDER_DEVICE, 0, _HELLO.encode(), key=device_key),
            "bad_message",
        ),
        _invalid(
            "status_query in a v1 frame (a v1 session has no such message)",
            session_key,
            raw_frame(KIND_DATA, SENDER_CONTROLLER, 1, StatusQuery().encode(), key=session_key),
            "bad_message",
        ),
        _invalid(
            "hello_v2 offering version 1 only",
            device_key,
            v2(
                KIND_HANDSHAKE,
                SENDER_DEVICE,
                0,
                _HELLO_V2.encode()[:2] + b"\x01" + _HELLO_V2.encode()[3:],
                key=device_key,
            ),
            "bad_message",
        ),
        _invalid(
            "hello_v2 with window 33 (more than MAX_WINDOW)",
            device_key,
            v2(
                KIND_HANDSHAKE,
                SENDER_DEVICE,
                0,
                _HELLO_V2.encode()[:3] + b"\x21" + _HELLO_V2.encode()[4:],
                key=device_key,
            ),
            "bad_message",
        ),
        _invalid(
            "status_report: deal none but positions given",
            session_key,
            v2(KIND_DATA, SENDER_DEVICE, 44, b"\x0d\x00\x00\x00\x01\x00\x01\x01\x07\x00", key=session_key),
            "bad_message",
        ),
        _invalid(
            "status_report sent by the controller",
            session_key,
            v2(
                KIND_DATA,
                SENDER_CONTROLLER,
                2,
                StatusReport(state="ready", fault_code=0, lamp="green").encode(),
                key=session_key,
            ),
            "bad_message",
        ),
        _invalid(
            "the controller sending card_dealt (a device's message)",
            session_key,
            v2(KIND_DATA, SENDER_CONTROLLER, 2, card, key=session_key),
            "bad_message",
        ),
        _invalid(
            "card 52 does not exist",
            session_key,
            v2(KIND_DATA, SENDER_DEVICE, 44, b"\x23\x03\x00\x34", key=session_key),
            "bad_message",
        ),
        _invalid(
            "byte after the last field",
            session_key,
            v2(KIND_DATA, SENDER_DEVICE, 7, card + b"\x00", key=session_key),
            "bad_message",
        ),
        _invalid(
            "unknown message type 0x7f",
            session_key,
            v2(KIND_DATA, SENDER_DEVICE, 44, b"\x7f", key=session_key),
            "bad_message",
        ),
        _invalid("COBS code byte points past the end", session_key, bytes.fromhex("0005414200"), "bad_cobs"),
        _invalid(
            "no delimiter within 255 bytes", session_key, b"\x00" + b"\x41" * 300 + b"\x00", "frame_too_long"
        ),
        # Appended with the kill_seat key (issue 13): the key names a seat, so a seat of 0 (none) is refused.
        _invalid(
            "dealer key kill_seat without a seat",
            session_key,
            v2(KIND_DATA, SENDER_DEVICE, 47, b"\x63\x07\x00", key=session_key),
            "bad_message",
        ),
    ]
    return vectors
