"""`flushtable protocol decode|encode|vectors`, run through the real entry point."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from firmware_protocol.vector_inputs import VECTOR_DEVICE_KEY, VECTOR_SESSION_KEY
from firmware_protocol.vectors import build_vectors, build_vectors_v2


def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str], stdin: bytes
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def key_files(tmp_path: Path) -> tuple[str, str]:
    device = tmp_path / "device.key"
    device.write_text(VECTOR_DEVICE_KEY.hex() + "\n")
    session = tmp_path / "session.key"
    session.write_text(" ".join(VECTOR_SESSION_KEY.hex()[i : i + 8] for i in range(0, 64, 8)))
    return str(device), str(session)


def decode_hex(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key_file: str, lines: list[str]
) -> list[dict[str, Any]]:
    argv = ["protocol", "decode", "--hex", "--key-file", key_file]
    status, out, err = run_cli(monkeypatch, capsys, argv, "\n".join(lines).encode())
    assert status == 0
    assert err == ""
    return [json.loads(line) for line in out.splitlines()]


def test_decode_hex_follows_a_whole_session_from_the_device_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key_files: tuple[str, str]
) -> None:
    valid = [vector for vector in build_vectors() if "message" in vector]
    lines = [vector["frame"] for vector in valid]
    lines[0] = ":".join(lines[0][i : i + 2] for i in range(0, len(lines[0]), 2))  # 00:03:01:...
    lines[1] = " ".join(lines[1][i : i + 2] for i in range(0, len(lines[1]), 2))  # 00 04 01 ...
    reports = decode_hex(monkeypatch, capsys, key_files[0], lines)
    assert [report["line"] for report in reports] == list(range(1, len(valid) + 1))
    for report, vector in zip(reports, valid, strict=True):
        assert report["ok"] is True
        assert report["verified"] is True
        assert (report["type"], report["fields"]) == (vector["message"]["type"], vector["message"]["fields"])
        assert report["offset"] == 1  # each line is its own capture


def test_decode_hex_reports_refusals_with_line_and_offset(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key_files: tuple[str, str]
) -> None:
    # The CLI reads v1 and v2 frames, so the v2 file's refusals are the ones it must make.
    invalid = [v for v in build_vectors_v2() if "error" in v and v["key"] == VECTOR_SESSION_KEY.hex()]
    lines = [vector["frame"] for vector in invalid] + ["not hex", "", "  "]
    reports = decode_hex(monkeypatch, capsys, key_files[1], lines)
    firsts = {report["line"]: report for report in reversed(reports)}
    for number, vector in enumerate(invalid, start=1):
        assert firsts[number]["ok"] is False
        assert firsts[number]["error"] == vector["error"]
        assert isinstance(firsts[number]["offset"], int)
    assert firsts[len(invalid) + 1] == {
        "ok": False,
        "error": "bad_hex",
        "detail": "the line is not hex digits",
        "offset": 0,
        "line": len(invalid) + 1,
    }
    assert max(firsts) == len(invalid) + 1  # blank lines are no captures


def test_decode_raw_with_garbage_and_without_a_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = bytes.fromhex(build_vectors()[5]["frame"])
    status, out, _ = run_cli(
        monkeypatch, capsys, ["protocol", "decode"], b"\x13\x37junk" + frame + b"\xff\xfe"
    )
    assert status == 0
    reports = [json.loads(line) for line in out.splitlines()]
    assert [report["ok"] for report in reports] == [False, True, False]
    assert reports[0]["offset"] == 0
    assert reports[1]["verified"] is False
    assert reports[1]["offset"] == 7


def test_encode_then_decode_round_trips(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key_files: tuple[str, str]
) -> None:
    messages = [
        {"type": "card_dealt", "fields": {"position": 15, "index": 2, "card": 34}},
        {"type": "show_text", "fields": {"text": "Bets locked"}},
        {"type": "ack", "seq": 1, "sender": "device"},
        {"type": "heartbeat", "fields": {"uptime_ms": 5}, "sender": "device", "seq": 40},
    ]
    stdin = "\n".join(json.dumps(message) for message in messages).encode()
    argv = ["protocol", "encode", "--key-file", key_files[1], "--device-id", "4660"]
    status, out, err = run_cli(monkeypatch, capsys, argv, stdin)
    assert (status, err) == (0, "")
    status, decoded, _ = run_cli(
        monkeypatch, capsys, ["protocol", "decode", "--hex", "--key-file", key_files[1]], out.encode()
    )
    reports = [json.loads(line) for line in decoded.splitlines()]
    assert [(r["type"], r["sender"], r["seq"], r["verified"]) for r in reports] == [
        ("card_dealt", "device", 1, True),
        ("show_text", "controller", 1, True),
        ("ack", "device", 1, True),
        ("heartbeat", "device", 40, True),
    ]
    assert reports[0]["fields"] == {"position": 15, "index": 2, "card": 34}


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (
            b'{"type": "card_dealt", "fields": {"position": 1, "index": 0, "card": 52}}',
            "line 1: fields.card: 52 is out of range 0..51",
        ),
        (b'\n{"type": "card_dealt"', "line 2: json: not JSON"),
        (
            b'{"type": "shuffle", "fields": {}, "sender": "device"}',
            "line 1: sender: shuffle is sent by the controller",
        ),
        (b'{"type": "shuffle", "fields": {}}', "line 1: device_id: missing"),
    ],
)
def test_encode_refuses_bad_lines_with_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    key_files: tuple[str, str],
    stdin: bytes,
    message: str,
) -> None:
    argv = ["protocol", "encode", "--key-file", key_files[1]]
    if b"device_id" not in stdin and b'shuffle", "fields": {}}' not in stdin:
        argv += ["--device-id", "1"]
    status, out, err = run_cli(monkeypatch, capsys, argv, stdin)
    assert status == 2
    assert out == ""
    assert err.startswith(f"flushtable protocol: {message}")
    assert err.count("\n") == 1


def test_bad_key_files_are_usage_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    short = tmp_path / "short.key"
    short.write_text("abcd")
    for path, reason in ((str(tmp_path / "missing.key"), "cannot read it"), (str(short), "key is 2 bytes")):
        status, _, err = run_cli(monkeypatch, capsys, ["protocol", "decode", "--key-file", path], b"")
        assert status == 2
        assert reason in err


@pytest.mark.parametrize(
    ("arguments", "file"),
    [([], "protocol-vectors.jsonl"), (["--version", "2"], "protocol-vectors-v2.jsonl")],
)
def test_vectors_command_prints_the_vectors_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], arguments: list[str], file: str
) -> None:
    status, out, _ = run_cli(monkeypatch, capsys, ["protocol", "vectors", *arguments], b"")
    assert status == 0
    committed = (Path(__file__).resolve().parents[2] / "docs" / file).read_text(encoding="utf-8")
    assert out == committed
