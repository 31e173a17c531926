"""Reading captured traffic: turn a byte stream into one report per frame, as JSON-ready dicts.

This is what ``flushtable protocol decode`` prints and what the test vectors are checked with. It is
stateless about the link (no ACKs, no sequence windows) but it does follow handshakes: when a key it
was given verifies a Hello and the matching AuthConfirm, it derives that session's key from the
nonces on the wire and verifies the frames after it with that key too.

    decoder = CaptureDecoder(keys=[device_or_session_key])     # keys=[] decodes without verifying
                                                               # versions=(1,): read as a v1 device
    for report in decoder.feed(data):
        print(json.dumps(report))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from firmware_protocol.constants import KIND_ACK, KIND_HANDSHAKE, KIND_NAK, PROTOCOL_V1, PROTOCOL_V2, TAG_LEN
from firmware_protocol.crypto import derive_session_key, tag_matches
from firmware_protocol.errors import FieldError
from firmware_protocol.framing import (
    KIND_NAMES,
    SENDER_NAMES,
    DecodedFrame,
    Frame,
    FrameDecoder,
    RefusedFrame,
)
from firmware_protocol.messages import (
    AuthChallenge,
    AuthConfirm,
    AuthConfirmV2,
    Hello,
    HelloV2,
    decode_message,
)

Report = dict[str, Any]


class CaptureDecoder:
    """Feed a captured stream in any pieces; get one report per frame (or refused piece)."""

    def __init__(
        self, keys: Iterable[bytes] = (), versions: tuple[int, ...] = (PROTOCOL_V1, PROTOCOL_V2)
    ) -> None:
        self._keys: list[bytes] = list(keys)
        self._verify = bool(self._keys)
        self._versions = versions
        self._decoder = FrameDecoder(versions)
        self._hellos: dict[int, tuple[bytes, Hello | HelloV2]] = {}  # device_id -> (verifying key, hello)

    def feed(self, data: bytes) -> list[Report]:
        return self._reports(self._decoder.feed(data))

    def finish(self) -> list[Report]:
        """The capture ended: report what is left after the last delimiter as a frame of its own."""
        return self._reports(self._decoder.finish())

    def new_capture(self) -> None:
        """Start the next capture: offsets count from 0 again; keys (and derived session keys) stay."""
        self._decoder = FrameDecoder()

    def _reports(self, items: list[DecodedFrame | RefusedFrame]) -> list[Report]:
        reports: list[Report] = []
        for item in items:
            if isinstance(item, DecodedFrame):
                reports.append(self._report(item))
            else:
                reports.append(
                    {"ok": False, "error": item.code, "detail": item.detail, "offset": item.offset}
                )
        return reports

    def _report(self, decoded: DecodedFrame) -> Report:
        frame = decoded.frame
        verified = False
        if frame.kind == KIND_HANDSHAKE and frame.payload[0] == AuthChallenge.TYPE:
            if frame.tag != bytes(TAG_LEN):
                return _refused("bad_tag", "an auth_challenge's tag must be all zeros", decoded.offset)
            verified = self._verify
        elif self._verify:
            key = self._verifying_key(frame)
            if key is None:
                return _refused("bad_tag", "no key given verifies this frame", decoded.offset)
            verified = True
        report: Report = {
            "ok": True,
            "kind": KIND_NAMES[frame.kind],
            "sender": SENDER_NAMES[frame.sender],
            "device_id": frame.device_id,
            "seq": frame.seq,
        }
        if frame.version != PROTOCOL_V1:
            report["version"] = frame.version  # (v1 reports stay as v1 printed them)
        if frame.kind in (KIND_ACK, KIND_NAK):
            fields = {"sack": frame.payload.hex()} if frame.payload else {}
            report.update(type=KIND_NAMES[frame.kind], fields=fields)
        else:
            try:
                message = decode_message(frame.payload)
            except FieldError as error:
                return _refused("bad_message", str(error), decoded.offset)
            if (frame.kind == KIND_HANDSHAKE) != message.HANDSHAKE:
                where = "a handshake" if frame.kind == KIND_HANDSHAKE else "a data"
                return _refused(
                    "bad_message", f"{message.NAME} does not belong in {where} frame", decoded.offset
                )
            # A handshake message travels in a frame of exactly its version; a data message in a
            # frame of its version or later.
            if frame.version < message.PROTOCOL or (message.HANDSHAKE and frame.version != message.PROTOCOL):
                return _refused(
                    "bad_message",
                    f"{message.NAME} (v{message.PROTOCOL}) in a version {frame.version} frame",
                    decoded.offset,
                )
            if message.SENT_BY not in ("either", SENDER_NAMES[frame.sender]):
                return _refused(
                    "bad_message",
                    f"{message.NAME} is not sent by a {SENDER_NAMES[frame.sender]}",
                    decoded.offset,
                )
            report.update(type=message.NAME, fields=message.fields_json())
            if verified:
                self._follow_handshake(frame, message)
        report["verified"] = verified
        report["offset"] = decoded.offset
        return report

    def _verifying_key(self, frame: Frame) -> bytes | None:
        for key in reversed(self._keys):  # newest (derived session keys) first
            if tag_matches(key, frame.signed, frame.tag):
                return key
        return None

    def _follow_handshake(self, frame: Frame, message: object) -> None:
        if isinstance(message, Hello | HelloV2):
            key = self._verifying_key(frame)
            if key is not None:
                self._hellos[frame.device_id] = (key, message)
        elif isinstance(message, AuthConfirm | AuthConfirmV2) and frame.kind == KIND_HANDSHAKE:
            seen = self._hellos.get(frame.device_id)
            if seen is not None and seen[1].device_nonce == message.device_nonce:
                device_key, hello = seen
                session_key = derive_session_key(
                    device_key, hello.controller_nonce, hello.device_nonce, frame.device_id
                )
                if session_key not in self._keys:
                    self._keys.append(session_key)


def _refused(code: str, detail: str, offset: int) -> Report:
    return {"ok": False, "error": code, "detail": detail, "offset": offset}
