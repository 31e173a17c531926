"""The sans-I/O link: handshake and version negotiation, authentication, sequencing, a window of frames
in flight, cumulative and selective acknowledgement, retransmission, heartbeats, and (v2) streams that
resume across sessions.

One class for both ends (``Role.CONTROLLER`` and ``Role.DEVICE``). It owns no port, thread, task or
clock: the caller feeds it bytes and the current time, and reads events and bytes back, as with h11.

    link = Link.controller(keyring={0x1234: key})          # or Link.device(0x1234, key, identity)
    link.connect(now_s)                                     # controller only: starts the handshake
    port.write(link.bytes_to_send())
    ...
    link.receive_data(port.read(...), now_s)                # any pieces, any sizes
    while (event := link.next_event()) is not NEED_DATA:
        ...                                                 # LinkUp, MessageReceived, MessageAcked,
                                                            # MessageRejected, SecurityAlert, LinkDown
    seq = link.send(CardDealt(position=1, index=0, card=12), now_s)   # queued; MessageAcked(seq) later
    link.handle_timers(now_s)                               # call at link.next_deadline_s() at the latest
    port.write(link.bytes_to_send())                        # after every call above

Versions (docs/protocol.md §7): the device's Hello says which versions it speaks; the controller picks
the newest both speak. A v1 session is v1 exactly: stop-and-wait, seqs from 1 in every session, and
what was not acknowledged when it went down is handed back in ``LinkDown`` for the application to
resend. A v2 session keeps up to ``window`` DATA frames in flight and numbers them in a stream that
outlives the session: the handshake states what each side last delivered, each side resends exactly
what the other lacks, and ``LinkDown`` hands nothing back. The same Link object must therefore live as
long as the device (or the controller's driver) does; a new Link is a power cycle (a new stream).

Guarantees (docs/protocol.md §8): within a v1 session, and across every session of a v2 stream,
messages are delivered to the peer's application exactly once and in the order sent. A frame with a
bad tag, from an unknown device, or with a sequence number outside the window is dropped and reported
as a ``SecurityAlert``; line noise (bad CRC, bad COBS) is counted in ``stats`` and answered with a NAK.
Heartbeats are sent and absorbed by the link itself; the application never sees them.

``Link`` is the shell that composes the parts, each one thing, usable and tested alone:

- ``handshake.Handshake``: keys, nonces, the handshake messages, version and window negotiation; it
  opens each ``session.Session``.
- ``session.Session``: one session's terms (device, key, version, window): it seals this side's frames
  and checks the peer's, admits messages, says when an ACK is due, and keeps the session's clocks.
- ``send_window.SendWindow``: this side's numbered stream: queue, frames in flight, ACKs, resends.
- ``receive_window.ReceiveWindow``: the peer's stream: delivery order, duplicates, held frames.
- ``resume``: what a handshake does to the two streams (v2 resume, v1 restart).

The Link keeps the state (idle, handshaking, up, down), routes each frame to the part it concerns,
runs the timers, and turns the parts' answers into events and bytes. The events and the other plain
data types are in ``events`` (the package exports them from there).
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final

from firmware_protocol.constants import (
    DEFAULT_WINDOW,
    KIND_ACK,
    KIND_HANDSHAKE,
    KIND_NAK,
    MAX_SEND_QUEUE,
    PROTOCOL_V1,
    PROTOCOL_V2,
)
from firmware_protocol.errors import LinkError
from firmware_protocol.events import (
    NEED_DATA,
    SUPPORTED_VERSIONS,
    AnyHello,
    DeviceIdentity,
    LinkDown,
    LinkEvent,
    LinkState,
    LinkStats,
    LinkUp,
    MessageAcked,
    MessageReceived,
    MessageRejected,
    Role,
    SecurityAlert,
    _NeedData,
)
from firmware_protocol.framing import Frame, FrameDecoder, RefusedFrame
from firmware_protocol.handshake import (
    Agreed,
    Challenged,
    Handshake,
    Refused,
    Repeated,
)
from firmware_protocol.messages import Heartbeat, Message
from firmware_protocol.receive_window import Arrival, ReceiveWindow
from firmware_protocol.resume import hello_position, restart_v1, resume_v2
from firmware_protocol.send_window import Dropped, Outgoing, SendWindow
from firmware_protocol.session import SENDER_BY_ROLE, Session

__all__ = ["Link"]

_NAK_WORTHY: Final = frozenset({"bad_cobs", "bad_crc", "bad_length", "frame_too_long"})


class Link:
    """One end of an authenticated, acknowledged link. See the module docstring for how to drive it."""

    def __init__(self, handshake: Handshake) -> None:
        """Made by ``Link.controller`` or ``Link.device``: ``handshake`` holds this side's role, keys,
        versions and window, checked once there (``Handshake.__init__`` says what each is)."""
        self._handshake = handshake
        self.role = handshake.role
        self._peer_sender = SENDER_BY_ROLE[Role.DEVICE if self.role is Role.CONTROLLER else Role.CONTROLLER]
        self._send = SendWindow()
        self._receive = ReceiveWindow()
        self._decoder = FrameDecoder()
        self._events: deque[LinkEvent] = deque()
        self._out = bytearray()
        self.stats = LinkStats()
        self._state = LinkState.IDLE
        self._session: Session | None = None  # exactly while the link is up
        self._version = PROTOCOL_V1  # of the current (or last) session
        self._window = 1

    # --- construction helpers -------------------------------------------------------------------------
    @classmethod
    def controller(
        cls,
        keyring: Mapping[int, bytes],
        *,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
        versions: Iterable[int] = SUPPORTED_VERSIONS,
        window: int = DEFAULT_WINDOW,
    ) -> Link:
        return cls(
            Handshake(Role.CONTROLLER, keyring, random_bytes=random_bytes, versions=versions, window=window)
        )

    @classmethod
    def device(
        cls,
        device_id: int,
        key: bytes,
        identity: DeviceIdentity,
        *,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
        versions: Iterable[int] = SUPPORTED_VERSIONS,
        window: int = DEFAULT_WINDOW,
    ) -> Link:
        return cls(
            Handshake(
                Role.DEVICE,
                {device_id: key},
                identity=identity,
                random_bytes=random_bytes,
                versions=versions,
                window=window,
            )
        )

    # --- what the caller reads ------------------------------------------------------------------------
    @property
    def state(self) -> LinkState:
        return self._state

    @property
    def is_up(self) -> bool:
        return self._state is LinkState.UP

    @property
    def device_id(self) -> int:
        """The device's id: for a controller, the one that completed the handshake (0 before)."""
        return self._handshake.device_id

    @property
    def peer_hello(self) -> AnyHello | None:
        """The Hello of the current session (the device's identity), or None."""
        return self._session.hello if self._session is not None else None

    @property
    def version(self) -> int:
        """The protocol version of the current (or last) session."""
        return self._version

    @property
    def window(self) -> int:
        """DATA frames the current (or last) session keeps in flight: 1 in v1."""
        return self._window

    @property
    def versions(self) -> tuple[int, ...]:
        """The versions this side speaks."""
        return self._handshake.versions

    @property
    def pending_count(self) -> int:
        """Messages queued or waiting for their ACK (in v2, also those kept across a lost session)."""
        return self._send.pending_count

    def next_event(self) -> LinkEvent | _NeedData:
        """The oldest event not yet read, or NEED_DATA."""
        return self._events.popleft() if self._events else NEED_DATA

    def events(self) -> Iterator[LinkEvent]:
        """Every waiting event, oldest first."""
        while self._events:
            yield self._events.popleft()

    def bytes_to_send(self) -> bytes:
        """Everything the link wants written to the line since the last call (may be empty)."""
        data = bytes(self._out)
        self._out.clear()
        return data

    def next_deadline_s(self) -> float | None:
        """The latest time handle_timers() must next be called (None: no timer is running)."""
        if self._state is LinkState.HANDSHAKING:
            return self._handshake.deadline_s()
        if self._session is None:
            return None
        ack_deadline_s = self._send.deadline_s()
        session_deadline_s = self._session.deadline_s()
        return session_deadline_s if ack_deadline_s is None else min(session_deadline_s, ack_deadline_s)

    # --- what the caller does -------------------------------------------------------------------------
    def connect(self, now_s: float) -> None:
        """Controller: start a handshake (again). A session that was up goes down first."""
        if self.role is not Role.CONTROLLER:
            raise LinkError("only the controller starts a handshake")
        if self._state is LinkState.UP:
            self._go_down("reconnect")
        if PROTOCOL_V2 in self._handshake.versions:
            self._send.ensure_stream(self._handshake.fresh_stream_id)
        self._state = LinkState.HANDSHAKING
        self._write(self._handshake.challenge(now_s), now_s)

    def send(self, message: Message, now_s: float) -> int:
        """Queue ``message`` for reliable delivery and return its seq (MessageAcked(seq) follows)."""
        if self._session is None:
            raise LinkError(f"link is {self._state.value}, not up")
        refusal = self._session.refuse_to_send(message)
        if refusal is not None:
            raise LinkError(refusal)
        if self._send.queued_count >= MAX_SEND_QUEUE:
            raise LinkError(f"send queue full ({MAX_SEND_QUEUE} messages): the peer is not acknowledging")
        return self._enqueue(message, now_s, internal=False)

    def receive_data(self, data: bytes, now_s: float) -> None:
        """Feed bytes read from the line (any amount, cut anywhere)."""
        for item in self._decoder.feed(data):
            if isinstance(item, RefusedFrame):
                self._on_refused(item, now_s)
            else:
                self._on_frame(item.frame, now_s)
        # v2 ACKs are cumulative: the frames of one read are acknowledged by one ACK, sent before this
        # call returns (so no timer of the peer's can run out waiting for it).
        if self._session is not None and self._session.take_owed_ack():
            self._send_ack(self._session, now_s)

    def handle_timers(self, now_s: float) -> None:
        """Retransmit, send heartbeats, and declare the link down, as the time requires."""
        if self._state is LinkState.HANDSHAKING:
            if self._handshake.retry_due(now_s):
                wire = self._handshake.retry(now_s)
                if wire is None:
                    self._go_down("handshake_timeout")
                    return
                self.stats.retransmissions += 1
                self._write(wire, now_s)
            return
        if self._session is None:
            return
        if self._session.silent(now_s):
            self._go_down("heartbeat_missed")
            return
        # Selective: only the frames whose own timer ran out go again, not the whole window.
        for item in self._send.expired(now_s):
            if not self._retransmit(item, now_s):
                return
        if self._send.idle and self._session.idle(now_s):
            self._enqueue(Heartbeat(uptime_ms=int(now_s * 1000) % 2**32), now_s, internal=True)

    def connection_lost(self, reason: str = "port_closed") -> None:
        """The caller's port closed or failed: the link is down (a no-op when it is not up)."""
        if self._state in (LinkState.UP, LinkState.HANDSHAKING):
            self._go_down(reason)

    # --- sending --------------------------------------------------------------------------------------
    def _enqueue(self, message: Message, now_s: float, *, internal: bool) -> int:
        if self._send.exhausted:
            self._go_down("seq_exhausted")
            raise LinkError("sequence numbers exhausted; the link must handshake again")
        seq = self._send.add(message, internal=internal)
        self._pump(now_s)
        return seq

    def _pump(self, now_s: float) -> None:
        """Put queued messages on the line while the window has room (v1: one at a time)."""
        if self._session is None:
            return
        for wire in self._send.fill(self._session.window, now_s, self._session.seal_message):
            self._write(wire, now_s)

    def _retransmit(self, item: Outgoing, now_s: float) -> bool:
        """Send ``item`` again; False when its retries are spent and the link went down."""
        wire = self._send.resend(item, now_s)
        if wire is None:
            # Our own heartbeat went unanswered: the peer missed its heartbeats, not a message.
            self._go_down("heartbeat_missed" if item.internal else "no_ack")
            return False
        self.stats.retransmissions += 1
        self._write(wire, now_s)
        return True

    def _send_ack(self, session: Session, now_s: float) -> None:
        """v1: ACK the seq just delivered. v2: ACK everything up to the last delivered (cumulative) with a
        bitmap of the frames held beyond it, so the sender retransmits only what is missing."""
        delivered = self._receive.last_delivered_seq
        bitmap = b"" if session.version == PROTOCOL_V1 else self._receive.selective_bitmap()
        self._write(session.seal(KIND_ACK, delivered, bitmap), now_s)

    def _nak(self, session: Session, now_s: float) -> None:
        """Ask for the first frame not yet delivered, unless a NAK went within the holdoff."""
        if session.nak_allowed(now_s):
            self.stats.naks_sent += 1
            self._write(session.seal(KIND_NAK, self._receive.next_expected_seq), now_s)

    def _write(self, wire: bytes, now_s: float) -> None:
        self._out += wire
        self.stats.frames_sent += 1
        if self._session is not None:
            self._session.wrote(now_s)

    # --- receiving ------------------------------------------------------------------------------------
    def _on_refused(self, refused: RefusedFrame, now_s: float) -> None:
        self.stats.refused[refused.code] += 1
        # Noise may have eaten the peer's DATA frame: a NAK asks for it again without waiting for the
        # peer's timer.
        if self._session is not None and refused.code in _NAK_WORTHY:
            self._nak(self._session, now_s)

    def _alert(self, alert: SecurityAlert) -> None:
        self.stats.refused[alert.reason] += 1
        self._events.append(alert)

    def _on_frame(self, frame: Frame, now_s: float) -> None:
        if frame.sender != self._peer_sender:
            detail = f"a {self.role.value}'s own kind of frame came back"
            self._alert(SecurityAlert("wrong_sender", detail, frame.device_id))
            return
        if frame.kind == KIND_HANDSHAKE:
            self._on_handshake(frame, now_s)
            return
        session = self._session
        if session is None:
            self.stats.refused["no_session"] += 1
            return
        refusal = session.accept(frame, now_s)
        if refusal is not None:
            if isinstance(refusal, SecurityAlert):
                self._alert(refusal)
            else:
                self.stats.refused[refusal] += 1
            return
        self.stats.frames_accepted += 1
        if frame.kind == KIND_ACK:
            bitmap = None if session.version == PROTOCOL_V1 else int.from_bytes(frame.payload, "big")
            acked = self._send.acknowledge(frame.seq, bitmap)
            if acked is None:
                self.stats.refused["stale_ack"] += 1
                return
            self._events.extend(map(MessageAcked, acked))
            self._pump(now_s)
        elif frame.kind == KIND_NAK:
            item = self._send.nak_target(frame.seq)
            if item is not None:
                self._retransmit(item, now_s)
        else:
            self._on_data(session, frame, now_s)

    def _on_data(self, session: Session, frame: Frame, now_s: float) -> None:
        arrival = self._receive.classify(frame.seq, session.window)
        if arrival is Arrival.IN_ORDER:
            for seq, payload in self._receive.deliver(frame.seq, frame.payload):
                message = session.admit(payload)
                if isinstance(message, str):
                    self._events.append(MessageRejected(seq, message))
                elif not isinstance(message, Heartbeat):
                    self._events.append(MessageReceived(message, seq))
        elif arrival is Arrival.DUPLICATE:
            self.stats.duplicates += 1  # the peer did not get our ACK and sent the frame again
        elif arrival is Arrival.REPLAY:
            detail = f"seq {frame.seq}, already past {self._receive.last_delivered_seq}"
            self._alert(SecurityAlert("replay", detail, frame.device_id))
            return
        elif arrival is Arrival.BEYOND_WINDOW:
            detail = f"seq {frame.seq}, expected {self._receive.next_expected_seq}"
            self._alert(SecurityAlert("bad_sequence", detail, frame.device_id))
            return
        else:
            # After a gap (v2: a window of more than 1, and one ACK at the end of the read): hold it,
            # say so in the ACK's bitmap, and ask for the gap.
            if arrival is Arrival.HELD_ALREADY:
                self.stats.duplicates += 1
            else:
                self.stats.out_of_order += 1
                self._receive.hold(frame.seq, frame.payload)
            self._nak(session, now_s)
        if session.ack_at_once():
            self._send_ack(session, now_s)

    # --- handshake ------------------------------------------------------------------------------------
    def _on_handshake(self, frame: Frame, now_s: float) -> None:
        outcome = self._handshake.on_frame(frame, self._state, now_s)
        if isinstance(outcome, Refused):
            self._alert(SecurityAlert(outcome.reason, outcome.detail, outcome.device_id))
            if outcome.go_down is not None:
                self._go_down(outcome.go_down)
        elif isinstance(outcome, Repeated):
            if outcome.duplicate:
                self.stats.duplicates += 1
            if outcome.answer:
                self._write(outcome.answer, now_s)
        elif isinstance(outcome, Challenged):
            # Device: a new challenge means the controller restarted or reconnected: a session that was
            # up is over. The Hello says where each stream stands.
            if self._state is LinkState.UP:
                self._go_down("new_handshake")
            position = None
            if PROTOCOL_V2 in self._handshake.versions:
                position = hello_position(self._send, self._receive, self._handshake.fresh_stream_id)
            self._state = LinkState.HANDSHAKING
            self._write(self._handshake.answer(outcome.controller_nonce, position, now_s), now_s)
        else:
            self._agree(outcome, now_s)

    def _agree(self, agreed: Agreed, now_s: float) -> None:
        """The handshake agreed (controller: on the device's Hello; device: on the AuthConfirm): settle
        the streams, confirm (controller), and start the session."""
        controller = self.role is Role.CONTROLLER
        peer = agreed.peer
        if peer is None:
            if controller:
                self._write(self._handshake.confirm(agreed, None), now_s)
            dropped = restart_v1(self._send, self._receive)
            self._start_session(now_s, PROTOCOL_V1, 1, resumed=False, dropped=dropped)
            return
        resumption = resume_v2(
            self._send,
            self._receive,
            peer,
            answered_by=agreed.device_id if controller else None,
            new_stream_id=self._handshake.fresh_stream_id,
        )
        if isinstance(resumption, str):
            self._alert(SecurityAlert("handshake_failed", resumption, agreed.device_id))
            if controller:
                self._go_down("handshake_failed")
            return
        self._events.extend(map(MessageAcked, resumption.acked))
        if controller:
            self._write(self._handshake.confirm(agreed, resumption.position), now_s)
        self.stats.resent_after_resume += resumption.resent
        resumed, dropped = resumption.resumed, resumption.dropped
        self._start_session(now_s, PROTOCOL_V2, agreed.window, resumed=resumed, dropped=dropped)
        self._pump(now_s)

    def _start_session(
        self, now_s: float, version: int, window: int, *, resumed: bool, dropped: Dropped
    ) -> None:
        self._session = session = self._handshake.open_session(version=version, window=window, now_s=now_s)
        self._version = version
        self._window = window
        self._state = LinkState.UP
        self._events.append(LinkUp(session.device_id, session.hello, version, window, resumed, dropped))

    # --- down -----------------------------------------------------------------------------------------
    def _go_down(self, reason: str) -> None:
        unacknowledged: Dropped = ()
        if reason == "seq_exhausted" or (self._state is LinkState.UP and self._version == PROTOCOL_V1):
            # v1 hands back what was not acknowledged; so does a stream whose seqs ran out (the next
            # v2 session starts a new stream, and the peer cannot tell old numbers from new).
            unacknowledged = self._send.abandon()
            if reason == "seq_exhausted":
                self._send.end_stream()
        else:
            # v2 (or a handshake that failed): everything unacknowledged stays, in order, for the next
            # session to resend what the peer says it lacks.
            self._send.suspend()
        self._events.append(LinkDown(reason, unacknowledged))
        self._state = LinkState.DOWN
        self._session = None
        self._receive.drop_held()
