"""The test vectors of docs/protocol-vectors.jsonl (v1) and docs/protocol-vectors-v2.jsonl (v2), built
from fixed keys, nonces and stream ids.

``flushtable protocol vectors`` prints them; the test suite checks the file against both this
builder and an independent decode. A firmware engineer checks a device against the file alone:
every valid vector must decode to its ``message`` with its ``key``, every invalid one must be refused
with its ``error``. Handshake vectors use the device key; the others use the session key that the
handshake vectors derive (shown in the auth_confirm vector as ``session_key``). The v1 file is what
it was under v1 and is checked by a v1 reader (a v2 frame is ``bad_version`` to it); the v2 file adds
the v2 handshake, every message in version-2 frames, ACKs with their SACK bitmap, and the v2 refusals.

The fixed inputs and the frame makers are firmware_protocol/vector_inputs.py; this module builds the
vectors (generated data, one function per file).
"""

from __future__ import annotations

import struct
import zlib
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
from firmware_protocol.messages import (
    AuthChallenge,
    AuthConfirm,
    AuthConfirmV2,
    CardDealt,
    DealerKey,
    DpBankKeyed,
    HelloV2,
    Message,
    Shuffle,
    StatusQuery,
    StatusReport,
)
from firmware_protocol.vector_inputs import (
    DATA_VECTORS,
    VECTOR_CONTROLLER_NONCE,
    VECTOR_CONTROLLER_STREAM,
    VECTOR_DEVICE_KEY,
    VECTOR_DEVICE_NONCE,
    VECTOR_DEVICE_STREAM,
    VECTOR_HELLO,
    VECTOR_PREVIOUS_CONTROLLER_STREAM,
    VECTOR_SESSION_KEY,
    Vector,
    damaged_on_the_wire,
    invalid_vector,
    raw_frame,
    refused_data_frame,
    valid_vector,
)


def build_vectors() -> list[Vector]:
    """Every v1 vector, valid ones first, in a fixed order."""
    device_key, session_key = VECTOR_DEVICE_KEY, VECTOR_SESSION_KEY
    vectors = [
        valid_vector(
            "handshake 1: auth_challenge (unauthenticated: tag all zeros)",
            device_key,
            (KIND_HANDSHAKE, SENDER_CONTROLLER, 0),
            AuthChallenge(controller_nonce=VECTOR_CONTROLLER_NONCE),
        ),
        valid_vector(
            "handshake 2: hello, under the device key",
            device_key,
            (KIND_HANDSHAKE, SENDER_DEVICE, 0),
            VECTOR_HELLO,
        ),
        valid_vector(
            "handshake 3: auth_confirm, under the device key; derives session_key",
            device_key,
            (KIND_HANDSHAKE, SENDER_CONTROLLER, 0),
            AuthConfirm(device_nonce=VECTOR_DEVICE_NONCE),
        ),
    ]
    vectors[-1]["session_key"] = session_key.hex()
    for description, sender, seq, message in DATA_VECTORS:
        vectors.append(valid_vector(description, session_key, (KIND_DATA, sender, seq), message))
    vectors.append(
        valid_vector("ack of the device's seq 7", session_key, (KIND_ACK, SENDER_CONTROLLER, 7), None)
    )
    vectors.append(
        valid_vector("nak: the device expects seq 9", session_key, (KIND_NAK, SENDER_DEVICE, 9), None)
    )

    card = CardDealt(position=3, index=0, card=0).encode()
    vectors += [
        *damaged_on_the_wire(session_key, card, raw_frame),
        invalid_vector(
            "tag altered and CRC recomputed (a forger without the key)",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, card, key=None, tag=bytes(range(16))),
            "bad_tag",
        ),
        invalid_vector(
            "a frame of a previous session (device key, not session key)",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, card, key=device_key),
            "bad_tag",
        ),
        invalid_vector(
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
        invalid_vector(
            "COBS code byte points past the end", session_key, bytes.fromhex("0005414200"), "bad_cobs"
        ),
        invalid_vector(
            "too short to be a frame",
            session_key,
            b"\x00" + cobs.encode(bytes(10) + struct.pack(">I", zlib.crc32(bytes(10)))) + b"\x00",
            "bad_length",
        ),
        invalid_vector(
            "no delimiter within 255 bytes", session_key, b"\x00" + b"\x41" * 300 + b"\x00", "frame_too_long"
        ),
        invalid_vector(
            "protocol version 2",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, card, key=session_key, version=2),
            "bad_version",
        ),
        invalid_vector(
            "unknown frame kind 0x09",
            session_key,
            raw_frame(9, SENDER_DEVICE, 7, card, key=session_key),
            "bad_kind",
        ),
        invalid_vector(
            "unknown sender 0x05",
            session_key,
            raw_frame(KIND_DATA, 5, 7, card, key=session_key),
            "bad_sender",
        ),
        invalid_vector(
            "ack carrying a payload",
            session_key,
            raw_frame(KIND_ACK, SENDER_DEVICE, 7, b"\x00", key=session_key),
            "bad_length",
        ),
        refused_data_frame("data frame without a payload", SENDER_DEVICE, 7, b"", error="bad_length"),
        refused_data_frame("unknown message type 0x7f", SENDER_DEVICE, 7, b"\x7f"),
        refused_data_frame("card 52 does not exist", SENDER_DEVICE, 7, b"\x23\x03\x00\x34"),
        refused_data_frame("position 9 does not exist", SENDER_DEVICE, 7, b"\x23\x09\x00\x00"),
        refused_data_frame("byte after the last field", SENDER_DEVICE, 7, card + b"\x00"),
        refused_data_frame("card_dealt cut short", SENDER_DEVICE, 7, card[:-1]),
        refused_data_frame("boolean byte 2", SENDER_CONTROLLER, 7, b"\x0b\x02"),
        refused_data_frame("status fault with fault_code 0", SENDER_DEVICE, 7, b"\x09\x02\x00\x00\x03"),
        refused_data_frame("show_text that is not UTF-8", SENDER_CONTROLLER, 7, b"\x61\x02\xc3\x28"),
        refused_data_frame("missing cards out of order", SENDER_DEVICE, 7, b"\x21\x34\x02\x09\x05\x00"),
        refused_data_frame(
            "deal_request asking for 53 cards", SENDER_CONTROLLER, 7, b"\x22\x02\x01\x34\x00\x01"
        ),
        refused_data_frame(
            "a device sending shuffle (a controller's message)", SENDER_DEVICE, 7, Shuffle().encode()
        ),
        refused_data_frame(
            "the controller sending card_dealt (a device's message)", SENDER_CONTROLLER, 7, card
        ),
        refused_data_frame("hello inside a data frame", SENDER_DEVICE, 7, VECTOR_HELLO.encode()),
        invalid_vector(
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
        valid_vector(
            "handshake 1: auth_challenge (a v1 frame: every device can answer it)",
            device_key,
            (KIND_HANDSHAKE, SENDER_CONTROLLER, 0),
            AuthChallenge(controller_nonce=VECTOR_CONTROLLER_NONCE),
        ),
        valid_vector(
            "handshake 2: hello_v2 (versions 1 and 2, window 8, its stream state), under the device key",
            device_key,
            (KIND_HANDSHAKE, SENDER_DEVICE, 0),
            _HELLO_V2,
            version=PROTOCOL_V2,
        ),
        valid_vector(
            "handshake 3: auth_confirm_v2 (version 2, window 8), under the device key; derives session_key",
            device_key,
            (KIND_HANDSHAKE, SENDER_CONTROLLER, 0),
            confirm,
            version=PROTOCOL_V2,
        ),
    ]
    vectors[-1]["session_key"] = session_key.hex()
    for description, sender, seq, message in DATA_VECTORS + _DATA_VECTORS_V2:
        vectors.append(
            valid_vector(description, session_key, (KIND_DATA, sender, seq), message, version=PROTOCOL_V2)
        )
    vectors += [
        valid_vector(
            "ack: the device's stream delivered up to seq 44, nothing held beyond",
            session_key,
            (KIND_ACK, SENDER_CONTROLLER, 44),
            None,
            version=PROTOCOL_V2,
            sack=bytes(4),
        ),
        valid_vector(
            "ack: up to 44, and seqs 46 and 48 held (bits 0 and 2): 45 and 47 are missing",
            session_key,
            (KIND_ACK, SENDER_CONTROLLER, 44),
            None,
            version=PROTOCOL_V2,
            sack=(0b101).to_bytes(4, "big"),
        ),
        valid_vector(
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
        *damaged_on_the_wire(session_key, card, v2),
        invalid_vector(
            "a frame of a previous session (device key, not session key)",
            session_key,
            v2(KIND_DATA, SENDER_DEVICE, 7, card, key=device_key),
            "bad_tag",
        ),
        invalid_vector(
            "protocol version 3",
            session_key,
            raw_frame(KIND_DATA, SENDER_DEVICE, 7, card, key=session_key, version=3),
            "bad_version",
        ),
        invalid_vector(
            "v2 ack without its SACK bitmap",
            session_key,
            v2(KIND_ACK, SENDER_CONTROLLER, 44, b"", key=session_key),
            "bad_length",
        ),
        invalid_vector(
            "v2 ack with a 5-byte bitmap",
            session_key,
            v2(KIND_ACK, SENDER_CONTROLLER, 44, bytes(5), key=session_key),
            "bad_length",
        ),
        invalid_vector(
            "v2 nak carrying a payload",
            session_key,
            v2(KIND_NAK, SENDER_DEVICE, 2, bytes(4), key=session_key),
            "bad_length",
        ),
        invalid_vector(
            "hello_v2 in a v1 frame",
            device_key,
            raw_frame(KIND_HANDSHAKE, SENDER_DEVICE, 0, _HELLO_V2.encode(), key=device_key),
            "bad_message",
        ),
        invalid_vector(
            "v1 hello in a v2 frame",
            device_key,
            v2(KIND_HANDSHAKE, SENDER_DEVICE, 0, VECTOR_HELLO.encode(), key=device_key),
            "bad_message",
        ),
        refused_data_frame(
            "status_query in a v1 frame (a v1 session has no such message)",
            SENDER_CONTROLLER,
            1,
            StatusQuery().encode(),
        ),
        invalid_vector(
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
        invalid_vector(
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
        refused_data_frame(
            "status_report: deal none but positions given",
            SENDER_DEVICE,
            44,
            b"\x0d\x00\x00\x00\x01\x00\x01\x01\x07\x00",
            version=PROTOCOL_V2,
        ),
        refused_data_frame(
            "status_report sent by the controller",
            SENDER_CONTROLLER,
            2,
            StatusReport(state="ready", fault_code=0, lamp="green").encode(),
            version=PROTOCOL_V2,
        ),
        refused_data_frame(
            "the controller sending card_dealt (a device's message)",
            SENDER_CONTROLLER,
            2,
            card,
            version=PROTOCOL_V2,
        ),
        refused_data_frame(
            "card 52 does not exist", SENDER_DEVICE, 44, b"\x23\x03\x00\x34", version=PROTOCOL_V2
        ),
        refused_data_frame(
            "byte after the last field", SENDER_DEVICE, 7, card + b"\x00", version=PROTOCOL_V2
        ),
        refused_data_frame("unknown message type 0x7f", SENDER_DEVICE, 44, b"\x7f", version=PROTOCOL_V2),
        invalid_vector(
            "COBS code byte points past the end", session_key, bytes.fromhex("0005414200"), "bad_cobs"
        ),
        invalid_vector(
            "no delimiter within 255 bytes", session_key, b"\x00" + b"\x41" * 300 + b"\x00", "frame_too_long"
        ),
        # Appended with the kill_seat key (issue 13): the key names a seat, so a seat of 0 (none) is refused.
        refused_data_frame(
            "dealer key kill_seat without a seat", SENDER_DEVICE, 47, b"\x63\x07\x00", version=PROTOCOL_V2
        ),
    ]
    return vectors
