"""resume.py alone: what a handshake does to a SendWindow and a ReceiveWindow, given what the peer said
of them (a StreamPosition). The Link-level story over lossy lines is tests/protocol/test_resume.py."""

from __future__ import annotations

from firmware_protocol import CardDealt, Message
from firmware_protocol.events import NO_STREAM
from firmware_protocol.handshake import StreamPosition
from firmware_protocol.receive_window import ReceiveWindow
from firmware_protocol.resume import Resumption, hello_position, restart_v1, resume_v2, stated_position
from firmware_protocol.send_window import SendWindow

OURS = bytes(range(1, 9))
THEIRS = bytes(range(11, 19))
THEIR_NEW = bytes(range(21, 29))
OUR_NEXT = bytes(range(31, 39))
DEVICE_ID = 0x1234


def encode(seq: int, message: Message) -> bytes:
    return f"frame {seq}".encode()


def card(index: int) -> CardDealt:
    return CardDealt(position=1, index=index % 7, card=index % 52)


def streams(*, sent: int, acknowledged: int, delivered_of_theirs: int) -> tuple[SendWindow, ReceiveWindow]:
    """Our stream OURS with ``sent`` messages on the wire, ``acknowledged`` of them acknowledged, in a
    session that then went down; their stream THEIRS delivered up to ``delivered_of_theirs``."""
    send = SendWindow()
    send.ensure_stream(lambda: OURS)
    send.adopt_for(DEVICE_ID, lambda: OUR_NEXT)
    for index in range(sent):
        send.add(card(index), internal=False)
    send.fill(8, 0.0, encode)
    if acknowledged:
        send.acknowledge(acknowledged, 0)
    send.suspend()
    receive = ReceiveWindow()
    receive.follow(THEIRS, 1)
    for seq in range(1, delivered_of_theirs + 1):
        receive.deliver(seq, b"")
    return send, receive


def resume(send: SendWindow, receive: ReceiveWindow, peer: StreamPosition) -> Resumption:
    resumption = resume_v2(send, receive, peer, answered_by=None, new_stream_id=lambda: OUR_NEXT)
    assert isinstance(resumption, Resumption), resumption
    return resumption


def test_each_side_states_its_stream_and_how_far_it_delivered_the_others() -> None:
    send, receive = streams(sent=5, acknowledged=2, delivered_of_theirs=7)
    assert stated_position(send, receive, THEIRS) == StreamPosition(OURS, 3, THEIRS, 7)
    assert stated_position(send, receive, THEIR_NEW) == StreamPosition(OURS, 3, NO_STREAM, 0)
    assert hello_position(send, receive, lambda: OUR_NEXT) == StreamPosition(OURS, 3, THEIRS, 7)


def test_a_device_gets_a_stream_when_it_first_answers() -> None:
    send, receive = SendWindow(), ReceiveWindow()
    assert hello_position(send, receive, lambda: OURS) == StreamPosition(OURS, 1, NO_STREAM, 0)


def test_a_peer_that_knows_our_stream_has_what_it_delivered_acknowledged_and_the_rest_resent() -> None:
    send, receive = streams(sent=5, acknowledged=1, delivered_of_theirs=7)
    resumption = resume(send, receive, StreamPosition(THEIRS, 8, OURS, 3))
    assert resumption == Resumption(
        resumed=True, acked=(2, 3), dropped=(), resent=2, position=StreamPosition(OURS, 4, THEIRS, 7)
    )
    assert send.fill(8, 1.0, encode) == [b"frame 4", b"frame 5"]
    assert receive.next_expected_seq == 8  # their stream goes on where it was


def test_a_peer_that_restarted_gets_nothing_of_its_old_self_and_a_new_stream_is_followed() -> None:
    send, receive = streams(sent=4, acknowledged=1, delivered_of_theirs=7)
    resumption = resume(send, receive, StreamPosition(THEIR_NEW, 1, NO_STREAM, 0))
    assert not resumption.resumed
    assert resumption.dropped == ((2, card(1)), (3, card(2)), (4, card(3)))
    assert resumption.resent == 0
    assert resumption.position == StreamPosition(OURS, 2, NO_STREAM, 0)  # the seqs given up, used again
    assert receive.stream_id == THEIR_NEW
    assert receive.next_expected_seq == 1


def test_a_peer_that_never_finished_a_handshake_with_us_gets_everything_we_hold() -> None:
    send, receive = SendWindow(), ReceiveWindow()
    send.ensure_stream(lambda: OURS)
    for index in range(3):
        send.add(card(index), internal=False)
    resumption = resume(send, receive, StreamPosition(THEIRS, 40, NO_STREAM, 0))
    assert (resumption.resumed, resumption.dropped, resumption.resent) == (False, (), 3)
    assert receive.next_expected_seq == 40


def test_a_claim_on_what_we_never_sent_is_refused_and_changes_nothing() -> None:
    send, receive = streams(sent=3, acknowledged=0, delivered_of_theirs=2)
    refusal = resume_v2(
        send, receive, StreamPosition(THEIRS, 3, OURS, 9), answered_by=None, new_stream_id=lambda: OUR_NEXT
    )
    assert refusal == "controller claims seq 9 of our stream, which was never sent"
    assert send.pending_count == 3
    assert receive.stream_id == THEIRS
    by_device = resume_v2(
        send,
        receive,
        StreamPosition(THEIRS, 3, OURS, 9),
        answered_by=DEVICE_ID,
        new_stream_id=lambda: OUR_NEXT,
    )
    assert by_device == "device claims seq 9 of our stream, which was never sent"


def test_a_controller_answered_by_another_device_starts_a_new_stream() -> None:
    send, receive = streams(sent=2, acknowledged=0, delivered_of_theirs=0)
    # The other device's claim on our (old) stream is not asked about: that stream is given up.
    resumption = resume_v2(
        send,
        receive,
        StreamPosition(THEIR_NEW, 1, OURS, 9),
        answered_by=0x9999,
        new_stream_id=lambda: OUR_NEXT,
    )
    assert isinstance(resumption, Resumption)
    assert resumption.dropped == ((1, card(0)), (2, card(1)))
    assert resumption.position == StreamPosition(OUR_NEXT, 1, NO_STREAM, 0)
    assert send.peer_device_id == 0x9999


def test_a_v1_session_forgets_both_streams_and_hands_back_what_was_held() -> None:
    send, receive = streams(sent=3, acknowledged=1, delivered_of_theirs=5)
    assert restart_v1(send, receive) == ((2, card(1)), (3, card(2)))
    assert (send.stream_id, receive.stream_id) == (NO_STREAM, NO_STREAM)
    assert send.add(card(0), internal=False) == 1
    assert receive.next_expected_seq == 1
