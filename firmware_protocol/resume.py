"""What a handshake does to a link's two streams (docs/protocol.md §8.6): the one place that reads and
settles a ``SendWindow`` and a ``ReceiveWindow`` against what the peer said of them.

- ``stated_position``: what this side says of the streams in its Hello or AuthConfirmV2
  (``hello_position``: a device's, when it answers a challenge).
- ``resume_v2``: a v2 session starts. A peer that claims what we never sent is refused. What the peer
  delivered of our stream is acknowledged, what it lacks is sent again, and what it can no longer use
  (it restarted, or another device answered a controller) is given up; the peer's stream is delivered
  from where the peer says (a new one) or where we were (one we know).
- ``restart_v1``: a v1 session starts: it numbers from 1 and remembers no stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from firmware_protocol.handshake import StreamPosition
from firmware_protocol.receive_window import ReceiveWindow
from firmware_protocol.send_window import Dropped, SendWindow


@dataclass(frozen=True, slots=True)
class Resumption:
    """How a v2 session starts."""

    resumed: bool
    """The peer knew our stream: nothing it had is sent again."""
    acked: tuple[int, ...]
    """Seqs of our messages the peer says it delivered while we waited for their ACKs."""
    dropped: Dropped
    """Messages given up, never delivered (LinkUp.dropped)."""
    resent: int
    """Messages of ours the session sends again (LinkStats.resent_after_resume)."""
    position: StreamPosition
    """What this side says of the streams (a controller's AuthConfirmV2)."""


def stated_position(send: SendWindow, receive: ReceiveWindow, peer_stream_id: bytes) -> StreamPosition:
    """Our stream and where it resumes; the peer's ``peer_stream_id`` and how far we delivered it, when
    it is the one we deliver from (NO_STREAM and 0 when not)."""
    return StreamPosition(send.stream_id, send.first_unacknowledged_seq, *receive.claim(peer_stream_id))


def hello_position(
    send: SendWindow, receive: ReceiveWindow, new_stream_id: Callable[[], bytes]
) -> StreamPosition:
    """What a device's Hello says of the streams; our stream is given an id first if it has none."""
    send.ensure_stream(new_stream_id)
    return stated_position(send, receive, receive.stream_id)


def resume_v2(
    send: SendWindow,
    receive: ReceiveWindow,
    peer: StreamPosition,
    *,
    answered_by: int | None,
    new_stream_id: Callable[[], bytes],
) -> Resumption | str:
    """Settle both streams for a v2 session with a peer that said ``peer``; or, when the peer claims to
    have delivered more of our stream than we sent (or less than it acknowledged), why not (nothing
    changes). ``answered_by`` (controller): the device whose Hello this is. Only the device our stream
    is numbered for is asked that question: for another, our stream starts again (``new_stream_id``)
    and what it held is given up."""
    asked = answered_by is None or answered_by == send.peer_device_id
    if asked and not send.resume_consistent(peer.peer_stream_id, peer.delivered_seq):
        claimant = "controller" if answered_by is None else "device"
        return f"{claimant} claims seq {peer.delivered_seq} of our stream, which was never sent"
    dropped = () if answered_by is None else send.adopt_for(answered_by, new_stream_id)
    acked: list[int] = []
    resumed = peer.peer_stream_id == send.stream_id
    if resumed:
        acked = send.discard_delivered(peer.delivered_seq)
    elif receive.peer_restarted(peer.stream_id):
        dropped += send.give_up_queued()
    position = stated_position(send, receive, peer.stream_id)
    receive.follow(peer.stream_id, peer.send_seq)
    return Resumption(resumed, tuple(acked), dropped, send.queued_message_count, position)


def restart_v1(send: SendWindow, receive: ReceiveWindow) -> Dropped:
    """Settle both streams for a v1 session: anything an earlier v2 stream still held is given up (and
    returned, for LinkUp.dropped) rather than renumbered behind the application's back."""
    dropped = send.abandon()
    send.end_stream()
    receive.forget()
    return dropped
