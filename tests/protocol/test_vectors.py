"""docs/protocol-vectors.jsonl (v1, read as a v1 device reads) and docs/protocol-vectors-v2.jsonl (v2):
every vector holds, and every single-bit flip of a valid one is refused."""

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
from firmware_protocol.vectors import build_vectors, build_vectors_v2

DOCS = Path(__file__).resolve().parents[2] / "docs"


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DOCS / name).read_text(encoding="utf-8").splitlines()]


VECTORS = load("protocol-vectors.jsonl")
VECTORS_V2 = load("protocol-vectors-v2.jsonl")
VALID = [vector for vector in VECTORS if "message" in vector]
INVALID = [vector for vector in VECTORS if "error" in vector]
VALID_V2 = [vector for vector in VECTORS_V2 if "message" in vector]
INVALID_V2 = [vector for vector in VECTORS_V2 if "error" in vector]
KINDS = {"handshake": KIND_HANDSHAKE, "data": KIND_DATA, "ack": KIND_ACK, "nak": KIND_NAK}
SENDERS = {"controller": 0, "device": 1}
# A v1 file is read as a v1 device reads it (a version-2 frame is bad_version there).
READERS = {1: (1,), 2: (1, 2)}


def decode_one(vector: dict[str, Any], frame: bytes | None = None, version: int = 1) -> list[dict[str, Any]]:
    decoder = CaptureDecoder([bytes.fromhex(vector["key"])], versions=READERS[version])
    return decoder.feed(bytes.fromhex(vector["frame"]) if frame is None else frame) + decoder.finish()


def test_the_files_are_what_the_builders_make() -> None:
    assert build_vectors() == VECTORS, (
        "regenerate with: flushtable protocol vectors > docs/protocol-vectors.jsonl"
    )
    assert build_vectors_v2() == VECTORS_V2, (
        "regenerate with: flushtable protocol vectors --version 2 > docs/protocol-vectors-v2.jsonl"
    )


def test_every_message_type_ack_and_nak_have_a_valid_vector() -> None:
    covered = {vector["message"]["type"] for vector in VALID}
    v1_names = {name for name, cls in MESSAGE_CLASSES_BY_NAME.items() if cls.PROTOCOL == 1}
    assert covered == v1_names | {"ack", "nak"}
    assert len(INVALID) >= 20
    covered_v2 = {vector["message"]["type"] for vector in VALID_V2}
    assert covered_v2 == set(MESSAGE_CLASSES_BY_NAME) - {"hello", "auth_confirm"} | {"ack", "nak"}
    assert len(INVALID_V2) >= 20


BOTH_VALID = [(1, vector) for vector in VALID] + [(2, vector) for vector in VALID_V2]
BOTH_INVALID = [(1, vector) for vector in INVALID] + [(2, vector) for vector in INVALID_V2]


@pytest.mark.parametrize(
    ("version", "vector"), BOTH_VALID, ids=[f"v{v} {vector['description']}" for v, vector in BOTH_VALID]
)
def test_valid_vector_decodes_to_its_message_and_re_encodes_to_its_frame(
    version: int, vector: dict[str, Any]
) -> None:
    [report] = decode_one(vector, version=version)
    assert report["ok"] is True, report
    assert report["verified"] is True
    expected = vector["message"]
    assert {key: report[key] for key in expected} == expected
    # Independent re-encoding from the JSON alone.
    kind = KINDS[expected["kind"]]
    payload = bytes.fromhex(expected["fields"].get("sack", ""))
    key: bytes | None = bytes.fromhex(vector["key"])
    if expected["type"] not in ("ack", "nak"):
        message = message_from_json(expected)
        payload = message.encode()
        if isinstance(message, AuthChallenge):
            key = None
    frame = encode_frame(
        kind,
        SENDERS[expected["sender"]],
        expected["device_id"],
        expected["seq"],
        payload,
        key=key,
        version=expected.get("version", 1),
    )
    assert frame.hex() == vector["frame"]


@pytest.mark.parametrize(
    ("version", "vector"), BOTH_INVALID, ids=[f"v{v} {vector['description']}" for v, vector in BOTH_INVALID]
)
def test_invalid_vector_is_refused_with_its_error(version: int, vector: dict[str, Any]) -> None:
    reports = decode_one(vector, version=version)
    assert reports
    assert all(report["ok"] is False for report in reports)
    assert reports[0]["error"] == vector["error"]


@pytest.mark.parametrize("valid", [VALID, VALID_V2], ids=["v1", "v2"])
def test_the_session_key_in_the_vectors_is_the_hkdf_of_the_handshake(valid: list[dict[str, Any]]) -> None:
    challenge, hello, confirm = valid[:3]
    session_key = derive_session_key(
        bytes.fromhex(hello["key"]),
        bytes.fromhex(challenge["message"]["fields"]["controller_nonce"]),
        bytes.fromhex(hello["message"]["fields"]["device_nonce"]),
        hello["message"]["device_id"],
    )
    assert confirm["session_key"] == session_key.hex()
    assert all(vector["key"] == session_key.hex() for vector in valid[3:])


@pytest.mark.parametrize("valid", [VALID, VALID_V2], ids=["v1", "v2"])
def test_a_device_key_and_the_whole_capture_verify_the_session_too(valid: list[dict[str, Any]]) -> None:
    capture = b"".join(bytes.fromhex(vector["frame"]) for vector in valid)
    decoder = CaptureDecoder([bytes.fromhex(valid[0]["key"])])
    reports = decoder.feed(capture)
    assert len(reports) == len(valid)
    assert all(report["ok"] and report["verified"] for report in reports)


@pytest.mark.parametrize(("valid", "version"), [(VALID, 1), (VALID_V2, 2)], ids=["v1", "v2"])
def test_every_single_bit_flip_of_every_valid_vector_is_refused(
    valid: list[dict[str, Any]], version: int
) -> None:
    flips = 0
    for vector in valid:
        frame = bytes.fromhex(vector["frame"])
        decoder = CaptureDecoder([bytes.fromhex(vector["key"])], versions=READERS[version])
        for bit in range(len(frame) * 8):
            damaged = bytearray(frame)
            damaged[bit // 8] ^= 1 << (bit % 8)
            decoder.new_capture()
            reports = decoder.feed(bytes(damaged)) + decoder.finish()
            accepted = [report for report in reports if report["ok"]]
            assert not accepted, f"{vector['description']}: bit {bit} flipped was accepted: {accepted}"
            flips += 1
    assert flips > 10_000
