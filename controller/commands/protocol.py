"""`flushtable protocol decode|encode|vectors`: read serial captures, make frames, print test vectors.

decode: standard input is a raw capture, or with --hex hex text in which each line is one capture
(whitespace and colons inside a line are ignored). One JSON line per frame found:
``{"ok": true, "type": ..., "fields": {...}, ...}`` or ``{"ok": false, "error": ..., "offset": N}``;
with --hex each carries ``"line"`` (from 1). --key-file F holds the hex key that verifies tags; when it
is a device key and the capture holds that device's handshake, the session key is derived from the
nonces on the wire and the session's frames are verified too. Refused frames are reported, not
failures: exit 0 once the input was read, 2 for bad usage (a missing or malformed key file).

encode: standard input is JSON, one message a line:
``{"type": "card_dealt", "fields": {...}, "seq": 7, "sender": "device", "device_id": 4660}``
(seq, sender and device_id optional: seq counts from 1 per sender, handshake frames use 0; sender
defaults to who sends that message, the controller for either; device_id defaults to --device-id).
``{"type": "ack", "seq": 7}`` and ``{"type": "nak", "seq": 7}`` make ACK and NAK frames. Output: one hex
line per frame, or with --raw the bytes themselves. Any bad line: nothing is written, exit 2 with the
line number, field and reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from controller.errors import UserError
from firmware_protocol.capture import CaptureDecoder
from firmware_protocol.constants import (
    DEVICE_KEY_LEN,
    KIND_ACK,
    KIND_DATA,
    KIND_HANDSHAKE,
    KIND_NAK,
    SENDER_CONTROLLER,
    SENDER_DEVICE,
)
from firmware_protocol.errors import FieldError
from firmware_protocol.framing import encode_frame
from firmware_protocol.messages import AuthChallenge, message_from_json
from firmware_protocol.vectors import build_vectors, build_vectors_v2

NAME = "protocol"
HELP = "decode serial captures of the firmware protocol, encode messages into frames, print test vectors"

_SENDERS = {"controller": SENDER_CONTROLLER, "device": SENDER_DEVICE}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="protocol_action", metavar="ACTION", required=True)
    decode = actions.add_parser("decode", help="decode a capture from standard input into JSON lines")
    decode.add_argument("--hex", action="store_true", help="input is hex text, one capture a line")
    decode.add_argument("--key-file", metavar="F", help="file holding the hex key that verifies tags")
    encode = actions.add_parser(
        "encode", help="turn JSON messages (one a line) from standard input into frames"
    )
    encode.add_argument("--key-file", metavar="F", required=True, help="file holding the hex key that signs")
    encode.add_argument("--device-id", type=int, default=None, help="device_id for lines that give none")
    encode.add_argument("--raw", action="store_true", help="write the frames' bytes instead of hex lines")
    vectors = actions.add_parser(
        "vectors",
        help="print the protocol test vectors (docs/protocol-vectors.jsonl; --version 2: -v2.jsonl)",
    )
    vectors.add_argument("--version", type=int, choices=(1, 2), default=1, help="the protocol version")


def run(args: argparse.Namespace) -> int:
    action: str = args.protocol_action
    if action == "decode":
        return _decode(args)
    if action == "encode":
        return _encode(args)
    for vector in build_vectors_v2() if args.version == 2 else build_vectors():
        print(json.dumps(vector, ensure_ascii=False))
    return 0


def read_key_file(path: str) -> bytes:
    from controller.files import MAX_KEY_FILE_BYTES, FileRefused, read_bounded_text  # noqa: PLC0415

    try:  # bounded, a regular file only: /dev/zero or a FIFO is refused at once
        text = read_bounded_text(path, limit_bytes=MAX_KEY_FILE_BYTES)
    except FileRefused as refused:
        raise UserError(f"--key-file {path}: cannot read it ({refused.reason})") from None
    digits = "".join(text.split())
    try:
        key = bytes.fromhex(digits)
    except ValueError:
        raise UserError(f"--key-file {path}: is not hex digits") from None
    if len(key) != DEVICE_KEY_LEN:
        raise UserError(
            f"--key-file {path}: key is {len(key)} bytes, must be {DEVICE_KEY_LEN} "
            f"({DEVICE_KEY_LEN * 2} hex digits)"
        )
    return key


def _decode(args: argparse.Namespace) -> int:
    keys = [read_key_file(args.key_file)] if args.key_file else []
    decoder = CaptureDecoder(keys)
    out = sys.stdout
    if not args.hex:
        data = sys.stdin.buffer.read()
        for report in decoder.feed(data) + decoder.finish():
            out.write(json.dumps(report, ensure_ascii=False) + "\n")
        return 0
    for line_number, raw_line in enumerate(sys.stdin.buffer, start=1):
        digits = b"".join(raw_line.split()).replace(b":", b"")  # "00 04 01" or "00:04:01"
        if not digits:
            continue
        try:
            capture = bytes.fromhex(digits.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            refusal: dict[str, Any] = {
                "ok": False,
                "error": "bad_hex",
                "detail": "the line is not hex digits",
                "offset": 0,
            }
            out.write(json.dumps(refusal | {"line": line_number}) + "\n")
            continue
        decoder.new_capture()
        for report in decoder.feed(capture) + decoder.finish():
            out.write(json.dumps(report | {"line": line_number}, ensure_ascii=False) + "\n")
    return 0


def _encode(args: argparse.Namespace) -> int:
    key = read_key_file(args.key_file)
    next_seq = {SENDER_CONTROLLER: 1, SENDER_DEVICE: 1}
    frames: list[bytes] = []
    for line_number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            frames.append(_encode_line(line, key, args.device_id, next_seq))
        except (FieldError, ValueError) as error:
            raise UserError(f"line {line_number}: {error}") from None
    if args.raw:
        sys.stdout.buffer.write(b"".join(frames))
        sys.stdout.buffer.flush()
    else:
        for frame in frames:
            sys.stdout.write(frame.hex() + "\n")
    return 0


def _encode_line(line: str, key: bytes, default_device_id: int | None, next_seq: dict[int, int]) -> bytes:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise FieldError("json", f"not JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(data, dict):
        raise FieldError("json", "each line must be a JSON object")
    device_id = data.get("device_id", default_device_id)
    if device_id is None:
        raise FieldError("device_id", "missing (give it on the line or with --device-id)")
    if not isinstance(device_id, int) or isinstance(device_id, bool) or not 0 <= device_id <= 0xFFFF_FFFF:
        raise FieldError("device_id", f"{device_id!r} is not an integer 0..4294967295")
    kind_name = data.get("type")
    if kind_name in ("ack", "nak"):
        sender = _sender(data.get("sender", "controller"))
        seq = _seq(data.get("seq"))
        kind = KIND_ACK if kind_name == "ack" else KIND_NAK
        return encode_frame(kind, sender, device_id, seq, b"", key=key)
    message = message_from_json(data)
    default_sender = "controller" if message.SENT_BY == "either" else message.SENT_BY
    sender = _sender(data.get("sender", default_sender))
    if message.SENT_BY not in ("either", {SENDER_CONTROLLER: "controller", SENDER_DEVICE: "device"}[sender]):
        raise FieldError("sender", f"{message.NAME} is sent by the {message.SENT_BY}")
    if message.HANDSHAKE:
        seq = _seq(data.get("seq", 0))
        tag_key = None if isinstance(message, AuthChallenge) else key
        return encode_frame(KIND_HANDSHAKE, sender, device_id, seq, message.encode(), key=tag_key)
    seq = _seq(data.get("seq", next_seq[sender]))
    next_seq[sender] = seq + 1
    return encode_frame(KIND_DATA, sender, device_id, seq, message.encode(), key=key)


def _sender(value: object) -> int:
    if value not in _SENDERS:
        raise FieldError("sender", f"{value!r} is not controller or device")
    return _SENDERS[str(value)]


def _seq(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 0xFFFF_FFFF:
        raise FieldError("seq", f"{value!r} is not an integer 0..4294967295")
    return value
