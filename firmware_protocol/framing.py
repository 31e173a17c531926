"""Frames: the byte layout, COBS framing with a 0x00 delimiter, the CRC, and a stream decoder.

On the wire a frame is ``0x00 COBS(body) 0x00``; body (docs/protocol.md §3) is

    version u8 | kind u8 | sender u8 | device_id u32 | seq u32 | payload | tag[16] | crc32 u32

The CRC-32 (zlib, in C) covers everything before it and tells line noise from forgery; the tag
(truncated HMAC-SHA256 over header and payload) is checked by the link's handshake or session, which
know the keys.

``FrameDecoder`` is the receiving half, pymodbus-framer style: feed it any bytes, in any pieces; it
returns ``DecodedFrame`` and ``RefusedFrame`` items, never raises on input, and holds at most
MAX_ENCODED_FRAME_LEN bytes. Resynchronisation is free: every 0x00 ends whatever came before it, so
garbage before a frame is refused as its own piece (the sender's leading 0x00 cuts it off), garbage
inside a frame breaks that one frame's CRC, and garbage after a frame is refused at the next 0x00.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import NamedTuple

from cobs import cobs

from firmware_protocol.constants import (
    CRC_LEN,
    HEADER_LEN,
    KIND_ACK,
    KIND_DATA,
    KIND_HANDSHAKE,
    KIND_NAK,
    MAX_ENCODED_FRAME_LEN,
    MAX_FRAME_LEN,
    MAX_PAYLOAD_LEN,
    MIN_FRAME_LEN,
    PROTOCOL_V1,
    PROTOCOL_V2,
    SACK_LEN,
    SENDER_CONTROLLER,
    SENDER_DEVICE,
    TAG_LEN,
)
from firmware_protocol.crypto import compute_tag
from firmware_protocol.errors import FrameError

KIND_NAMES: dict[int, str] = {
    KIND_HANDSHAKE: "handshake",
    KIND_DATA: "data",
    KIND_ACK: "ack",
    KIND_NAK: "nak",
}
SENDER_NAMES: dict[int, str] = {SENDER_CONTROLLER: "controller", SENDER_DEVICE: "device"}
_HEADER = struct.Struct(">BBBII")
_CRC = struct.Struct(">I")
_ZERO_TAG = bytes(TAG_LEN)


class Frame(NamedTuple):
    """A frame whose length, CRC, version, kind and sender were checked; its tag is not checked yet.

    A named tuple, not a frozen dataclass: every frame received makes one, and a frozen dataclass's
    ``__init__`` sets each of its eight fields through ``object.__setattr__`` (most of
    ``parse_frame``'s own time; issue 28). Immutable all the same."""

    kind: int
    sender: int
    device_id: int
    seq: int
    payload: bytes
    tag: bytes
    signed: bytes
    """The bytes the tag covers: header and payload."""
    version: int = PROTOCOL_V1
    """The frame's layout: 1 or 2 (a v2 ACK carries a SACK bitmap)."""


def encode_frame(  # noqa: PLR0913 - one argument per field of the frame header
    kind: int,
    sender: int,
    device_id: int,
    seq: int,
    payload: bytes,
    *,
    key: bytes | None,
    version: int = PROTOCOL_V1,
) -> bytes:
    """The wire bytes of one frame, delimiters included. ``key`` None leaves the tag all zeros (only the
    unauthenticated AuthChallenge is sent so)."""
    if len(payload) > MAX_PAYLOAD_LEN:
        raise FrameError("payload_too_long", f"{len(payload)} bytes, at most {MAX_PAYLOAD_LEN}")
    signed = _HEADER.pack(version, kind, sender, device_id, seq) + payload
    body = signed + (compute_tag(key, signed) if key is not None else _ZERO_TAG)
    body += _CRC.pack(zlib.crc32(body))
    encoded: bytes = cobs.encode(body)
    return b"\x00" + encoded + b"\x00"


_BOTH_VERSIONS = (PROTOCOL_V1, PROTOCOL_V2)


def parse_frame(body: bytes, versions: tuple[int, ...] = _BOTH_VERSIONS) -> Frame:
    """Check a COBS-decoded body; FrameError with the docs/protocol.md §12.1 code when it is refused.
    ``versions``: the frame layouts accepted (a v1-only reader passes ``(1,)``)."""
    size = len(body)
    if size < MIN_FRAME_LEN or size > MAX_FRAME_LEN:
        raise FrameError("bad_length", f"{size} bytes, frames are {MIN_FRAME_LEN}..{MAX_FRAME_LEN}")
    (crc,) = _CRC.unpack_from(body, size - CRC_LEN)
    if zlib.crc32(memoryview(body)[: size - CRC_LEN]) != crc:
        raise FrameError("bad_crc", "CRC-32 does not match")
    version, kind, sender, device_id, seq = _HEADER.unpack_from(body)
    if version not in versions:
        spoken = ", ".join(str(number) for number in versions)
        raise FrameError("bad_version", f"version {version}, this side speaks {spoken}")
    if kind not in KIND_NAMES:
        raise FrameError("bad_kind", f"frame kind 0x{kind:02x}")
    if sender not in SENDER_NAMES:
        raise FrameError("bad_sender", f"sender 0x{sender:02x}")
    tag_start = size - CRC_LEN - TAG_LEN
    # Only a v2 ACK carries a payload (its SACK bitmap): one layout per kind and version.
    control_payload = SACK_LEN if (kind == KIND_ACK and version == PROTOCOL_V2) else 0
    if kind in (KIND_ACK, KIND_NAK) and tag_start != HEADER_LEN + control_payload:
        what = f"a v{version} {KIND_NAMES[kind]} frame carries {control_payload} payload bytes"
        raise FrameError("bad_length", what)
    if kind in (KIND_HANDSHAKE, KIND_DATA) and tag_start == HEADER_LEN:
        raise FrameError("bad_length", f"{KIND_NAMES[kind]} frame without a payload")
    return Frame(
        kind=kind,
        sender=sender,
        device_id=device_id,
        seq=seq,
        payload=body[HEADER_LEN:tag_start],
        tag=body[tag_start : size - CRC_LEN],
        signed=body[:tag_start],
        version=version,
    )


def decode_body(encoded: bytes) -> bytes:
    """COBS-decode one piece between delimiters; FrameError ``bad_cobs`` when it is not canonical COBS."""
    try:
        body: bytes = cobs.decode(encoded)
    except cobs.DecodeError as error:
        raise FrameError("bad_cobs", str(error)) from None
    # Only the canonical encoding is accepted, so one frame has exactly one spelling on the wire.
    if cobs.encode(body) != encoded:
        raise FrameError("bad_cobs", "not the canonical COBS encoding")
    return body


class DecodedFrame(NamedTuple):
    """A checked frame and where it began (a named tuple for the reason ``Frame`` is one)."""

    frame: Frame
    offset: int
    """Stream offset of the frame's first COBS byte (after its leading 0x00)."""


@dataclass(frozen=True, slots=True)
class RefusedFrame:
    code: str
    detail: str
    offset: int


class FrameDecoder:
    """Splits a byte stream at 0x00 delimiters into checked frames, holding at most
    MAX_ENCODED_FRAME_LEN bytes. Feed any pieces; the result does not depend on how the stream was cut."""

    def __init__(self, versions: tuple[int, ...] = _BOTH_VERSIONS) -> None:
        self._versions = versions
        self._buffer = bytearray()
        self._start = 0  # stream offset of the first byte in _buffer
        self._consumed = 0  # stream offset of the next byte fed
        self._overflowed = False  # discarding until the next delimiter

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[DecodedFrame | RefusedFrame]:
        results: list[DecodedFrame | RefusedFrame] = []
        pieces = bytes(data).split(b"\x00")
        tail = pieces.pop()  # no delimiter after it: kept for the next feed
        for piece in pieces:  # each ended by a delimiter
            size = len(piece)
            if not self._overflowed:
                held = self._buffer
                if held:
                    if len(held) + size > MAX_ENCODED_FRAME_LEN:
                        results.append(self._too_long())
                    else:
                        results.append(self._finish(bytes(held) + piece, self._start))
                    held.clear()
                elif size > MAX_ENCODED_FRAME_LEN:
                    results.append(self._too_long())
                elif size:
                    # The usual case, a whole frame inside one read: decoded from the piece itself,
                    # not copied through the buffer first (issue 28: the receive path's cost a frame).
                    results.append(self._finish(piece, self._start))
            self._overflowed = False
            self._consumed += size + 1
            self._start = self._consumed
        if not self._overflowed:
            if len(self._buffer) + len(tail) > MAX_ENCODED_FRAME_LEN:
                results.append(self._too_long())
                self._buffer.clear()
                self._overflowed = True
            else:
                self._buffer += tail
        self._consumed += len(tail)
        return results

    def _too_long(self) -> RefusedFrame:
        return RefusedFrame(
            "frame_too_long", f"no delimiter within {MAX_ENCODED_FRAME_LEN} bytes", self._start
        )

    def finish(self) -> list[DecodedFrame | RefusedFrame]:
        """End of stream (or of one capture): treat the bytes held since the last delimiter as a piece
        of their own, so a capture pasted without its final 0x00 still decodes."""
        return self.feed(b"\x00")

    def _finish(self, encoded: bytes, offset: int) -> DecodedFrame | RefusedFrame:
        try:
            return DecodedFrame(parse_frame(decode_body(encoded), self._versions), offset)
        except FrameError as error:
            return RefusedFrame(error.code, error.detail, offset)
