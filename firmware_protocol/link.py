"""The sans-I/O link: handshake, authentication, sequencing, ACK/NAK, retransmission, heartbeats.

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

Guarantees (docs/protocol.md §6): messages are delivered to the peer's application exactly once and in
the order sent, or the link goes down (``LinkDown`` names the messages never acknowledged). A frame
with a bad tag, from an unknown device, or with an old sequence number is dropped and reported as a
``SecurityAlert``; line noise (bad CRC, bad COBS) is counted in ``stats`` and answered with a NAK.
Heartbeats are sent and absorbed by the link itself; the application never sees them.
"""

from __future__ import annotations

import enum
import secrets
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from firmware_protocol.constants import (
    ACK_TIMEOUT_S,
    ANY_DEVICE_ID,
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
    NAK_HOLDOFF_S,
    NONCE_LEN,
    PROTOCOL_VERSION,
    SENDER_CONTROLLER,
    SENDER_DEVICE,
    TAG_LEN,
)
from firmware_protocol.crypto import check_device_key, derive_session_key, tag_matches
from firmware_protocol.errors import FieldError, LinkError
from firmware_protocol.framing import DecodedFrame, Frame, FrameDecoder, RefusedFrame, encode_frame
from firmware_protocol.messages import (
    AuthChallenge,
    AuthConfirm,
    DeviceKind,
    Heartbeat,
    Hello,
    Message,
    decode_message,
)


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
    """The handshake completed: the device is who it says (it holds its key) and a session key is set."""

    device_id: int
    hello: Hello


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
    handshake_failed (docs/protocol.md §9.3)."""

    reason: str
    detail: str
    device_id: int


@dataclass(frozen=True, slots=True)
class LinkDown:
    """The link is down. ``unacknowledged``: (seq, message) sent or queued but never acknowledged; the
    peer may or may not have received the first of them."""

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
    refused: Counter[str] = field(default_factory=Counter)
    """Frames refused, by code (bad_crc, bad_cobs, ..., and the security reasons)."""


@dataclass(slots=True)
class _Outgoing:
    seq: int
    message: Message
    internal: bool  # a heartbeat the link made itself: no MessageAcked, not in LinkDown
    wire: bytes = b""


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
    ) -> None:
        """``keyring`` maps device_id -> provisioned 32-byte key: for a controller, every device that
        may answer on this line; for a device, exactly its own id and key. ``random_bytes`` makes the
        nonces (tests pass a seeded one; production keeps the default, the OS's CSPRNG)."""
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
        self.role = role
        self._keyring = dict(keyring)
        self._identity = identity
        self._random_bytes = random_bytes
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
        self._hello: Hello | None = None
        self._session_key: bytes | None = None
        # sending
        self._next_seq = FIRST_SEQ
        self._queue: deque[_Outgoing] = deque()
        self._outstanding: _Outgoing | None = None
        self._outstanding_sent_s = 0.0
        self._retries = 0
        self._last_sent_s = 0.0
        # receiving
        self._last_delivered_seq = FIRST_SEQ - 1
        self._last_heard_s = 0.0
        self._last_nak_s = float("-inf")

    # --- construction helpers -------------------------------------------------------------------------
    @classmethod
    def controller(
        cls, keyring: Mapping[int, bytes], *, random_bytes: Callable[[int], bytes] = secrets.token_bytes
    ) -> Link:
        return cls(Role.CONTROLLER, keyring, random_bytes=random_bytes)

    @classmethod
    def device(
        cls,
        device_id: int,
        key: bytes,
        identity: DeviceIdentity,
        *,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
    ) -> Link:
        return cls(Role.DEVICE, {device_id: key}, identity=identity, random_bytes=random_bytes)

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
    def peer_hello(self) -> Hello | None:
        """The Hello of the current session (the device's identity), or None."""
        return self._hello if self._state is LinkState.UP else None

    @property
    def pending_count(self) -> int:
        """Messages queued or waiting for their ACK."""
        return len(self._queue) + (1 if self._outstanding is not None else 0)

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
        deadlines = [self._last_heard_s + LINK_SILENCE_TIMEOUT_S, self._last_sent_s + HEARTBEAT_INTERVAL_S]
        if self._outstanding is not None:
            deadlines.append(self._outstanding_sent_s + ACK_TIMEOUT_S)
        return min(deadlines)

    # --- what the caller does -------------------------------------------------------------------------
    def connect(self, now_s: float) -> None:
        """Controller: start a handshake (again). A session that was up goes down first."""
        if self.role is not Role.CONTROLLER:
            raise LinkError("only the controller starts a handshake")
        if self._state is LinkState.UP:
            self._go_down("reconnect")
        self._reset_session()
        self._controller_nonce = self._fresh_nonce()
        device_id = next(iter(self._keyring)) if len(self._keyring) == 1 else ANY_DEVICE_ID
        self._device_id = ANY_DEVICE_ID
        payload = AuthChallenge(controller_nonce=self._controller_nonce).encode()
        # The challenge is the one unauthenticated frame: it carries only a nonce, and what answers it
        # (the Hello) is authenticated over that nonce.
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
        ack_overdue = self._outstanding is not None and now_s - self._outstanding_sent_s >= ACK_TIMEOUT_S
        if ack_overdue and not self._retransmit(now_s):
            return
        if (
            self._outstanding is None
            and not self._queue
            and now_s - self._last_sent_s >= HEARTBEAT_INTERVAL_S
        ):
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
        """Stop-and-wait: put the next queued message on the line when nothing awaits an ACK."""
        if self._outstanding is not None or not self._queue or self._session_key is None:
            return
        item = self._queue.popleft()
        item.wire = encode_frame(
            KIND_DATA,
            self._own_sender,
            self._device_id,
            item.seq,
            item.message.encode(),
            key=self._session_key,
        )
        self._outstanding = item
        self._retries = 0
        self._write(item.wire, now_s)
        self._outstanding_sent_s = now_s

    def _retransmit(self, now_s: float) -> bool:
        """Send the outstanding frame again; False when its retries are spent and the link went down."""
        assert self._outstanding is not None
        if self._retries >= MAX_RETRIES:
            # Our own heartbeat went unanswered: the peer missed its heartbeats, not a message.
            self._go_down("heartbeat_missed" if self._outstanding.internal else "no_ack")
            return False
        self._retries += 1
        self.stats.retransmissions += 1
        self._write(self._outstanding.wire, now_s)
        self._outstanding_sent_s = now_s
        return True

    def _send_control(self, kind: int, seq: int, now_s: float) -> None:
        assert self._session_key is not None
        self._write(
            encode_frame(kind, self._own_sender, self._device_id, seq, b"", key=self._session_key), now_s
        )

    def _write(self, wire: bytes, now_s: float) -> None:
        self._out += wire
        self.stats.frames_sent += 1
        self._last_sent_s = now_s

    # --- receiving ------------------------------------------------------------------------------------
    def _on_refused(self, refused: RefusedFrame, now_s: float) -> None:
        self.stats.refused[refused.code] += 1
        # Noise may have eaten the peer's DATA frame: a NAK asks for it again without waiting for the
        # peer's timer. The holdoff keeps one burst of noise from costing several retries.
        if (
            self._state is LinkState.UP
            and refused.code in _NAK_WORTHY
            and now_s - self._last_nak_s >= NAK_HOLDOFF_S
        ):
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
        self.stats.frames_accepted += 1
        self._last_heard_s = now_s
        if frame.kind == KIND_ACK:
            self._on_ack(frame.seq, now_s)
        elif frame.kind == KIND_NAK:
            if self._outstanding is not None and frame.seq == self._outstanding.seq:
                self._retransmit(now_s)
        else:
            self._on_data(frame, now_s)

    def _on_ack(self, seq: int, now_s: float) -> None:
        outstanding = self._outstanding
        if outstanding is None or seq != outstanding.seq:
            self.stats.refused["stale_ack"] += 1
            return
        self._outstanding = None
        if not outstanding.internal:
            self._events.append(MessageAcked(seq))
        self._pump(now_s)

    def _on_data(self, frame: Frame, now_s: float) -> None:
        expected = self._last_delivered_seq + 1
        if frame.seq == self._last_delivered_seq and frame.seq >= FIRST_SEQ:
            # The peer did not get our ACK and sent the frame again: acknowledge, deliver nothing.
            self.stats.duplicates += 1
            self._send_control(KIND_ACK, frame.seq, now_s)
            return
        if frame.seq < expected:
            self._alert(
                "replay", f"seq {frame.seq}, already past {self._last_delivered_seq}", frame.device_id
            )
            return
        if frame.seq > expected:
            self._alert("bad_sequence", f"seq {frame.seq}, expected {expected}", frame.device_id)
            return
        self._last_delivered_seq = frame.seq
        self._send_control(KIND_ACK, frame.seq, now_s)
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
            elif message_type == AuthConfirm.TYPE:
                self._on_confirm(frame, now_s)
            else:
                self._alert(
                    "handshake_failed",
                    f"message type 0x{message_type:02x} from a controller",
                    frame.device_id,
                )
        elif message_type == Hello.TYPE:
            self._on_hello(frame, now_s)
        else:
            self._alert(
                "handshake_failed", f"message type 0x{message_type:02x} from a device", frame.device_id
            )

    def _on_challenge(self, frame: Frame, now_s: float) -> None:
        if frame.device_id not in (ANY_DEVICE_ID, self._device_id):
            self._alert("wrong_device", f"challenge for device {frame.device_id}", frame.device_id)
            return
        try:
            challenge = decode_message(frame.payload)
        except FieldError as error:
            self._alert("handshake_failed", f"auth_challenge: {error}", frame.device_id)
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
            # A new challenge means the controller restarted: this session is over.
            self._go_down("new_handshake")
        self._reset_session()
        assert self._identity is not None
        self._controller_nonce = challenge.controller_nonce
        self._device_nonce = self._fresh_nonce()
        hello = Hello(
            device_kind=self._identity.device_kind,
            protocol_version=PROTOCOL_VERSION,
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
        try:
            confirm = decode_message(frame.payload)
        except FieldError as error:
            self._alert("handshake_failed", f"auth_confirm: {error}", frame.device_id)
            return
        assert isinstance(confirm, AuthConfirm)
        if confirm.device_nonce != self._device_nonce or not self._device_nonce:
            self._alert("stale_handshake", "auth_confirm for another handshake's nonce", frame.device_id)
            return
        if self._state is LinkState.UP:
            self.stats.duplicates += 1  # the controller saw our Hello twice and confirmed twice
            return
        if self._state is not LinkState.HANDSHAKING:
            self._alert("stale_handshake", "auth_confirm after the handshake timed out", frame.device_id)
            return
        self._establish(now_s)

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
        try:
            hello = decode_message(frame.payload)
        except FieldError as error:
            self._alert("handshake_failed", f"hello: {error}", frame.device_id)
            return
        assert isinstance(hello, Hello)
        if self._state is LinkState.UP and hello == self._hello and frame.device_id == self._device_id:
            self.stats.duplicates += 1  # our AuthConfirm was lost: say it again
            self._write(self._confirm_wire, now_s)
            return
        if self._state is not LinkState.HANDSHAKING or hello.controller_nonce != self._controller_nonce:
            self._alert("stale_handshake", "hello answers no challenge of ours", frame.device_id)
            return
        if hello.protocol_version != PROTOCOL_VERSION:
            self._alert(
                "handshake_failed",
                f"device speaks protocol {hello.protocol_version}, this controller {PROTOCOL_VERSION}",
                frame.device_id,
            )
            self._go_down("unsupported_protocol_version")
            return
        self._device_id = frame.device_id
        self._device_nonce = hello.device_nonce
        self._hello = hello
        self._confirm_wire = encode_frame(
            KIND_HANDSHAKE,
            self._own_sender,
            self._device_id,
            0,
            AuthConfirm(device_nonce=hello.device_nonce).encode(),
            key=key,
        )
        self._write(self._confirm_wire, now_s)
        self._establish(now_s)

    def _establish(self, now_s: float) -> None:
        assert self._hello is not None
        self._session_key = derive_session_key(
            self._keyring[self._device_id], self._controller_nonce, self._device_nonce, self._device_id
        )
        self._state = LinkState.UP
        self._last_heard_s = now_s
        self._events.append(LinkUp(self._device_id, self._hello))

    # --- state ----------------------------------------------------------------------------------------
    def _fresh_nonce(self) -> bytes:
        nonce = self._random_bytes(NONCE_LEN)
        if len(nonce) != NONCE_LEN:
            raise ValueError(f"random_bytes returned {len(nonce)} bytes, not {NONCE_LEN}")
        return nonce

    def _reset_session(self) -> None:
        self._session_key = None
        self._hello = None
        self._controller_nonce = b""
        self._device_nonce = b""
        self._confirm_wire = b""
        self._next_seq = FIRST_SEQ
        self._last_delivered_seq = FIRST_SEQ - 1
        self._queue.clear()
        self._outstanding = None
        self._last_nak_s = float("-inf")

    def _go_down(self, reason: str) -> None:
        unacknowledged = [] if self._outstanding is None else [self._outstanding]
        unacknowledged += self._queue
        self._events.append(
            LinkDown(reason, tuple((item.seq, item.message) for item in unacknowledged if not item.internal))
        )
        self._state = LinkState.DOWN
        self._session_key = None
        self._queue.clear()
        self._outstanding = None


def _kind_name(kind: int) -> str:
    return {KIND_DATA: "data", KIND_ACK: "ack", KIND_NAK: "nak", KIND_HANDSHAKE: "handshake"}.get(kind, "?")
