"""Protocol constants, named as in docs/protocol.md, with their units in the name.

Every number a firmware engineer needs to build a device lives here and in docs/protocol.md; the two
must agree (tests/protocol/test_docs.py checks the table in the doc against these values).
"""

from __future__ import annotations

from typing import Final

# A device's key (DEVICE_KEY_LEN, 32 bytes: below) lives in table_names, which the controller's configuration
# shares without loading the protocol; re-exported here with the protocol's other numbers.
from table_names import DEVICE_KEY_LEN as DEVICE_KEY_LEN  # noqa: PLC0414

PROTOCOL_V1: Final = 1
"""The version byte of a v1 frame (and of every AuthChallenge), and the ``protocol_version`` a v1
device's Hello announces."""
PROTOCOL_V2: Final = 2
"""The version byte of every frame of a v2 session, and of the v2 Hello and AuthConfirm."""
PROTOCOL_VERSION: Final = PROTOCOL_V2
"""The newest version this package speaks (it speaks every version from PROTOCOL_V1 up)."""

FRAME_DELIMITER: Final = 0x00
"""COBS removes every 0x00 from a frame, so 0x00 marks where frames end (and, sent first, begin)."""

# --- frame layout (before COBS) -------------------------------------------------------------------
HEADER_LEN: Final = 11
"""version (1) + kind (1) + sender (1) + device_id (4, big-endian) + seq (4, big-endian)."""
TAG_LEN: Final = 16
"""Truncated HMAC-SHA256 tag: 128 bits, RFC 2104's floor of half the hash (see docs/protocol.md §4)."""
CRC_LEN: Final = 4
"""CRC-32 (IEEE 802.3, as zlib.crc32), big-endian, over everything before it."""
MIN_FRAME_LEN: Final = HEADER_LEN + TAG_LEN + CRC_LEN
"""An ACK or NAK: a header, no payload, a tag and a CRC (31 bytes)."""
MAX_FRAME_LEN: Final = 254
"""Largest frame before COBS. At most 254 bytes, COBS adds exactly one byte."""
MAX_PAYLOAD_LEN: Final = MAX_FRAME_LEN - MIN_FRAME_LEN
"""223 bytes: the message type byte and the message's fields."""
MAX_ENCODED_FRAME_LEN: Final = MAX_FRAME_LEN + 1
"""Largest COBS-encoded frame, without delimiters. The receive buffer holds no more than this."""

# --- frame kinds and senders ----------------------------------------------------------------------
KIND_HANDSHAKE: Final = 0x01
KIND_DATA: Final = 0x02
KIND_ACK: Final = 0x03
KIND_NAK: Final = 0x04

SENDER_CONTROLLER: Final = 0x00
SENDER_DEVICE: Final = 0x01

ANY_DEVICE_ID: Final = 0
"""The device_id a controller's AuthChallenge carries when it does not know which device is there."""

# --- keys, nonces -----------------------------------------------------------------------------------
# DEVICE_KEY_LEN (imported above from table_names): the provisioned per-device key, 256 bits, random,
# never shared between devices.
SESSION_KEY_LEN: Final = 32
NONCE_LEN: Final = 16
"""Each side's handshake nonce: 128 random bits, fresh for every handshake."""
KDF_INFO_PREFIX: Final = b"flushtable/1 session key"
"""HKDF-SHA256 info string (followed by the 4-byte device_id)."""

# --- sequencing and timers (docs/protocol.md §6) ------------------------------------------------------
FIRST_SEQ: Final = 1
"""The first DATA frame of a session in each direction carries seq 1."""
MAX_SEQ: Final = 0xFFFF_FF00
"""A link that reaches this seq declares itself down (``seq_exhausted``); a new handshake starts at 1."""
ACK_TIMEOUT_S: Final = 0.25
"""Retransmit a DATA frame not acknowledged within this time."""
MAX_RETRIES: Final = 3
"""Retransmissions of one frame (as in SAS) before the link is declared down: 4 sends in all."""
NAK_HOLDOFF_S: Final = 0.1
"""A receiver sends at most one NAK in this interval, so a burst of noise costs one retransmission."""
HANDSHAKE_RETRY_S: Final = 0.5
"""Resend an unanswered AuthChallenge (controller) or Hello (device) after this time."""
HANDSHAKE_MAX_RETRIES: Final = 3
HEARTBEAT_INTERVAL_S: Final = 1.0
"""A side that has sent nothing for this long sends a Heartbeat."""
MISSED_HEARTBEATS_FOR_DOWN: Final = 3
LINK_SILENCE_TIMEOUT_S: Final = HEARTBEAT_INTERVAL_S * MISSED_HEARTBEATS_FOR_DOWN
"""No authenticated frame from the peer for this long: the link is down (``heartbeat_missed``)."""
MAX_SEND_QUEUE: Final = 64
"""Messages waiting to be sent; send() refuses more (the peer is not keeping up)."""

# --- v2: windows, streams, selective acknowledgement (docs/protocol.md §8) ---------------------------
DEFAULT_WINDOW: Final = 32
"""DATA frames a v2 side offers to keep in flight; the session uses the smaller of the two offers."""
MAX_WINDOW: Final = 32
"""The largest window a v2 Hello or AuthConfirm may name: the SACK bitmap of an ACK covers it."""
SACK_LEN: Final = 4
"""A v2 ACK's payload: a 32-bit bitmap, bit i set when seq ack+2+i is held out of order."""
STREAM_ID_LEN: Final = 8
"""A v2 stream's id: 64 random bits drawn when a side's outgoing stream starts (at power-on, or when
its sequence numbers run out). An all-zero id means "none"."""
