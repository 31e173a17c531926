"""The Link over a perfect wire: handshake, delivery, acknowledgement, heartbeats, timeouts."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_protocol import (
    NEED_DATA,
    CardDealt,
    DealRequest,
    Heartbeat,
    Link,
    LinkDown,
    LinkError,
    LinkEvent,
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
    [down] = drain(controller)
    assert down == LinkDown("heartbeat_missed", ())
    assert controller.state is LinkState.DOWN


def test_the_verdict_comes_when_the_heartbeat_and_its_retries_go_unanswered() -> None:
    _controller, device = connected_pair()
    now_s = 0.0
    while device.is_up:
        now_s = round(now_s + 0.01, 2)
        device.handle_timers(now_s)
        device.bytes_to_send()  # the controller is gone
    # idle for HEARTBEAT_INTERVAL_S, then the heartbeat and MAX_RETRIES retransmissions
    assert now_s == HEARTBEAT_INTERVAL_S + (MAX_RETRIES + 1) * ACK_TIMEOUT_S
    assert drain(device) == [LinkDown("heartbeat_missed", ())]


def test_silence_past_the_timeout_is_a_verdict_even_when_timers_run_late() -> None:
    controller, _device = connected_pair()
    controller.handle_timers(LINK_SILENCE_TIMEOUT_S + 0.5)  # the process was stalled
    assert drain(controller) == [LinkDown("heartbeat_missed", ())]


@pytest.mark.parametrize("version", [1, 2])
def test_unacknowledged_message_is_retried_then_the_link_goes_down(version: int) -> None:
    controller, _device = connected_pair(version=version)
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
    if version == 1:
        assert down == LinkDown("no_ack", ((seq, Shuffle()),))  # handed back to the application
    else:
        assert down == LinkDown("no_ack", ())  # kept by the link, resent after the next handshake
        assert controller.pending_count == 1


def test_heartbeat_is_a_real_message() -> None:
    assert Heartbeat(uptime_ms=5).encode() == b"\x08\x00\x00\x00\x05"


@settings(max_examples=30, deadline=None)
@given(cuts=st.lists(st.integers(0, 10_000), max_size=12), byte_at_a_time=st.booleans())
def test_a_link_fed_in_any_pieces_behaves_the_same(cuts: list[int], byte_at_a_time: bool) -> None:
    def session(feed: Callable[[Link, bytes, float], None]) -> tuple[list[LinkEvent], list[LinkEvent], bytes]:
        controller, device = make_pair(seed=3)
        controller.connect(0.0)
        wire = bytearray()
        for step in range(12):
            now_s = step * 0.01
            if step == 4:
                device.send(CardDealt(position=2, index=0, card=7), now_s)
                controller.send(Shuffle(), now_s)
            if step == 7:
                device.send(CardDealt(position=2, index=1, card=8), now_s)
            to_device, to_controller = controller.bytes_to_send(), device.bytes_to_send()
            wire += to_device + to_controller
            feed(device, to_device, now_s)
            feed(controller, to_controller, now_s)
        return drain(controller), drain(device), bytes(wire)

    def whole(link: Link, data: bytes, now_s: float) -> None:
        link.receive_data(data, now_s)

    def in_pieces(link: Link, data: bytes, now_s: float) -> None:
        if byte_at_a_time:
            pieces = [data[i : i + 1] for i in range(len(data))]
        else:
            points = sorted({cut % (len(data) + 1) for cut in cuts})
            pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
        for piece in pieces:
            link.receive_data(piece, now_s)

    expected = session(whole)
    assert len([e for e in expected[0] if isinstance(e, MessageReceived)]) == 2
    assert session(in_pieces) == expected
