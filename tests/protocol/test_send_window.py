"""SendWindow alone: numbering, the window, v1 and v2 ACKs (cumulative, with the selective bitmap),
what goes again on a timer or a NAK, and what a handshake does to the stream across sessions.

No frames and no keys: ``encode`` here names the frame by its seq, so each test reads which frames the
window put on the line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_protocol import CardDealt, Heartbeat, Message
from firmware_protocol.constants import ACK_TIMEOUT_S, ANY_DEVICE_ID, FIRST_SEQ, MAX_RETRIES
from firmware_protocol.events import NO_STREAM
from firmware_protocol.send_window import SendWindow

STREAM_A = bytes(range(1, 9))
STREAM_B = bytes(range(11, 19))


def encode(seq: int, message: Message) -> bytes:
    return f"frame {seq}".encode()


def card(index: int) -> CardDealt:
    return CardDealt(position=1, index=index % 7, card=index % 52)


def window_with(count: int, *, window: int = 8, now_s: float = 0.0) -> SendWindow:
    """A window with ``count`` cards added and as many in flight as ``window`` allows."""
    send = SendWindow()
    for index in range(count):
        send.add(card(index), internal=False)
    send.fill(window, now_s, encode)
    return send


def test_messages_are_numbered_from_the_first_seq_and_go_out_while_the_window_has_room() -> None:
    send = SendWindow()
    seqs = [send.add(card(index), internal=False) for index in range(5)]
    assert seqs == [FIRST_SEQ + index for index in range(5)]
    assert send.fill(3, 0.0, encode) == [b"frame 1", b"frame 2", b"frame 3"]
    assert send.fill(3, 0.0, encode) == []  # the window is full
    assert send.pending_count == 5
    assert send.queued_count == 2
    assert send.first_unacknowledged_seq == 1


def test_a_v1_ack_must_name_exactly_the_frame_in_flight() -> None:
    send = window_with(2, window=1)
    assert send.acknowledge(2, None) is None  # not in flight yet
    assert send.acknowledge(0, None) is None  # acknowledges nothing: stale in v1
    assert send.acknowledge(1, None) == [1]
    assert send.fill(1, 0.1, encode) == [b"frame 2"]


def test_a_v2_ack_is_cumulative_and_a_stale_one_changes_nothing() -> None:
    send = window_with(5)
    assert send.acknowledge(6, 0) is None  # beyond the last frame in flight
    assert send.acknowledge(3, 0) == [1, 2, 3]
    assert send.acknowledge(1, 0) is None  # behind the first frame still in flight
    assert send.acknowledge(3, 0) == []  # a repeated ACK: nothing more, and not stale
    assert send.first_unacknowledged_seq == 4
    assert send.acknowledge(5, 0) == [4, 5]
    assert send.idle


def test_the_bitmap_spares_the_frames_the_peer_holds_from_the_timer_and_from_a_nak() -> None:
    send = window_with(5, now_s=0.0)
    # Cumulative 1, bitmap bit 0 = seq 3 and bit 2 = seq 5: the peer lacks 2 and 4.
    assert send.acknowledge(1, 0b101) == [1]
    assert [item.seq for item in send.expired(ACK_TIMEOUT_S)] == [2, 4]
    assert send.nak_target(3) is None
    target = send.nak_target(2)
    assert target is not None
    assert target.seq == 2
    assert send.deadline_s() == ACK_TIMEOUT_S


def test_a_frame_goes_again_until_its_retries_are_spent() -> None:
    send = window_with(1, now_s=0.0)
    assert send.expired(ACK_TIMEOUT_S / 2) == []
    now_s = 0.0
    for _ in range(MAX_RETRIES):
        now_s += ACK_TIMEOUT_S
        [item] = send.expired(now_s)
        assert send.resend(item, now_s) == b"frame 1"
        assert send.deadline_s() == now_s + ACK_TIMEOUT_S  # its timer restarted
    now_s += ACK_TIMEOUT_S
    [item] = send.expired(now_s)
    assert send.resend(item, now_s) is None


def test_heartbeats_are_numbered_but_never_reported_as_acknowledged_or_given_up() -> None:
    send = SendWindow()
    send.add(Heartbeat(uptime_ms=1), internal=True)
    send.add(card(0), internal=False)
    send.add(Heartbeat(uptime_ms=2), internal=True)
    send.add(card(1), internal=False)
    send.fill(8, 0.0, encode)
    assert send.acknowledge(2, 0) == [2]
    assert send.queued_message_count == 0
    assert send.abandon() == ((4, card(1)),)
    assert send.add(card(2), internal=False) == FIRST_SEQ  # numbering starts again


def test_a_lost_v2_session_keeps_everything_in_order_for_the_next() -> None:
    send = window_with(5, window=3)
    send.acknowledge(1, 0)
    send.suspend()
    assert send.pending_count == 4
    assert send.queued_message_count == 4
    assert send.first_unacknowledged_seq == 2
    assert send.fill(8, 1.0, encode) == [b"frame 2", b"frame 3", b"frame 4", b"frame 5"]


def test_what_the_peer_says_it_delivered_is_acknowledged_and_the_rest_resent() -> None:
    send = window_with(5)
    send.suspend()
    assert send.discard_delivered(3) == [1, 2, 3]
    assert send.fill(8, 1.0, encode) == [b"frame 4", b"frame 5"]


def test_a_peer_that_restarted_gets_nothing_of_its_old_self_and_the_seqs_are_used_again() -> None:
    send = window_with(5)
    send.acknowledge(2, 0)
    send.suspend()
    assert send.give_up_queued() == tuple((seq, card(seq - 1)) for seq in (3, 4, 5))
    assert send.add(card(9), internal=False) == 3


def test_a_claim_is_consistent_only_between_what_was_acknowledged_and_what_was_sent() -> None:
    send = SendWindow()
    send.ensure_stream(lambda: STREAM_A)
    for index in range(5):
        send.add(card(index), internal=False)
    send.fill(8, 0.0, encode)
    send.acknowledge(2, 0)
    assert send.resume_consistent(STREAM_A, 2)
    assert send.resume_consistent(STREAM_A, 5)
    assert not send.resume_consistent(STREAM_A, 1)  # less than it acknowledged
    assert not send.resume_consistent(STREAM_A, 6)  # more than we sent
    assert send.resume_consistent(STREAM_B, 99)  # another stream: not a claim on ours
    assert send.resume_consistent(NO_STREAM, 0)


def test_the_stream_gets_an_id_once_and_another_device_gets_a_new_stream() -> None:
    send = SendWindow()
    draws: list[bytes] = []

    def new_stream_id() -> bytes:
        draws.append(STREAM_B if draws else STREAM_A)
        return draws[-1]

    send.ensure_stream(new_stream_id)
    send.ensure_stream(new_stream_id)
    assert send.stream_id == STREAM_A
    assert send.peer_device_id == ANY_DEVICE_ID
    assert send.adopt_for(0x1234, new_stream_id) == ()  # the first device: the stream is its
    send.add(card(0), internal=False)
    assert send.adopt_for(0x1234, new_stream_id) == ()
    assert send.stream_id == STREAM_A
    assert send.adopt_for(0x9999, new_stream_id) == ((1, card(0)),)  # another device answered
    assert send.stream_id == STREAM_B
    assert send.peer_device_id == 0x9999
    assert send.first_unacknowledged_seq == FIRST_SEQ
    send.end_stream()
    assert send.stream_id == NO_STREAM


@settings(max_examples=200, deadline=None)
@given(
    window=st.integers(1, 8),
    steps=st.lists(st.tuples(st.sampled_from(["add", "fill", "ack"]), st.integers(0, 12)), max_size=60),
)
def test_every_message_is_acknowledged_once_in_order_whatever_the_acks(
    window: int, steps: list[tuple[str, int]]
) -> None:
    """Cumulative ACKs at random (stale ones included): each seq is reported once, ascending, and
    what is pending is exactly what was added and not yet acknowledged."""
    send = SendWindow()
    added: list[int] = []
    acked: list[int] = []
    for action, value in steps:
        if action == "add":
            added.append(send.add(card(value), internal=False))
        elif action == "fill":
            assert len(send.fill(window, 0.0, encode)) <= window
        else:
            result = send.acknowledge(send.first_unacknowledged_seq - 1 + value, 0)
            acked += result or []
        assert send.pending_count == len(added) - len(acked)
    assert acked == sorted(set(acked))
    assert acked == added[: len(acked)]
