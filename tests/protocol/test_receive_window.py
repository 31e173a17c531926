"""ReceiveWindow alone: what each DATA seq is (in order, a copy, after a gap, a replay, too far ahead),
delivery in order once each, the v2 ACK's bitmap, and the peer's stream across sessions.

Payloads are plain bytes: the window never looks inside them."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_protocol.constants import FIRST_SEQ, SACK_LEN
from firmware_protocol.events import NO_STREAM
from firmware_protocol.receive_window import Arrival, ReceiveWindow

STREAM_A = bytes(range(1, 9))
STREAM_B = bytes(range(11, 19))


def payload(seq: int) -> bytes:
    return f"payload {seq}".encode()


def take(receive: ReceiveWindow, seq: int, window: int) -> tuple[Arrival, list[int]]:
    """Feed one frame as the Link does; what it was and the seqs delivered."""
    arrival = receive.classify(seq, window)
    if arrival is Arrival.IN_ORDER:
        delivered = receive.deliver(seq, payload(seq))
        assert all(data == payload(number) for number, data in delivered)
        return arrival, [number for number, _ in delivered]
    if arrival is Arrival.AFTER_GAP:
        receive.hold(seq, payload(seq))
    return arrival, []


def test_v1_delivers_in_order_and_recognises_the_peers_retransmission() -> None:
    receive = ReceiveWindow()
    assert take(receive, 1, 1) == (Arrival.IN_ORDER, [1])
    assert take(receive, 1, 1) == (Arrival.DUPLICATE, [])  # our ACK was lost
    assert take(receive, 2, 1) == (Arrival.IN_ORDER, [2])
    assert take(receive, 1, 1) == (Arrival.REPLAY, [])  # more than one window behind
    assert take(receive, 4, 1) == (Arrival.BEYOND_WINDOW, [])
    assert receive.last_delivered_seq == 2
    assert receive.next_expected_seq == 3


def test_nothing_before_the_first_seq_is_ever_a_copy() -> None:
    receive = ReceiveWindow()
    assert receive.classify(FIRST_SEQ - 1, 8) is Arrival.REPLAY


def test_v2_holds_frames_after_a_gap_and_releases_them_in_order_when_it_is_filled() -> None:
    receive = ReceiveWindow()
    assert take(receive, 3, 8) == (Arrival.AFTER_GAP, [])
    assert take(receive, 3, 8) == (Arrival.HELD_ALREADY, [])
    assert take(receive, 5, 8) == (Arrival.AFTER_GAP, [])
    assert receive.held_count == 2
    # Cumulative 0 (nothing delivered); bit 1 = seq 3, bit 3 = seq 5.
    assert receive.selective_bitmap() == (0b1010).to_bytes(SACK_LEN, "big")
    assert take(receive, 1, 8) == (Arrival.IN_ORDER, [1])
    assert receive.selective_bitmap() == (0b101).to_bytes(SACK_LEN, "big")
    assert take(receive, 2, 8) == (Arrival.IN_ORDER, [2, 3])
    assert take(receive, 4, 8) == (Arrival.IN_ORDER, [4, 5])
    assert receive.held_count == 0
    assert receive.selective_bitmap() == bytes(SACK_LEN)
    assert take(receive, 14, 8) == (Arrival.BEYOND_WINDOW, [])  # delivered 5, window 8
    assert take(receive, 13, 8) == (Arrival.AFTER_GAP, [])


def test_a_lost_session_forgets_the_held_frames_but_not_what_was_delivered() -> None:
    receive = ReceiveWindow()
    take(receive, 1, 8)
    take(receive, 3, 8)
    receive.drop_held()
    assert receive.held_count == 0
    assert receive.last_delivered_seq == 1
    assert receive.classify(3, 8) is Arrival.AFTER_GAP


def test_a_known_stream_resumes_where_it_was_and_a_new_one_where_the_peer_says() -> None:
    receive = ReceiveWindow()
    assert receive.claim(STREAM_A) == (NO_STREAM, 0)
    assert not receive.peer_restarted(STREAM_A)  # we never delivered from any stream
    receive.follow(STREAM_A, 10)
    assert receive.next_expected_seq == 10
    take(receive, 10, 8)
    take(receive, 12, 8)
    assert receive.claim(STREAM_A) == (STREAM_A, 10)
    assert receive.claim(STREAM_B) == (NO_STREAM, 0)
    receive.follow(STREAM_A, 1)  # the same stream: our position stands, the held frame is gone
    assert receive.last_delivered_seq == 10
    assert receive.held_count == 0
    assert receive.peer_restarted(STREAM_B)
    receive.follow(STREAM_B, 1)
    assert receive.stream_id == STREAM_B
    assert receive.last_delivered_seq == 0


def test_a_v1_session_remembers_no_stream() -> None:
    receive = ReceiveWindow()
    receive.follow(STREAM_A, 50)
    take(receive, 50, 8)
    receive.forget()
    assert receive.stream_id == NO_STREAM
    assert receive.claim(NO_STREAM) == (NO_STREAM, 0)
    assert take(receive, 1, 1) == (Arrival.IN_ORDER, [1])


@settings(max_examples=300, deadline=None)
@given(
    window=st.integers(1, 8),
    count=st.integers(1, 40),
    shuffles=st.randoms(use_true_random=False),
    copies=st.integers(0, 3),
)
def test_every_seq_is_delivered_once_and_in_order_whatever_the_order_within_the_window(
    window: int, count: int, shuffles: random.Random, copies: int
) -> None:
    """A sender with ``window`` frames in flight: each round it sends (again) every frame in its
    window, shuffled, some more than once; the window delivers 1..count exactly once each, in order."""
    receive = ReceiveWindow()
    delivered: list[int] = []
    while receive.last_delivered_seq < count:
        first = receive.next_expected_seq
        in_flight = list(range(first, min(first + window, count + 1))) * (1 + copies)
        shuffles.shuffle(in_flight)
        for seq in in_flight:
            arrival, seqs = take(receive, seq, window)
            assert arrival not in (Arrival.REPLAY, Arrival.BEYOND_WINDOW)
            delivered += seqs
    assert delivered == list(range(1, count + 1))
