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
"""

from __future__ import annotations

import enum
import secrets
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from firmware_protocol.constants import (
    ACK_TIMEOUT_S,
    ANY_DEVICE_ID,
    DEFAULT_WINDOW,
    FIRST_SEQ,
    HANDSHAKE_MAX_RETRIES,
    HANDSHAKE_RETRY_S,
    HEARTBEAT_INTERVAL_S,
    KIND_ACK,
    KIND_DATA,
    KIND_HANDSHAKE,
    KIND_NAK,
    LINK_SILENCE_TIMEOUT_S,
    MAX_RETRIES,
    MAX_SEND_QUEUE,
    MAX_SEQ,
    MAX_WINDOW,
    NAK_HOLDOFF_S,
    NONCE_LEN,
    PROTOCOL_V1,
    PROTOCOL_V2,
    SACK_LEN,
    SENDER_CONTROLLER,
    SENDER_DEVICE,
    STREAM_ID_LEN,
    TAG_LEN,
)
from firmware_protocol.crypto import check_device_key, derive_session_key, tag_matches
from firmware_protocol.errors import FieldError, LinkError
from firmware_protocol.framing import DecodedFrame, Frame, FrameDecoder, RefusedFrame, encode_frame
from firmware_protocol.messages import (
    AuthChallenge,
    AuthConfirm,
    AuthConfirmV2,
    DeviceKind,
    Heartbeat,
    Hello,
    HelloV2,
    Message,
    decode_message,
)

SUPPORTED_VERSIONS: Final = (PROTOCOL_V1, PROTOCOL_V2)
NO_STREAM: Final = bytes(STREAM_ID_LEN)
AnyHello = Hello | HelloV2


class Role(enum.Enum):
    CONTROLLER = "controller"
    DEVICE = "device"


class LinkState(enum.Enum):
    IDLE = "idle"  # never connected (a device waits here for an AuthChallenge)
    HANDSHAKING = "handshaking"
    UP = "up"
    DOWN = "down"  # a controller must connect() again; a device waits for an AuthChallenge


class _NeedData:
    """The sentinel next_event() returns when no event is waiting (h11's NEED_DATA)."""

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()


# --- events -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LinkUp:
    """The handshake completed: the device is who it says (it holds its key) and a session key is set.
    ``version`` and ``window`` are what the session runs; ``resumed`` (v2) says the peer knew this
    side's stream, so nothing it had was sent again; ``dropped`` lists messages this link held and
    gave up, never delivered: the peer did not know this side's stream (it powered up or restarted,
    and lost what it knew), a different device answered, or the session fell back to v1."""

    device_id: int
    hello: AnyHello
    version: int = PROTOCOL_V1
    window: int = 1
    resumed: bool = False
    dropped: tuple[tuple[int, Message], ...] = ()


@dataclass(frozen=True, slots=True)
class MessageReceived:
    message: Message
    seq: int


@dataclass(frozen=True, slots=True)
class MessageAcked:
    """The peer acknowledged the message send() numbered ``seq``: it has it."""

    seq: int


@dataclass(frozen=True, slots=True)
class MessageRejected:
    """An authentic DATA frame whose payload is not a valid message for this side (acknowledged, so the
    peer moves on, and not delivered). A peer's bug or a version mismatch, not an attack."""

    seq: int
    reason: str


@dataclass(frozen=True, slots=True)
class SecurityAlert:
    """A frame refused for its tag, its sender or its sequence number. ``reason`` is one of
    bad_tag, unknown_device, wrong_device, wrong_sender, replay, bad_sequence, stale_handshake,
    handshake_failed (docs/protocol.md §12.3)."""

    reason: str
    detail: str
    device_id: int


@dataclass(frozen=True, slots=True)
class LinkDown:
    """The link is down. ``unacknowledged`` (v1 sessions only): (seq, message) sent or queued but never
    acknowledged; the peer may or may not have received the first of them. A v2 session keeps them
    and resends what the peer lacks after the next handshake, so it lists none."""

    reason: str
    unacknowledged: tuple[tuple[int, Message], ...] = ()


LinkEvent = LinkUp | MessageReceived | MessageAcked | MessageRejected | SecurityAlert | LinkDown


@dataclass(frozen=True, slots=True)
class DeviceIdentity:
    """What a device says about itself in its Hello."""

    device_kind: DeviceKind
    model: str
    serial_number: str
    firmware_version: str


@dataclass(slots=True)
class LinkStats:
    """Counters for the status panel and the logs."""

    frames_sent: int = 0
    frames_accepted: int = 0
    retransmissions: int = 0
    duplicates: int = 0
    naks_sent: int = 0
    out_of_order: int = 0
    """v2 DATA frames held until the gap before them was filled."""
    resent_after_resume: int = 0
    """v2 messages sent again after a handshake because the peer said it lacked them."""
    refused: Counter[str] = field(default_factory=Counter)
    """Frames refused, by code (bad_crc, bad_cobs, ..., and the security reasons)."""


@dataclass(slots=True)
class _Outgoing:
    seq: int
    message: Message
    internal: bool  # a heartbeat the link made itself: no MessageAcked, not in LinkDown
    wire: bytes = b""
    sent_s: float = 0.0
    retries: int = 0
    sacked: bool = False  # the peer holds it out of order: no retransmission on timeout


_SENDER_BY_ROLE = {Role.CONTROLLER: SENDER_CONTROLLER, Role.DEVICE: SENDER_DEVICE}
_NAK_WORTHY = frozenset({"bad_cobs", "bad_crc", "bad_length", "frame_too_long"})


class Link:
    """One end of an authenticated, acknowledged link. See the module docstring for how to drive it."""

    def __init__(
        self,
        role: Role,
        keyring: Mapping[int, bytes],
        *,
        identity: DeviceIdentity | None = None,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
        versions: Iterable[int] = SUPPORTED_VERSIONS,
        window: int = DEFAULT_WINDOW,
    ) -> None:
        """``keyring`` maps device_id -> provisioned 32-byte key: for a controller, every device that
        may answer on this line; for a device, exactly its own id and key. ``random_bytes`` makes the
        nonces and stream ids (tests pass a seeded one; production keeps the default, the OS's CSPRNG).
        ``versions``: the protocol versions this side speaks (a v1 device: ``(1,)``); ``window``: the
        DATA frames in flight it offers for a v2 session (1..MAX_WINDOW)."""
        if not keyring:
            raise ValueError("keyring is empty")
        for device_id, key in keyring.items():
            if not 1 <= device_id <= 0xFFFF_FFFF:
                raise ValueError(f"device_id {device_id} is out of range 1..4294967295")
            check_device_key(key, what=f"key of device {device_id}")
        if role is Role.DEVICE:
            if len(keyring) != 1:
                raise ValueError("a device link holds exactly its own id and key")
            if identity is None:
                raise ValueError("a device link needs the identity it announces")
        spoken = tuple(sorted(set(versions)))
        if not spoken or not set(spoken) <= set(SUPPORTED_VERSIONS):
            raise ValueError(f"versions {spoken}: this link speaks {SUPPORTED_VERSIONS}")
        if not 1 <= window <= MAX_WINDOW:
            raise ValueError(f"window {window} is out of range 1..{MAX_WINDOW}")
        self.role = role
        self._keyring = dict(keyring)
        self._identity = identity
        self._random_bytes = random_bytes
        self._versions = spoken
        self._offered_window = window
        self._own_sender = _SENDER_BY_ROLE[role]
        self._peer_sender = SENDER_DEVICE if role is Role.CONTROLLER else SENDER_CONTROLLER
        self._decoder = FrameDecoder()
        self._events: deque[LinkEvent] = deque()
        self._out = bytearray()
        self.stats = LinkStats()
        self._state = LinkState.IDLE
        # handshake
        self._device_id = next(iter(self._keyring)) if role is Role.DEVICE else ANY_DEVICE_ID
        self._controller_nonce = b""
        self._device_nonce = b""
        self._handshake_wire = b""  # the frame to resend: AuthChallenge (controller) or Hello (device)
        self._confirm_wire = b""  # controller: the AuthConfirm, resent when a Hello is repeated
        self._handshake_sent_s = 0.0
        self._handshake_retries = 0
        self._hello: AnyHello | None = None
        self._session_key: bytes | None = None
        self._version = PROTOCOL_V1  # of the current (or last) session
        self._window = 1
        # sending: one stream. In v1 it restarts at FIRST_SEQ every session; in v2 it lives on until the
        # seqs run out, and what is unacknowledged when a session ends waits in _queue for the next.
        self._tx_stream_id = NO_STREAM
        self._tx_peer_device_id = ANY_DEVICE_ID  # whose stream it is (a controller may meet another)
        self._next_seq = FIRST_SEQ
        self._queue: deque[_Outgoing] = deque()  # numbered, ascending, not on the wire this session
        self._in_flight: deque[_Outgoing] = deque()  # on the wire, not acknowledged, ascending
        self._last_sent_s = 0.0
        # receiving
        self._rx_stream_id = NO_STREAM
        self._last_delivered_seq = FIRST_SEQ - 1
        self._held: dict[int, Frame] = {}  # v2: frames after a gap, delivered once it is filled
        self._ack_owed = False  # v2: one cumulative ACK answers every DATA frame of one read
        self._last_heard_s = 0.0
        self._last_nak_s = float("-inf")

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
        return cls(Role.CONTROLLER, keyring, random_bytes=random_bytes, versions=versions, window=window)

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
            Role.DEVICE,
            {device_id: key},
            identity=identity,
            random_bytes=random_bytes,
            versions=versions,
            window=window,
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
        return self._device_id

    @property
    def peer_hello(self) -> AnyHello | None:
        """The Hello of the current session (the device's identity), or None."""
        return self._hello if self._state is LinkState.UP else None

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
        return self._versions

    @property
    def pending_count(self) -> int:
        """Messages queued or waiting for their ACK (in v2, also those kept across a lost session)."""
        return len(self._queue) + len(self._in_flight)

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
            return self._handshake_sent_s + HANDSHAKE_RETRY_S
        if self._state is not LinkState.UP:
            return None
        deadline = min(self._last_heard_s + LINK_SILENCE_TIMEOUT_S, self._last_sent_s + HEARTBEAT_INTERVAL_S)
        for item in self._in_flight:
            if not item.sacked:
                deadline = min(deadline, item.sent_s + ACK_TIMEOUT_S)
        return deadline

    # --- what the caller does -------------------------------------------------------------------------
    def connect(self, now_s: float) -> None:
        """Controller: start a handshake (again). A session that was up goes down first."""
        if self.role is not Role.CONTROLLER:
            raise LinkError("only the controller starts a handshake")
        if self._state is LinkState.UP:
            self._go_down("reconnect")
        self._reset_handshake()
        if PROTOCOL_V2 in self._versions and self._tx_stream_id == NO_STREAM:
            self._tx_stream_id = self._fresh_stream_id()
        self._controller_nonce = self._fresh_nonce()
        device_id = next(iter(self._keyring)) if len(self._keyring) == 1 else ANY_DEVICE_ID
        self._device_id = ANY_DEVICE_ID
        payload = AuthChallenge(controller_nonce=self._controller_nonce).encode()
        # The challenge is the one unauthenticated frame: it carries only a nonce, and what answers it
        # (the Hello) is authenticated over that nonce. It is a v1 frame, so a device of any version
        # can answer, and the answer says which versions the device speaks.
        self._handshake_wire = encode_frame(KIND_HANDSHAKE, self._own_sender, device_id, 0, payload, key=None)
        self._state = LinkState.HANDSHAKING
        self._handshake_retries = 0
        self._write(self._handshake_wire, now_s)
        self._handshake_sent_s = now_s

    def send(self, message: Message, now_s: float) -> int:
        """Queue ``message`` for reliable delivery and return its seq (MessageAcked(seq) follows)."""
        if self._state is not LinkState.UP:
            raise LinkError(f"link is {self._state.value}, not up")
        if message.HANDSHAKE:
            raise LinkError(f"{message.NAME} belongs to the handshake; the link sends it itself")
        if message.SENT_BY not in ("either", self.role.value):
            raise LinkError(f"{message.NAME} is sent by the {message.SENT_BY}, not the {self.role.value}")
        if self._version < message.PROTOCOL:
            raise LinkError(
                f"{message.NAME} is a v{message.PROTOCOL} message; this session is v{self._version}"
            )
        if len(self._queue) >= MAX_SEND_QUEUE:
            raise LinkError(f"send queue full ({MAX_SEND_QUEUE} messages): the peer is not acknowledging")
        return self._enqueue(message, now_s, internal=False)

    def receive_data(self, data: bytes, now_s: float) -> None:
        """Feed bytes read from the line (any amount, cut anywhere)."""
        for item in self._decoder.feed(data):
            if isinstance(item, RefusedFrame):
                self._on_refused(item, now_s)
            else:
                self._on_frame(item, now_s)
        if self._ack_owed:
            # v2 ACKs are cumulative: the frames of one read are acknowledged by one ACK, sent before
            # this call returns (so no timer of the peer's can run out waiting for it).
            self._ack_owed = False
            if self._state is LinkState.UP and self._session_key is not None:
                self._send_ack(now_s)

    def handle_timers(self, now_s: float) -> None:
        """Retransmit, send heartbeats, and declare the link down, as the time requires."""
        if self._state is LinkState.HANDSHAKING:
            if now_s - self._handshake_sent_s >= HANDSHAKE_RETRY_S:
                if self._handshake_retries >= HANDSHAKE_MAX_RETRIES:
                    self._go_down("handshake_timeout")
                    return
                self._handshake_retries += 1
                self.stats.retransmissions += 1
                self._write(self._handshake_wire, now_s)
                self._handshake_sent_s = now_s
            return
        if self._state is not LinkState.UP:
            return
        if now_s - self._last_heard_s >= LINK_SILENCE_TIMEOUT_S:
            self._go_down("heartbeat_missed")
            return
        # Selective: only the frames whose own timer ran out go again, not the whole window.
        for item in list(self._in_flight):
            if not item.sacked and now_s - item.sent_s >= ACK_TIMEOUT_S and not self._retransmit(item, now_s):
                return
        if not self._in_flight and not self._queue and now_s - self._last_sent_s >= HEARTBEAT_INTERVAL_S:
            self._enqueue(Heartbeat(uptime_ms=int(now_s * 1000) % 2**32), now_s, internal=True)

    def connection_lost(self, reason: str = "port_closed") -> None:
        """The caller's port closed or failed: the link is down (a no-op when it is not up)."""
        if self._state in (LinkState.UP, LinkState.HANDSHAKING):
            self._go_down(reason)

    # --- sending --------------------------------------------------------------------------------------
    def _enqueue(self, message: Message, now_s: float, *, internal: bool) -> int:
        if self._next_seq > MAX_SEQ:
            self._go_down("seq_exhausted")
            raise LinkError("sequence numbers exhausted; the link must handshake again")
        seq = self._next_seq
        self._next_seq += 1
        self._queue.append(_Outgoing(seq, message, internal))
        self._pump(now_s)
        return seq

    def _pump(self, now_s: float) -> None:
        """Put queued messages on the line while the window has room (v1: one at a time)."""
        if self._session_key is None or self._state is not LinkState.UP:
            return
        while self._queue and len(self._in_flight) < self._window:
            item = self._queue.popleft()
            item.wire = encode_frame(
                KIND_DATA,
                self._own_sender,
                self._device_id,
                item.seq,
                item.message.encode(),
                key=self._session_key,
                version=self._version,
            )
            item.retries = 0
            item.sacked = False
            self._in_flight.append(item)
            self._write(item.wire, now_s)
            item.sent_s = now_s

    def _retransmit(self, item: _Outgoing, now_s: float) -> bool:
        """Send ``item`` again; False when its retries are spent and the link went down."""
        if item.retries >= MAX_RETRIES:
            # Our own heartbeat went unanswered: the peer missed its heartbeats, not a message.
            self._go_down("heartbeat_missed" if item.internal else "no_ack")
            return False
        item.retries += 1
        self.stats.retransmissions += 1
        self._write(item.wire, now_s)
        item.sent_s = now_s
        return True

    def _send_control(self, kind: int, seq: int, now_s: float, payload: bytes = b"") -> None:
        assert self._session_key is not None
        self._write(
            encode_frame(
                kind,
                self._own_sender,
                self._device_id,
                seq,
                payload,
                key=self._session_key,
                version=self._version,
            ),
            now_s,
        )

    def _send_ack(self, now_s: float) -> None:
        """v1: ACK the seq just delivered. v2: ACK everything up to the last delivered (cumulative) with a
        bitmap of the frames held beyond it, so the sender retransmits only what is missing."""
        delivered = self._last_delivered_seq
        if self._version == PROTOCOL_V1:
            self._send_control(KIND_ACK, delivered, now_s)
            return
        bitmap = 0
        for seq in self._held:
            bitmap |= 1 << (seq - delivered - 2)
        self._send_control(KIND_ACK, delivered, now_s, bitmap.to_bytes(SACK_LEN, "big"))

    def _write(self, wire: bytes, now_s: float) -> None:
        self._out += wire
        self.stats.frames_sent += 1
        self._last_sent_s = now_s

    # --- receiving ------------------------------------------------------------------------------------
    def _on_refused(self, refused: RefusedFrame, now_s: float) -> None:
        self.stats.refused[refused.code] += 1
        # Noise may have eaten the peer's DATA frame: a NAK asks for it again without waiting for the
        # peer's timer. The holdoff keeps one burst of noise from costing several retries.
        if self._state is LinkState.UP and refused.code in _NAK_WORTHY:
            self._nak(now_s)

    def _nak(self, now_s: float) -> None:
        if now_s - self._last_nak_s >= NAK_HOLDOFF_S:
            self._last_nak_s = now_s
            self.stats.naks_sent += 1
            self._send_control(KIND_NAK, self._last_delivered_seq + 1, now_s)

    def _alert(self, reason: str, detail: str, device_id: int) -> None:
        self.stats.refused[reason] += 1
        self._events.append(SecurityAlert(reason, detail, device_id))

    def _on_frame(self, decoded: DecodedFrame, now_s: float) -> None:
        frame = decoded.frame
        if frame.sender != self._peer_sender:
            self._alert("wrong_sender", f"a {self.role.value}'s own kind of frame came back", frame.device_id)
            return
        if frame.kind == KIND_HANDSHAKE:
            self._on_handshake(frame, now_s)
            return
        if self._session_key is None:
            self.stats.refused["no_session"] += 1
            return
        if frame.device_id != self._device_id:
            reason = "unknown_device" if frame.device_id not in self._keyring else "wrong_device"
            self._alert(reason, f"device_id {frame.device_id} is not this session's", frame.device_id)
            return
        if not tag_matches(self._session_key, frame.signed, frame.tag):
            self._alert("bad_tag", f"{_kind_name(frame.kind)} seq {frame.seq}", frame.device_id)
            return
        if frame.version != self._version:
            # Authentic, but not this session's layout: a peer's bug, not an attack (the tag covers
            # the version byte, so nobody else could have changed it).
            self.stats.refused["bad_version"] += 1
            return
        self.stats.frames_accepted += 1
        self._last_heard_s = now_s
        if frame.kind == KIND_ACK:
            self._on_ack(frame, now_s)
        elif frame.kind == KIND_NAK:
            for item in self._in_flight:
                if item.seq == frame.seq and not item.sacked:
                    self._retransmit(item, now_s)
                    break
        else:
            self._on_data(frame, now_s)

    def _on_ack(self, frame: Frame, now_s: float) -> None:
        cumulative = frame.seq
        first = self._in_flight[0].seq if self._in_flight else None
        if first is None or cumulative < first - 1 or cumulative > self._in_flight[-1].seq:
            self.stats.refused["stale_ack"] += 1
            return
        if self._version == PROTOCOL_V1 and cumulative != first:
            self.stats.refused["stale_ack"] += 1  # v1 acknowledges exactly the frame outstanding
            return
        while self._in_flight and self._in_flight[0].seq <= cumulative:
            item = self._in_flight.popleft()
            if not item.internal:
                self._events.append(MessageAcked(item.seq))
        if self._version == PROTOCOL_V2:
            bitmap = int.from_bytes(frame.payload, "big")
            for item in self._in_flight:
                offset = item.seq - cumulative - 2
                if 0 <= offset < SACK_LEN * 8 and bitmap & (1 << offset):
                    item.sacked = True
        self._pump(now_s)

    def _on_data(self, frame: Frame, now_s: float) -> None:
        delivered = self._last_delivered_seq
        if frame.seq <= delivered:
            if frame.seq > delivered - self._window and frame.seq >= FIRST_SEQ:
                # The peer did not get our ACK and sent the frame again: acknowledge, deliver nothing.
                # (The peer can only be retransmitting frames within one window of what we hold.)
                self.stats.duplicates += 1
                self._acknowledge(now_s)
                return
            self._alert("replay", f"seq {frame.seq}, already past {delivered}", frame.device_id)
            return
        if frame.seq > delivered + self._window:
            self._alert("bad_sequence", f"seq {frame.seq}, expected {delivered + 1}", frame.device_id)
            return
        if frame.seq != delivered + 1:
            # v2: a frame after a gap. Hold it, say so in the ACK's bitmap, and ask for the gap.
            if frame.seq in self._held:
                self.stats.duplicates += 1
            else:
                self.stats.out_of_order += 1
                self._held[frame.seq] = frame
            self._acknowledge(now_s)
            self._nak(now_s)
            return
        self._deliver(frame)
        while self._last_delivered_seq + 1 in self._held:
            self._deliver(self._held.pop(self._last_delivered_seq + 1))
        self._acknowledge(now_s)

    def _acknowledge(self, now_s: float) -> None:
        """v1 acknowledges each frame at once; v2 owes one cumulative ACK for the whole read."""
        if self._version == PROTOCOL_V1:
            self._send_ack(now_s)
        else:
            self._ack_owed = True

    def _deliver(self, frame: Frame) -> None:
        self._last_delivered_seq = frame.seq
        try:
            message = decode_message(frame.payload)
        except FieldError as error:
            self._events.append(MessageRejected(frame.seq, str(error)))
            return
        if message.HANDSHAKE or message.SENT_BY not in ("either", self._peer_role_name):
            self._events.append(
                MessageRejected(frame.seq, f"{message.NAME} is not sent by a {self._peer_role_name}")
            )
            return
        if self._version < message.PROTOCOL:
            self._events.append(
                MessageRejected(frame.seq, f"{message.NAME} is not a v{self._version} message")
            )
            return
        if isinstance(message, Heartbeat):
            return
        self._events.append(MessageReceived(message, frame.seq))

    @property
    def _peer_role_name(self) -> str:
        return "device" if self.role is Role.CONTROLLER else "controller"

    # --- handshake ------------------------------------------------------------------------------------
    def _on_handshake(self, frame: Frame, now_s: float) -> None:
        message_type = frame.payload[0]
        if self.role is Role.DEVICE:
            if message_type == AuthChallenge.TYPE:
                self._on_challenge(frame, now_s)
            elif message_type in (AuthConfirm.TYPE, AuthConfirmV2.TYPE):
                self._on_confirm(frame, now_s)
            else:
                self._alert(
                    "handshake_failed",
                    f"message type 0x{message_type:02x} from a controller",
                    frame.device_id,
                )
        elif message_type in (Hello.TYPE, HelloV2.TYPE):
            self._on_hello(frame, now_s)
        else:
            self._alert(
                "handshake_failed", f"message type 0x{message_type:02x} from a device", frame.device_id
            )

    def _decode_handshake(self, frame: Frame, what: str) -> Message | None:
        """The handshake message ``frame`` carries, in a frame of its own version; None (and an alert)
        when it is not one."""
        try:
            message = decode_message(frame.payload)
        except FieldError as error:
            self._alert("handshake_failed", f"{what}: {error}", frame.device_id)
            return None
        if frame.version != message.PROTOCOL:
            self._alert(
                "handshake_failed", f"{message.NAME} in a version {frame.version} frame", frame.device_id
            )
            return None
        return message

    def _on_challenge(self, frame: Frame, now_s: float) -> None:
        if frame.device_id not in (ANY_DEVICE_ID, self._device_id):
            self._alert("wrong_device", f"challenge for device {frame.device_id}", frame.device_id)
            return
        challenge = self._decode_handshake(frame, "auth_challenge")
        if challenge is None:
            return
        assert isinstance(challenge, AuthChallenge)
        if frame.tag != bytes(TAG_LEN):
            self._alert("bad_tag", "an auth_challenge's tag must be all zeros", frame.device_id)
            return
        if self._state is LinkState.HANDSHAKING and challenge.controller_nonce == self._controller_nonce:
            self._write(self._handshake_wire, now_s)  # our Hello was lost: say it again, same nonces
            self._handshake_sent_s = now_s
            return
        if self._state is LinkState.UP and challenge.controller_nonce == self._controller_nonce:
            # A late copy of the challenge this session answered (the controller sent it twice).
            self.stats.duplicates += 1
            return
        if self._state is LinkState.UP:
            # A new challenge means the controller restarted or reconnected: this session is over.
            self._go_down("new_handshake")
        self._reset_handshake()
        assert self._identity is not None
        self._controller_nonce = challenge.controller_nonce
        hello: AnyHello
        if PROTOCOL_V2 in self._versions:
            if self._tx_stream_id == NO_STREAM:
                self._tx_stream_id = self._fresh_stream_id()
            self._device_nonce = self._fresh_nonce()
            hello = HelloV2(
                device_kind=self._identity.device_kind,
                protocol_versions=self._versions,
                max_window=self._offered_window,
                model=self._identity.model,
                serial_number=self._identity.serial_number,
                firmware_version=self._identity.firmware_version,
                device_nonce=self._device_nonce,
                controller_nonce=self._controller_nonce,
                stream_id=self._tx_stream_id,
                send_seq=self._first_unacknowledged_seq(),
                peer_stream_id=self._rx_stream_id,
                delivered_seq=self._last_delivered_seq if self._rx_stream_id != NO_STREAM else 0,
            )
        else:
            self._device_nonce = self._fresh_nonce()
            hello = Hello(
                device_kind=self._identity.device_kind,
                protocol_version=PROTOCOL_V1,
                model=self._identity.model,
                serial_number=self._identity.serial_number,
                firmware_version=self._identity.firmware_version,
                device_nonce=self._device_nonce,
                controller_nonce=self._controller_nonce,
            )
        self._hello = hello
        self._handshake_wire = encode_frame(
            KIND_HANDSHAKE,
            self._own_sender,
            self._device_id,
            0,
            hello.encode(),
            key=self._keyring[self._device_id],
            version=hello.PROTOCOL,
        )
        self._state = LinkState.HANDSHAKING
        self._handshake_retries = 0
        self._write(self._handshake_wire, now_s)
        self._handshake_sent_s = now_s

    def _on_confirm(self, frame: Frame, now_s: float) -> None:
        if frame.device_id != self._device_id:
            self._alert("wrong_device", f"auth_confirm for device {frame.device_id}", frame.device_id)
            return
        if not tag_matches(self._keyring[self._device_id], frame.signed, frame.tag):
            self._alert("bad_tag", "auth_confirm", frame.device_id)
            return
        confirm = self._decode_handshake(frame, "auth_confirm")
        if confirm is None:
            return
        assert isinstance(confirm, AuthConfirm | AuthConfirmV2)
        if confirm.device_nonce != self._device_nonce or not self._device_nonce:
            self._alert("stale_handshake", "auth_confirm for another handshake's nonce", frame.device_id)
            return
        if self._state is LinkState.UP:
            self.stats.duplicates += 1  # the controller saw our Hello twice and confirmed twice
            return
        if self._state is not LinkState.HANDSHAKING:
            self._alert("stale_handshake", "auth_confirm after the handshake timed out", frame.device_id)
            return
        if isinstance(confirm, AuthConfirm):
            if PROTOCOL_V1 not in self._versions:
                self._alert("handshake_failed", "a v1 auth_confirm to a device without v1", frame.device_id)
                return
            self._establish_v1(now_s)
            return
        if not isinstance(self._hello, HelloV2) or confirm.window > self._offered_window:
            self._alert("handshake_failed", "auth_confirm_v2 that our hello did not offer", frame.device_id)
            return
        if not self._resume_consistent(confirm.peer_stream_id, confirm.delivered_seq):
            self._alert(
                "handshake_failed",
                f"controller claims seq {confirm.delivered_seq} of our stream, which was never sent",
                frame.device_id,
            )
            return
        self._establish_v2(
            now_s,
            window=confirm.window,
            peer_stream_id=confirm.stream_id,
            peer_send_seq=confirm.send_seq,
            peer_knows_ours=confirm.peer_stream_id == self._tx_stream_id,
            peer_delivered_seq=confirm.delivered_seq,
        )

    def _on_hello(self, frame: Frame, now_s: float) -> None:
        key = self._keyring.get(frame.device_id)
        if key is None:
            self._alert(
                "unknown_device", f"device_id {frame.device_id} has no provisioned key", frame.device_id
            )
            return
        if not tag_matches(key, frame.signed, frame.tag):
            self._alert("bad_tag", "hello", frame.device_id)
            return
        hello = self._decode_handshake(frame, "hello")
        if hello is None:
            return
        assert isinstance(hello, Hello | HelloV2)
        if self._state is LinkState.UP and hello == self._hello and frame.device_id == self._device_id:
            self.stats.duplicates += 1  # our AuthConfirm was lost: say it again
            self._write(self._confirm_wire, now_s)
            return
        if self._state is not LinkState.HANDSHAKING or hello.controller_nonce != self._controller_nonce:
            self._alert("stale_handshake", "hello answers no challenge of ours", frame.device_id)
            return
        offered = hello.protocol_versions if isinstance(hello, HelloV2) else (hello.protocol_version,)
        common = set(offered) & set(self._versions)
        if not common:
            self._alert(
                "handshake_failed",
                f"device speaks protocol {offered}, this controller {self._versions}",
                frame.device_id,
            )
            self._go_down("unsupported_protocol_version")
            return
        use_v2 = isinstance(hello, HelloV2) and PROTOCOL_V2 in common
        if (
            isinstance(hello, HelloV2)
            and use_v2
            and frame.device_id == self._tx_peer_device_id
            and not self._resume_consistent(hello.peer_stream_id, hello.delivered_seq)
        ):
            self._alert(
                "handshake_failed",
                f"device claims seq {hello.delivered_seq} of our stream, which was never sent",
                frame.device_id,
            )
            self._go_down("handshake_failed")
            return
        self._device_id = frame.device_id
        self._device_nonce = hello.device_nonce
        self._hello = hello
        if not isinstance(hello, HelloV2) or not use_v2:
            # A v1 device (or a v2 device and a controller held to v1): AuthConfirm, a v1 session.
            self._confirm_wire = encode_frame(
                KIND_HANDSHAKE,
                self._own_sender,
                self._device_id,
                0,
                AuthConfirm(device_nonce=hello.device_nonce).encode(),
                key=key,
            )
            self._write(self._confirm_wire, now_s)
            self._establish_v1(now_s)
            return
        dropped = self._adopt_stream_for(frame.device_id)
        window = min(hello.max_window, self._offered_window)
        peer_knows_ours = hello.peer_stream_id == self._tx_stream_id
        knows_theirs = hello.stream_id == self._rx_stream_id
        if peer_knows_ours:
            self._discard_delivered(hello.delivered_seq)
        elif self._peer_restarted(hello.stream_id):
            dropped += self._give_up_queued()
        confirm = AuthConfirmV2(
            device_nonce=hello.device_nonce,
            protocol_version=PROTOCOL_V2,
            window=window,
            stream_id=self._tx_stream_id,
            send_seq=self._first_unacknowledged_seq(),
            peer_stream_id=hello.stream_id if knows_theirs else NO_STREAM,
            delivered_seq=self._last_delivered_seq if knows_theirs else 0,
        )
        self._confirm_wire = encode_frame(
            KIND_HANDSHAKE,
            self._own_sender,
            self._device_id,
            0,
            confirm.encode(),
            key=key,
            version=PROTOCOL_V2,
        )
        self._write(self._confirm_wire, now_s)
        self._establish_v2(
            now_s,
            window=window,
            peer_stream_id=hello.stream_id,
            peer_send_seq=hello.send_seq,
            peer_knows_ours=peer_knows_ours,
            peer_delivered_seq=hello.delivered_seq,
            dropped=dropped,
        )

    # --- streams --------------------------------------------------------------------------------------
    def _first_unacknowledged_seq(self) -> int:
        """The seq of the first DATA frame this side will send next session."""
        if self._in_flight:
            return self._in_flight[0].seq
        if self._queue:
            return self._queue[0].seq
        return self._next_seq

    def _resume_consistent(self, peer_stream_id: bytes, delivered_seq: int) -> bool:
        """A peer that says it delivered seq N of our stream cannot have more than we sent, nor less
        than it already acknowledged (we dropped those)."""
        if peer_stream_id != self._tx_stream_id or peer_stream_id == NO_STREAM:
            return True
        return self._first_unacknowledged_seq() - 1 <= delivered_seq < self._next_seq

    def _adopt_stream_for(self, device_id: int) -> tuple[tuple[int, Message], ...]:
        """Controller: our stream was numbered for one device; if another answers, what it held for the
        first is given up (returned, for LinkUp.dropped) and a new stream starts."""
        dropped: tuple[tuple[int, Message], ...] = ()
        if self._tx_peer_device_id not in (ANY_DEVICE_ID, device_id):
            dropped = self._clear_outgoing()
            self._tx_stream_id = self._fresh_stream_id()
        self._tx_peer_device_id = device_id
        return dropped

    def _clear_outgoing(self) -> tuple[tuple[int, Message], ...]:
        gone = [*self._in_flight, *self._queue]
        self._in_flight.clear()
        self._queue.clear()
        self._next_seq = FIRST_SEQ
        return tuple((item.seq, item.message) for item in gone if not item.internal)

    def _peer_restarted(self, peer_stream_id: bytes) -> bool:
        """The peer comes back with another stream than the one we delivered from: it powered up (or
        its process restarted) since. (A peer that merely never finished a handshake with us keeps its
        stream, and gets everything we hold for it.)"""
        return self._rx_stream_id not in (NO_STREAM, peer_stream_id)

    def _give_up_queued(self) -> tuple[tuple[int, Message], ...]:
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

    def _discard_delivered(self, delivered_seq: int) -> None:
        """The peer says it delivered our stream up to ``delivered_seq``: those are acknowledged."""
        while self._queue and self._queue[0].seq <= delivered_seq:
            item = self._queue.popleft()
            if not item.internal:
                self._events.append(MessageAcked(item.seq))

    def _establish_v1(self, now_s: float) -> None:
        self._version = PROTOCOL_V1
        self._window = 1
        # A v1 session numbers from 1 and forgets: anything an earlier v2 stream still held is given
        # up here (reported in LinkUp.dropped) rather than renumbered behind the application's back.
        dropped = self._clear_outgoing()
        self._tx_stream_id = NO_STREAM
        self._rx_stream_id = NO_STREAM
        self._last_delivered_seq = FIRST_SEQ - 1
        self._held.clear()
        self._establish(now_s, resumed=False, dropped=dropped)

    def _establish_v2(
        self,
        now_s: float,
        *,
        window: int,
        peer_stream_id: bytes,
        peer_send_seq: int,
        peer_knows_ours: bool,
        peer_delivered_seq: int,
        dropped: tuple[tuple[int, Message], ...] = (),
    ) -> None:
        self._version = PROTOCOL_V2
        self._window = window
        if peer_knows_ours:
            self._discard_delivered(peer_delivered_seq)
        elif self._peer_restarted(peer_stream_id):
            dropped += self._give_up_queued()
        resent = sum(1 for item in self._queue if not item.internal)
        self.stats.resent_after_resume += resent
        if peer_stream_id != self._rx_stream_id:
            # A stream we never delivered from (the peer powered up, or this is our first session):
            # it starts where the peer says it does.
            self._rx_stream_id = peer_stream_id
            self._last_delivered_seq = peer_send_seq - 1
        self._held.clear()
        self._establish(now_s, resumed=peer_knows_ours, dropped=dropped)
        self._pump(now_s)

    def _establish(self, now_s: float, *, resumed: bool, dropped: tuple[tuple[int, Message], ...]) -> None:
        assert self._hello is not None
        self._session_key = derive_session_key(
            self._keyring[self._device_id], self._controller_nonce, self._device_nonce, self._device_id
        )
        self._state = LinkState.UP
        self._last_heard_s = now_s
        self._last_sent_s = now_s
        self._last_nak_s = float("-inf")
        self._ack_owed = False
        self._events.append(
            LinkUp(self._device_id, self._hello, self._version, self._window, resumed, dropped)
        )

    # --- state ----------------------------------------------------------------------------------------
    def _fresh_nonce(self) -> bytes:
        nonce = self._random_bytes(NONCE_LEN)
        if len(nonce) != NONCE_LEN:
            raise ValueError(f"random_bytes returned {len(nonce)} bytes, not {NONCE_LEN}")
        return nonce

    def _fresh_stream_id(self) -> bytes:
        stream_id = self._random_bytes(STREAM_ID_LEN)
        if len(stream_id) != STREAM_ID_LEN:
            raise ValueError(f"random_bytes returned {len(stream_id)} bytes, not {STREAM_ID_LEN}")
        # All zeros means "no stream"; a CSPRNG draws it once in 2**64, and then we draw again.
        return stream_id if stream_id != NO_STREAM else self._fresh_stream_id()

    def _reset_handshake(self) -> None:
        self._session_key = None
        self._hello = None
        self._controller_nonce = b""
        self._device_nonce = b""
        self._confirm_wire = b""

    def _go_down(self, reason: str) -> None:
        unacknowledged: tuple[tuple[int, Message], ...] = ()
        if reason == "seq_exhausted" or (self._state is LinkState.UP and self._version == PROTOCOL_V1):
            # v1 hands back what was not acknowledged; so does a stream whose seqs ran out (the next
            # v2 session starts a new stream, and the peer cannot tell old numbers from new).
            unacknowledged = self._clear_outgoing()
            if reason == "seq_exhausted":
                self._tx_stream_id = NO_STREAM
        else:
            # v2 (or a handshake that failed): everything unacknowledged stays, in order, for the next
            # session to resend what the peer says it lacks.
            self._queue = deque([*self._in_flight, *self._queue])
            self._in_flight.clear()
        self._events.append(LinkDown(reason, unacknowledged))
        self._state = LinkState.DOWN
        self._session_key = None
        self._held.clear()
        self._ack_owed = False


def _kind_name(kind: int) -> str:
    return {KIND_DATA: "data", KIND_ACK: "ack", KIND_NAK: "nak", KIND_HANDSHAKE: "handshake"}.get(kind, "?")
