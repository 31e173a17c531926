"""Session alone: frames sealed by one side's session and checked by the other's, the messages each
side may send, when an ACK is due, and the session's clocks (silence, heartbeat, NAK holdoff)."""

from __future__ import annotations

import pytest

from firmware_protocol import (
    AuthChallenge,
    CardDealt,
    DealRequest,
    Heartbeat,
    SecurityAlert,
    ShowText,
    StatusQuery,
)
from firmware_protocol.constants import (
    HEARTBEAT_INTERVAL_S,
    KIND_ACK,
    KIND_NAK,
    LINK_SILENCE_TIMEOUT_S,
    NAK_HOLDOFF_S,
    PROTOCOL_V1,
    PROTOCOL_V2,
)
from firmware_protocol.events import Role
from firmware_protocol.framing import DecodedFrame, Frame, FrameDecoder
from firmware_protocol.messages import Hello
from firmware_protocol.session import Session
from tests.protocol.helpers import DEVICE_ID, IDENTITY

SESSION_KEY = bytes(range(32))
HELLO = Hello(
    device_kind=IDENTITY.device_kind,
    protocol_version=PROTOCOL_V1,
    model=IDENTITY.model,
    serial_number=IDENTITY.serial_number,
    firmware_version=IDENTITY.firmware_version,
    device_nonce=bytes(16),
    controller_nonce=bytes(range(16)),
)


def knows_only_ours(device_id: int) -> bool:
    return device_id == DEVICE_ID


def session(
    role: Role, *, version: int = PROTOCOL_V2, key: bytes = SESSION_KEY, now_s: float = 0.0
) -> Session:
    return Session(role, DEVICE_ID, HELLO, key, version=version, window=8, now_s=now_s, knows=knows_only_ours)


def frame_of(wire: bytes) -> Frame:
    [decoded] = FrameDecoder().feed(wire)
    assert isinstance(decoded, DecodedFrame)
    return decoded.frame


@pytest.mark.parametrize("version", [PROTOCOL_V1, PROTOCOL_V2])
def test_what_one_side_seals_the_other_accepts(version: int) -> None:
    controller, device = session(Role.CONTROLLER, version=version), session(Role.DEVICE, version=version)
    for wire in (
        device.seal_message(1, CardDealt(position=1, index=0, card=3)),
        device.seal(KIND_ACK, 4, bytes(4) if version == PROTOCOL_V2 else b""),
        device.seal(KIND_NAK, 5),
    ):
        frame = frame_of(wire)
        assert frame.version == version
        assert controller.accept(frame, 0.0) is None


def test_a_frame_of_another_key_device_or_version_is_refused() -> None:
    controller = session(Role.CONTROLLER)
    forged = frame_of(session(Role.DEVICE, key=bytes(32)).seal(KIND_ACK, 1, bytes(4)))
    alert = controller.accept(forged, 0.0)
    assert alert == SecurityAlert("bad_tag", "ack seq 1", DEVICE_ID)
    other = Session(
        Role.DEVICE, 0x99, HELLO, SESSION_KEY, version=PROTOCOL_V2, window=8, now_s=0.0, knows=knows_only_ours
    )
    other_frame = frame_of(other.seal(KIND_NAK, 1))
    unknown = controller.accept(other_frame, 0.0)
    assert isinstance(unknown, SecurityAlert)
    assert unknown.reason == "unknown_device"
    trusting = Session(
        Role.CONTROLLER,
        DEVICE_ID,
        HELLO,
        SESSION_KEY,
        version=PROTOCOL_V2,
        window=8,
        now_s=0.0,
        knows=lambda _: True,
    )
    wrong = trusting.accept(other_frame, 0.0)
    assert isinstance(wrong, SecurityAlert)
    assert wrong.reason == "wrong_device"
    v1_frame = frame_of(session(Role.DEVICE, version=PROTOCOL_V1).seal(KIND_NAK, 1))
    assert controller.accept(v1_frame, 0.0) == "bad_version"


def test_each_side_sends_only_its_own_messages_of_the_sessions_version() -> None:
    controller_v1 = session(Role.CONTROLLER, version=PROTOCOL_V1)
    assert controller_v1.refuse_to_send(ShowText(text="hi")) is None
    assert controller_v1.refuse_to_send(Heartbeat(uptime_ms=1)) is None
    assert "sent by the device" in (
        controller_v1.refuse_to_send(CardDealt(position=1, index=0, card=0)) or ""
    )
    assert "belongs to the handshake" in (controller_v1.refuse_to_send(AuthChallenge(bytes(16))) or "")
    assert "is a v2 message" in (controller_v1.refuse_to_send(StatusQuery()) or "")
    assert session(Role.CONTROLLER).refuse_to_send(StatusQuery()) is None


def test_a_delivered_payload_is_admitted_only_as_a_message_the_peer_may_send() -> None:
    controller, device = session(Role.CONTROLLER, version=PROTOCOL_V1), session(Role.DEVICE)
    card = CardDealt(position=1, index=0, card=3)
    assert controller.admit(card.encode()) == card
    assert controller.admit(ShowText(text="hi").encode()) == "show_text is not sent by a device"
    assert controller.admit(bytes([0xEE])) == "type: unknown message type 0xee"
    assert device.admit(DealRequest(positions=((1, 2),)).encode()) == DealRequest(positions=((1, 2),))
    assert session(Role.DEVICE, version=PROTOCOL_V1).admit(StatusQuery().encode()) == (
        "status_query is not a v1 message"
    )


def test_v1_acknowledges_at_once_and_v2_once_per_read() -> None:
    v1, v2 = session(Role.DEVICE, version=PROTOCOL_V1), session(Role.DEVICE)
    assert v1.ack_at_once()
    assert not v1.take_owed_ack()
    assert not v2.take_owed_ack()
    assert not v2.ack_at_once()
    assert not v2.ack_at_once()  # a second frame of the same read: still one ACK
    assert v2.take_owed_ack()
    assert not v2.take_owed_ack()


def test_the_sessions_clocks() -> None:
    clocks = session(Role.CONTROLLER, now_s=10.0)
    assert clocks.deadline_s() == 10.0 + min(LINK_SILENCE_TIMEOUT_S, HEARTBEAT_INTERVAL_S)
    assert not clocks.idle(10.0 + HEARTBEAT_INTERVAL_S / 2)
    assert clocks.idle(10.0 + HEARTBEAT_INTERVAL_S)
    clocks.wrote(11.0)
    assert not clocks.idle(11.0 + HEARTBEAT_INTERVAL_S / 2)
    assert clocks.silent(10.0 + LINK_SILENCE_TIMEOUT_S)
    clocks.accept(frame_of(session(Role.DEVICE).seal(KIND_NAK, 1)), 12.0)  # the peer is heard
    assert not clocks.silent(10.0 + LINK_SILENCE_TIMEOUT_S)
    assert clocks.deadline_s() == min(12.0 + LINK_SILENCE_TIMEOUT_S, 11.0 + HEARTBEAT_INTERVAL_S)


def test_one_nak_per_holdoff() -> None:
    clocks = session(Role.DEVICE)
    assert clocks.nak_allowed(1.0)
    assert not clocks.nak_allowed(1.0 + NAK_HOLDOFF_S / 2)
    assert clocks.nak_allowed(1.0 + NAK_HOLDOFF_S)
