"""The sending half of a link: this side's numbered stream of DATA frames (docs/protocol.md §8.1, §8.6,
§8.7), with no I/O, no clock of its own and no knowledge of the wire format.

``SendWindow`` numbers each message, queues it, moves it into flight while the window has room (the
caller's ``encode`` turns it into a frame), takes the peer's ACKs (v1: exactly the frame in flight; v2:
cumulative, with a bitmap of frames the peer holds beyond the gap) and says which frames to send again:
those whose ACK timer ran out (not those the peer holds), and the one a NAK names.

In v1 the stream restarts at FIRST_SEQ every session. In v2 it outlives the session: what is still
unacknowledged when a session ends waits in the queue, and the next handshake decides what of it the
peer already has (``discard_delivered``), what is resent, and what is given up because the peer lost
its memory (``give_up_queued``) or another device answered (``adopt_for``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from firmware_protocol.constants import (
    ACK_TIMEOUT_S,
    ANY_DEVICE_ID,
    FIRST_SEQ,
    MAX_RETRIES,
    MAX_SEQ,
    SACK_LEN,
)
from firmware_protocol.events import NO_STREAM
from firmware_protocol.messages import Message

Dropped = tuple[tuple[int, Message], ...]
"""(seq, message) given up without the peer's acknowledgement, oldest first (LinkUp / LinkDown)."""


@dataclass(slots=True)
class Outgoing:
    """One numbered message of this side's stream."""

    seq: int
    message: Message
    internal: bool  # a heartbeat the link made itself: no MessageAcked, never handed back
    wire: bytes = b""
    sent_s: float = 0.0
    retries: int = 0
    sacked: bool = False  # the peer holds it out of order: no retransmission on timeout


class SendWindow:
    """This side's outgoing stream: the queue (numbered, not yet on the wire this session) and the
    frames in flight (on the wire, not acknowledged), both in ascending seq order."""

    def __init__(self) -> None:
        self._stream_id = NO_STREAM
        self._peer_device_id = ANY_DEVICE_ID  # whose stream it is (a controller may meet another)
        self._next_seq = FIRST_SEQ
        self._queue: deque[Outgoing] = deque()
        self._in_flight: deque[Outgoing] = deque()

    # --- what the stream holds ------------------------------------------------------------------------
    @property
    def stream_id(self) -> bytes:
        """The v2 stream's id (NO_STREAM: none yet, or a v1 session)."""
        return self._stream_id

    @property
    def peer_device_id(self) -> int:
        """The device the stream is numbered for (ANY_DEVICE_ID: none yet)."""
        return self._peer_device_id

    @property
    def exhausted(self) -> bool:
        """Every seq of the stream is used: the next message needs a new stream (a new handshake)."""
        return self._next_seq > MAX_SEQ

    @property
    def pending_count(self) -> int:
        """Messages queued or in flight (heartbeats included)."""
        return len(self._queue) + len(self._in_flight)

    @property
    def queued_count(self) -> int:
        return len(self._queue)

    @property
    def queued_message_count(self) -> int:
        """Queued messages of the application (not heartbeats): what a resumed session sends again."""
        return sum(1 for item in self._queue if not item.internal)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing in flight."""
        return not self._queue and not self._in_flight

    @property
    def first_unacknowledged_seq(self) -> int:
        """The seq of the first DATA frame this side will send next session."""
        if self._in_flight:
            return self._in_flight[0].seq
        if self._queue:
            return self._queue[0].seq
        return self._next_seq

    # --- one session ----------------------------------------------------------------------------------
    def add(self, message: Message, *, internal: bool) -> int:
        """Number ``message`` and queue it; its seq. The caller checks ``exhausted`` first."""
        if self._next_seq > MAX_SEQ:
            raise ValueError("sequence numbers exhausted")
        seq = self._next_seq
        self._next_seq += 1
        self._queue.append(Outgoing(seq, message, internal))
        return seq

    def fill(self, window: int, now_s: float, encode: Callable[[int, Message], bytes]) -> list[bytes]:
        """Move queued messages into flight while fewer than ``window`` are there; the frames to write,
        in order (``encode(seq, message)`` makes each)."""
        frames: list[bytes] = []
        while self._queue and len(self._in_flight) < window:
            item = self._queue.popleft()
            item.wire = encode(item.seq, item.message)
            item.retries = 0
            item.sacked = False
            item.sent_s = now_s
            self._in_flight.append(item)
            frames.append(item.wire)
        return frames

    def acknowledge(self, cumulative_seq: int, sacked_bitmap: int | None) -> list[int] | None:
        """The peer acknowledged every seq up to ``cumulative_seq``; the seqs of the application's
        messages now acknowledged, or None for a stale ACK (nothing changes). ``sacked_bitmap`` (v2):
        bit ``i`` set means the peer holds seq ``cumulative_seq + 2 + i``, so its timer no longer
        resends it. None is a v1 ACK, which must name exactly the one frame in flight."""
        if not self._in_flight:
            return None
        first = self._in_flight[0].seq
        if cumulative_seq < first - 1 or cumulative_seq > self._in_flight[-1].seq:
            return None
        if sacked_bitmap is None and cumulative_seq != first:
            return None
        acked: list[int] = []
        while self._in_flight and self._in_flight[0].seq <= cumulative_seq:
            item = self._in_flight.popleft()
            if not item.internal:
                acked.append(item.seq)
        if sacked_bitmap is not None:
            for item in self._in_flight:
                offset = item.seq - cumulative_seq - 2
                if 0 <= offset < SACK_LEN * 8 and sacked_bitmap & (1 << offset):
                    item.sacked = True
        return acked

    def expired(self, now_s: float) -> list[Outgoing]:
        """The frames in flight whose ACK timer ran out, oldest first (not those the peer holds)."""
        return [item for item in self._in_flight if not item.sacked and now_s - item.sent_s >= ACK_TIMEOUT_S]

    def nak_target(self, seq: int) -> Outgoing | None:
        """The frame in flight a NAK for ``seq`` asks for again (None: not in flight, or held)."""
        for item in self._in_flight:
            if item.seq == seq:
                return None if item.sacked else item
        return None

    @staticmethod
    def resend(item: Outgoing, now_s: float) -> bytes | None:
        """``item``'s frame to send again (its ACK timer restarts); None when its retries are spent."""
        if item.retries >= MAX_RETRIES:
            return None
        item.retries += 1
        item.sent_s = now_s
        return item.wire

    def deadline_s(self) -> float | None:
        """When the first ACK timer of a frame in flight runs out (None: none is running)."""
        first_sent_s = None  # a plain loop: the caller's event loop asks this after every read
        for item in self._in_flight:
            if not item.sacked and (first_sent_s is None or item.sent_s < first_sent_s):
                first_sent_s = item.sent_s
        return None if first_sent_s is None else first_sent_s + ACK_TIMEOUT_S

    # --- across sessions ------------------------------------------------------------------------------
    def ensure_stream(self, new_stream_id: Callable[[], bytes]) -> None:
        """Give the stream an id (from ``new_stream_id``) if it has none: the first v2 handshake."""
        if self._stream_id == NO_STREAM:
            self._stream_id = new_stream_id()

    def end_stream(self) -> None:
        """The stream is over (a v1 session, or its seqs ran out): the next v2 handshake starts one."""
        self._stream_id = NO_STREAM

    def abandon(self) -> Dropped:
        """Give up every message held, queued or in flight, and number from FIRST_SEQ again."""
        gone = [*self._in_flight, *self._queue]
        self._in_flight.clear()
        self._queue.clear()
        self._next_seq = FIRST_SEQ
        return tuple((item.seq, item.message) for item in gone if not item.internal)

    def suspend(self) -> None:
        """The v2 session ended: everything unacknowledged waits, in order, for the next one to resend
        what the peer says it lacks."""
        self._queue = deque([*self._in_flight, *self._queue])
        self._in_flight.clear()

    def resume_consistent(self, peer_stream_id: bytes, delivered_seq: int) -> bool:
        """A peer that says it delivered seq N of our stream cannot have more than we sent, nor less
        than it already acknowledged (we dropped those)."""
        if peer_stream_id != self._stream_id or peer_stream_id == NO_STREAM:
            return True
        return self.first_unacknowledged_seq - 1 <= delivered_seq < self._next_seq

    def adopt_for(self, device_id: int, new_stream_id: Callable[[], bytes]) -> Dropped:
        """Controller: the stream was numbered for one device; if another answers, what it held for the
        first is given up (returned, for LinkUp.dropped) and a new stream starts."""
        dropped: Dropped = ()
        if self._peer_device_id not in (ANY_DEVICE_ID, device_id):
            dropped = self.abandon()
            self._stream_id = new_stream_id()
        self._peer_device_id = device_id
        return dropped

    def discard_delivered(self, delivered_seq: int) -> list[int]:
        """The peer says it delivered our stream up to ``delivered_seq``: those are acknowledged (the
        seqs of the application's messages among them, for MessageAcked)."""
        acked: list[int] = []
        while self._queue and self._queue[0].seq <= delivered_seq:
            item = self._queue.popleft()
            if not item.internal:
                acked.append(item.seq)
        return acked

    def give_up_queued(self) -> Dropped:
        """The peer restarted and lost what it knew, so it does not know our stream either. What
        we still held for its old self is not replayed into the new one (a deal request resent to a
        shoe that lost its deck would be worse than useless): it is handed back (LinkUp.dropped), and
        the application asks the device what it has (StatusQuery). The new peer has delivered nothing
        of this stream, so the seqs given up are used again: we send from the first of them, as our
        handshake said."""
        if not self._queue:
            return ()
        self._next_seq = self._queue[0].seq
        gone = tuple((item.seq, item.message) for item in self._queue if not item.internal)
        self._queue.clear()
        return gone
