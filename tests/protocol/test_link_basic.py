"""The Link over a perfect wire: handshake, delivery, acknowledgement, heartbeats, timeouts."""

from __future__ import annotations

import pytest

from firmware_protocol import (
    NEED_DATA,
    CardDealt,
    DealRequest,
    Heartbeat,
    LinkDown,
    LinkError,
    LinkState,
    LinkUp,
    MessageAcked,
    MessageReceived,
    Shuffle,
)
from firmware_protocol.constants import (
    ACK_TIMEOUT_S,
    HEARTBEAT_INTERVAL_S,
    LINK_SILENCE_TIMEOUT_S,
    MAX_RETRIES,
)
from tests.protocol.helpers import DEVICE_ID, IDENTITY, connected_pair, drain, exchange, make_pair


def test_handshake_brings_both_sides_up_with_the_device_identity() -> None:
    controller, device = make_pair()
    controller.connect(0.0)
    exchange(controller, device, 0.0)
    [up] = drain(controller)
    assert isinstance(up, LinkUp)
    assert up.device_id == DEVICE_ID
    assert up.hello.serial_number == IDENTITY.serial_number
    assert up.hello.device_kind == "shuffler"
    assert isinstance(device.next_event(), LinkUp)
    assert device.next_event() is NEED_DATA


def test_messages_flow_both_ways_and_are_acknowledged() -> None:
    controller, device = connected_pair()
    seq = controller.send(DealRequest(positions=((1, 7), (0, 7))), 0.1)
    exchange(controller, device, 0.1)
    assert drain(device) == [MessageReceived(DealRequest(positions=((1, 7), (0, 7))), seq)]
    assert drain(controller) == [MessageAcked(seq)]
    seqs = [device.send(CardDealt(position=1, index=i, card=i), 0.2) for i in range(3)]
    exchange(controller, device, 0.2, rounds=10)
    assert drain(controller) == [
        MessageReceived(CardDealt(position=1, index=i, card=i), s) for i, s in enumerate(seqs)
    ]
    assert drain(device) == [MessageAcked(s) for s in seqs]


def test_send_refuses_when_not_up_or_wrong_direction() -> None:
    controller, _device = make_pair()
    with pytest.raises(LinkError, match="not up"):
        controller.send(Shuffle(), 0.0)
    controller, _device = connected_pair()
    with pytest.raises(LinkError, match="sent by the device"):
        controller.send(CardDealt(position=1, index=0, card=0), 0.0)


def test_heartbeats_keep_an_idle_link_up_and_are_not_delivered() -> None:
    controller, device = connected_pair()
    now_s = 0.0
    for _ in range(40):
        now_s += 0.25
        controller.handle_timers(now_s)
        device.handle_timers(now_s)
        exchange(controller, device, now_s)
    assert controller.is_up
    assert device.is_up
    assert drain(controller) == []
    assert drain(device) == []
    assert controller.stats.frames_sent > 5


def test_silence_takes_the_link_down_after_missed_heartbeats() -> None:
    controller, _device = connected_pair()
    now_s = 0.0
    while now_s < LINK_SILENCE_TIMEOUT_S + 1:
        now_s += 0.1
        controller.handle_timers(now_s)
        controller.bytes_to_send()  # into the void
    events = drain(controller)
    assert isinstance(events[-1], LinkDown)
    assert controller.state is LinkState.DOWN
    assert events[-1].reason in ("heartbeat_missed", "no_ack")


def test_unacknowledged_message_is_retried_then_the_link_goes_down() -> None:
    controller, _device = connected_pair()
    seq = controller.send(Shuffle(), 0.0)
    sends = [controller.bytes_to_send()]
    now_s = 0.0
    for _ in range(MAX_RETRIES + 1):
        now_s += ACK_TIMEOUT_S
        controller.handle_timers(now_s)
        sends.append(controller.bytes_to_send())
    assert sends[0] == sends[1] == sends[2] == sends[3]  # the same frame, retransmitted as it was
    assert now_s < HEARTBEAT_INTERVAL_S * 3
    [down] = drain(controller)
    assert down == LinkDown("no_ack", ((seq, Shuffle()),))


def test_heartbeat_is_a_real_message() -> None:
    assert Heartbeat(uptime_ms=5).encode() == b"\x08\x00\x00\x00\x05"
