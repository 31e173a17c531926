"""The receiving half of a link: the peer's numbered stream of DATA frames as this side delivers it
(docs/protocol.md §8.2, §8.6, §8.8), with no I/O and no knowledge of the wire format or the messages.

``ReceiveWindow`` says what an authentic DATA frame's seq is to this side (``classify``): the next in
order (``deliver`` it, with every held frame it releases), a copy of one already delivered (the peer
missed our ACK: acknowledge again, deliver nothing), a frame after a gap (v2: ``hold`` it until the gap
is filled), or a seq outside the window (refused: a replay, or a bad sequence). It builds the v2 ACK's
bitmap of the frames held, and remembers across sessions which of the peer's streams it delivers from
and how far, so a v2 handshake can tell the peer where to resume.
"""

from __future__ import annotations

import enum

from firmware_protocol.constants import FIRST_SEQ, SACK_LEN
from firmware_protocol.events import NO_STREAM


class Arrival(enum.Enum):
    """What a DATA frame's seq is to the receive window."""

    IN_ORDER = "in_order"  # the next seq: deliver it
    DUPLICATE = "duplicate"  # delivered already, within one window: acknowledge again, deliver nothing
    AFTER_GAP = "after_gap"  # beyond a gap, within the window (v2): hold it
    HELD_ALREADY = "held_already"  # beyond a gap and held already: a copy
    REPLAY = "replay"  # older than one window behind: refused
    BEYOND_WINDOW = "beyond_window"  # more than one window ahead: refused


class ReceiveWindow:
    """The peer's stream as delivered here: its id, the last seq delivered, and (v2) the frames held
    after a gap, by seq."""

    def __init__(self) -> None:
        self._stream_id = NO_STREAM
        self._last_delivered_seq = FIRST_SEQ - 1
        self._held: dict[int, bytes] = {}

    @property
    def stream_id(self) -> bytes:
        """The peer's v2 stream this side delivers from (NO_STREAM: none, or a v1 session)."""
        return self._stream_id

    @property
    def last_delivered_seq(self) -> int:
        return self._last_delivered_seq

    @property
    def next_expected_seq(self) -> int:
        """The seq a NAK asks for: the first not yet delivered."""
        return self._last_delivered_seq + 1

    @property
    def held_count(self) -> int:
        return len(self._held)

    # --- one session ----------------------------------------------------------------------------------
    def classify(self, seq: int, window: int) -> Arrival:
        """What a DATA frame numbered ``seq`` is, in a session of ``window`` frames in flight (the peer
        can only be retransmitting frames within one window of what this side holds)."""
        delivered = self._last_delivered_seq
        if seq == delivered + 1:
            return Arrival.IN_ORDER
        if seq <= delivered:
            return Arrival.DUPLICATE if seq > delivered - window and seq >= FIRST_SEQ else Arrival.REPLAY
        if seq > delivered + window:
            return Arrival.BEYOND_WINDOW
        return Arrival.HELD_ALREADY if seq in self._held else Arrival.AFTER_GAP

    def hold(self, seq: int, payload: bytes) -> None:
        """Keep an AFTER_GAP frame's payload until the gap before it is filled."""
        self._held[seq] = payload

    def deliver(self, seq: int, payload: bytes) -> list[tuple[int, bytes]]:
        """Deliver the IN_ORDER frame ``seq``: it and every held frame it releases, in order."""
        self._last_delivered_seq = seq
        released = [(seq, payload)]
        while self._last_delivered_seq + 1 in self._held:
            self._last_delivered_seq += 1
            released.append((self._last_delivered_seq, self._held.pop(self._last_delivered_seq)))
        return released

    def selective_bitmap(self) -> bytes:
        """A v2 ACK's payload: bit ``i`` set when seq ``last_delivered_seq + 2 + i`` is held (the ACK's
        cumulative seq says the one after it is missing)."""
        bitmap = 0
        for seq in self._held:
            bitmap |= 1 << (seq - self._last_delivered_seq - 2)
        return bitmap.to_bytes(SACK_LEN, "big")

    def drop_held(self) -> None:
        """The session ended: frames held after a gap are forgotten (the peer sends them again)."""
        self._held.clear()

    # --- across sessions ------------------------------------------------------------------------------
    def claim(self, stream_id: bytes) -> tuple[bytes, int]:
        """What this side says in a v2 handshake of the peer's stream ``stream_id``: (that stream, the
        last seq delivered of it) when it is the one this side delivers from, else (NO_STREAM, 0)."""
        if stream_id == NO_STREAM or stream_id != self._stream_id:
            return NO_STREAM, 0
        return stream_id, self._last_delivered_seq

    def peer_restarted(self, peer_stream_id: bytes) -> bool:
        """The peer comes back with another stream than the one we delivered from: it powered up (or
        its process restarted) since. (A peer that merely never finished a handshake with us keeps its
        stream, and gets everything we hold for it.)"""
        return self._stream_id not in (NO_STREAM, peer_stream_id)

    def follow(self, peer_stream_id: bytes, peer_send_seq: int) -> None:
        """A v2 session starts: a stream we never delivered from (the peer powered up, or this is our
        first session) starts where the peer says it does; the one we know goes on where it was."""
        if peer_stream_id != self._stream_id:
            self._stream_id = peer_stream_id
            self._last_delivered_seq = peer_send_seq - 1
        self._held.clear()

    def forget(self) -> None:
        """A v1 session starts: it numbers from FIRST_SEQ and remembers no stream."""
        self._stream_id = NO_STREAM
        self._last_delivered_seq = FIRST_SEQ - 1
        self._held.clear()
