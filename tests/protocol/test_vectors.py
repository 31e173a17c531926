"""docs/protocol-vectors.jsonl: every vector holds, and every single-bit flip of a valid one is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from firmware_protocol.capture import CaptureDecoder
from firmware_protocol.constants import KIND_ACK, KIND_DATA, KIND_HANDSHAKE, KIND_NAK
from firmware_protocol.crypto import derive_session_key
from firmware_protocol.framing import encode_frame
from firmware_protocol.messages import MESSAGE_CLASSES_BY_NAME, AuthChallenge, message_from_json
from firmware_protocol.vectors import build_vectors

VECTORS_PATH = Path(__file__).resolve().parents[2] / "docs" / "protocol-vectors.jsonl"
VECTORS: list[dict[str, Any]] = [
    json.loads(line) for line in VECTORS_PATH.read_text(encoding="utf-8").splitlines()
]
VALID = [vector for vector in VECTORS if "message" in vector]
INVALID = [vector for vector in VECTORS if "error" in vector]
KINDS = {"handshake": KIND_HANDSHAKE, "data": KIND_DATA, "ack": KIND_ACK, "nak": KIND_NAK}
SENDERS = {"controller": 0, "device": 1}


def decode_one(vector: dict[str, Any], frame: bytes | None = None) -> list[dict[str, Any]]:
    decoder = CaptureDecoder([bytes.fromhex(vector["key"])])
    return decoder.feed(bytes.fromhex(vector["frame"]) if frame is None else frame) + decoder.finish()


def test_the_file_is_what_the_builder_makes() -> None:
    assert build_vectors() == VECTORS, (
        "regenerate with: flushtable protocol vectors > docs/protocol-vectors.jsonl"
    )


def test_every_message_type_ack_and_nak_have_a_valid_vector() -> None:
    covered = {vector["message"]["type"] for vector in VALID}
    assert covered == set(MESSAGE_CLASSES_BY_NAME) | {"ack", "nak"}
    assert len(INVALID) >= 20


@pytest.mark.parametrize("vector", VALID, ids=[vector["description"] for vector in VALID])
def test_valid_vector_decodes_to_its_message_and_re_encodes_to_its_frame(vector: dict[str, Any]) -> None:
    [report] = decode_one(vector)
    assert report["ok"] is True, report
    assert report["verified"] is True
    expected = vector["message"]
    assert {key: report[key] for key in expected} == expected
    # Independent re-encoding from the JSON alone.
    kind = KINDS[expected["kind"]]
    payload = b""
    key: bytes | None = bytes.fromhex(vector["key"])
    if expected["type"] not in ("ack", "nak"):
        message = message_from_json(expected)
        payload = message.encode()
        if isinstance(message, AuthChallenge):
            key = None
    frame = encode_frame(
        kind, SENDERS[expected["sender"]], expected["device_id"], expected["seq"], payload, key=key
    )
    assert frame.hex() == vector["frame"]


@pytest.mark.parametrize("vector", INVALID, ids=[vector["description"] for vector in INVALID])
def test_invalid_vector_is_refused_with_its_error(vector: dict[str, Any]) -> None:
    reports = decode_one(vector)
    assert reports
    assert all(report["ok"] is False for report in reports)
    assert reports[0]["error"] == vector["error"]


def test_the_session_key_in_the_vectors_is_the_hkdf_of_the_handshake() -> None:
    challenge, hello, confirm = VALID[:3]
    session_key = derive_session_key(
        bytes.fromhex(hello["key"]),
        bytes.fromhex(challenge["message"]["fields"]["controller_nonce"]),
        bytes.fromhex(hello["message"]["fields"]["device_nonce"]),
        hello["message"]["device_id"],
    )
    assert confirm["session_key"] == session_key.hex()
    assert all(vector["key"] == session_key.hex() for vector in VALID[3:])


def test_a_device_key_and_the_whole_capture_verify_the_session_too() -> None:
    capture = b"".join(bytes.fromhex(vector["frame"]) for vector in VALID)
    decoder = CaptureDecoder([bytes.fromhex(VALID[0]["key"])])
    reports = decoder.feed(capture)
    assert len(reports) == len(VALID)
    assert all(report["ok"] and report["verified"] for report in reports)


def test_every_single_bit_flip_of_every_valid_vector_is_refused() -> None:
    flips = 0
    for vector in VALID:
        frame = bytes.fromhex(vector["frame"])
        decoder = CaptureDecoder([bytes.fromhex(vector["key"])])
        for bit in range(len(frame) * 8):
            damaged = bytearray(frame)
            damaged[bit // 8] ^= 1 << (bit % 8)
            decoder.new_capture()
            reports = decoder.feed(bytes(damaged)) + decoder.finish()
            accepted = [report for report in reports if report["ok"]]
            assert not accepted, f"{vector['description']}: bit {bit} flipped was accepted: {accepted}"
            flips += 1
    assert flips > 10_000
