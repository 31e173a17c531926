"""The handshake of a link (docs/protocol.md §7): who the peer is, which version and window the session
runs, and the session it opens (``open_session``, with the key of §7.4). No I/O, no clock of its own,
and no stream state: what a side says of its streams in a v2 handshake is handed in as a
``StreamPosition``, and what the peer said comes out as one.

    controller                                   device
    challenge() ── AuthChallenge(nonce) ──────>  on_frame() -> Challenged
                                                 answer(nonce, position) -> the Hello
    on_frame() -> Agreed  <───── Hello / HelloV2
    confirm(agreed, position) ── AuthConfirm(V2) ──> on_frame() -> Agreed

``on_frame`` checks one handshake frame (its device id, its tag, its nonces, the version it offers)
and returns what the link is to do: ``Refused`` (a SecurityAlert, and sometimes the link goes down),
``Repeated`` (a copy of a message already answered), ``Challenged`` (device: answer a new challenge) or
``Agreed`` (the peer's terms; the link checks them against its streams, then the session starts).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from firmware_protocol.constants import (
    ANY_DEVICE_ID,
    DEFAULT_WINDOW,
    HANDSHAKE_MAX_RETRIES,
    HANDSHAKE_RETRY_S,
    KIND_HANDSHAKE,
    MAX_WINDOW,
    NONCE_LEN,
    PROTOCOL_V1,
    PROTOCOL_V2,
    STREAM_ID_LEN,
    TAG_LEN,
)
from firmware_protocol.crypto import check_device_key, derive_session_key, tag_matches
from firmware_protocol.errors import FieldError
from firmware_protocol.events import NO_STREAM, SUPPORTED_VERSIONS, AnyHello, DeviceIdentity, LinkState, Role
from firmware_protocol.framing import Frame, encode_frame
from firmware_protocol.messages import (
    AuthChallenge,
    AuthConfirm,
    AuthConfirmV2,
    Hello,
    HelloV2,
    Message,
    decode_message,
)
from firmware_protocol.session import SENDER_BY_ROLE, Session


@dataclass(frozen=True, slots=True)
class StreamPosition:
    """What one side says of the two v2 streams in its Hello or AuthConfirmV2."""

    stream_id: bytes
    """The side's own sending stream."""
    send_seq: int
    """The first seq it sends this session."""
    peer_stream_id: bytes
    """The other side's stream it delivers from (NO_STREAM: none it knows)."""
    delivered_seq: int
    """The last seq of ``peer_stream_id`` it delivered (0 with NO_STREAM)."""


@dataclass(frozen=True, slots=True)
class Refused:
    """The frame is refused: a SecurityAlert(reason, detail, device_id); ``go_down`` (when set) is the
    reason the link goes down for."""

    reason: str
    detail: str
    device_id: int
    go_down: str | None = None


@dataclass(frozen=True, slots=True)
class Repeated:
    """A copy of a handshake message this side answered already: ``answer`` is written again (when not
    empty) and ``duplicate`` says whether it counts in LinkStats.duplicates."""

    answer: bytes
    duplicate: bool


@dataclass(frozen=True, slots=True)
class Challenged:
    """Device: a new challenge; a session that was up is over, and ``answer()`` makes the Hello."""

    controller_nonce: bytes


@dataclass(frozen=True, slots=True)
class Agreed:
    """The peer's terms: the device, its Hello, the session's version and window, and (v2) what the
    peer said of the streams. Controller: ``confirm()`` them; device: the session starts."""

    device_id: int
    hello: AnyHello
    version: int
    window: int
    peer: StreamPosition | None


HandshakeOutcome = Refused | Repeated | Challenged | Agreed


class Handshake:
    """One side's handshakes, one after another, for the life of its Link: the keys, the nonces, the
    Hello of the last handshake, and the frame to send again while waiting for an answer."""

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
        DATA frames in flight it offers for a v2 session (1..MAX_WINDOW). Each is checked here
        (ValueError), once for the life of the Link that holds this handshake."""
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
        self.versions = spoken
        self.offered_window = window
        self._keyring = dict(keyring)
        self._identity = identity
        self._random_bytes = random_bytes
        self._own_sender = SENDER_BY_ROLE[role]
        self.device_id = next(iter(self._keyring)) if role is Role.DEVICE else ANY_DEVICE_ID
        """The device's id: a device's own; a controller's, the one that answered (0 before)."""
        self.hello: AnyHello | None = None
        """The Hello of the last handshake (sent by a device, received by a controller)."""
        self._controller_nonce = b""
        self._device_nonce = b""
        self._wire = b""  # the frame to resend: AuthChallenge (controller) or Hello (device)
        self._confirm_wire = b""  # controller: the AuthConfirm, resent when a Hello is repeated
        self._sent_s = 0.0
        self._retries = 0

    # --- keys and randomness --------------------------------------------------------------------------
    def knows(self, device_id: int) -> bool:
        """``device_id`` has a key in the keyring."""
        return device_id in self._keyring

    def open_session(self, *, version: int, window: int, now_s: float) -> Session:
        """The session the handshake just agreed, with its key (docs/protocol.md §7.4)."""
        assert self.hello is not None
        key = derive_session_key(
            self._keyring[self.device_id], self._controller_nonce, self._device_nonce, self.device_id
        )
        return Session(
            self.role,
            self.device_id,
            self.hello,
            key,
            version=version,
            window=window,
            now_s=now_s,
            knows=self.knows,
        )

    def fresh_stream_id(self) -> bytes:
        """A new v2 stream id, from the same random source as the nonces."""
        stream_id = self._random_bytes(STREAM_ID_LEN)
        if len(stream_id) != STREAM_ID_LEN:
            raise ValueError(f"random_bytes returned {len(stream_id)} bytes, not {STREAM_ID_LEN}")
        # All zeros means "no stream"; a CSPRNG draws it once in 2**64, and then we draw again.
        return stream_id if stream_id != NO_STREAM else self.fresh_stream_id()

    def _fresh_nonce(self) -> bytes:
        nonce = self._random_bytes(NONCE_LEN)
        if len(nonce) != NONCE_LEN:
            raise ValueError(f"random_bytes returned {len(nonce)} bytes, not {NONCE_LEN}")
        return nonce

    def _reset(self) -> None:
        self.hello = None
        self._controller_nonce = b""
        self._device_nonce = b""
        self._confirm_wire = b""

    # --- the retry timer (while the link is handshaking) ----------------------------------------------
    def deadline_s(self) -> float:
        return self._sent_s + HANDSHAKE_RETRY_S

    def retry_due(self, now_s: float) -> bool:
        return now_s - self._sent_s >= HANDSHAKE_RETRY_S

    def retry(self, now_s: float) -> bytes | None:
        """The challenge (or Hello) to send again; None when the retries are spent."""
        if self._retries >= HANDSHAKE_MAX_RETRIES:
            return None
        self._retries += 1
        self._sent_s = now_s
        return self._wire

    def _start(self, wire: bytes, now_s: float) -> bytes:
        self._wire = wire
        self._retries = 0
        self._sent_s = now_s
        return wire

    # --- the messages this side sends -----------------------------------------------------------------
    def challenge(self, now_s: float) -> bytes:
        """Controller: a new handshake's AuthChallenge."""
        self._reset()
        self._controller_nonce = self._fresh_nonce()
        device_id = next(iter(self._keyring)) if len(self._keyring) == 1 else ANY_DEVICE_ID
        self.device_id = ANY_DEVICE_ID
        payload = AuthChallenge(controller_nonce=self._controller_nonce).encode()
        # The challenge is the one unauthenticated frame: it carries only a nonce, and what answers it
        # (the Hello) is authenticated over that nonce. It is a v1 frame, so a device of any version
        # can answer, and the answer says which versions the device speaks.
        return self._start(
            encode_frame(KIND_HANDSHAKE, self._own_sender, device_id, 0, payload, key=None), now_s
        )

    def answer(self, controller_nonce: bytes, position: StreamPosition | None, now_s: float) -> bytes:
        """Device: the Hello answering a new challenge; ``position`` (required when this side speaks v2)
        is what it says of the streams."""
        assert self._identity is not None
        self._reset()
        self._controller_nonce = controller_nonce
        self._device_nonce = self._fresh_nonce()
        hello: AnyHello
        if PROTOCOL_V2 in self.versions:
            assert position is not None
            hello = HelloV2(
                device_kind=self._identity.device_kind,
                protocol_versions=self.versions,
                max_window=self.offered_window,
                model=self._identity.model,
                serial_number=self._identity.serial_number,
                firmware_version=self._identity.firmware_version,
                device_nonce=self._device_nonce,
                controller_nonce=self._controller_nonce,
                stream_id=position.stream_id,
                send_seq=position.send_seq,
                peer_stream_id=position.peer_stream_id,
                delivered_seq=position.delivered_seq,
            )
        else:
            hello = Hello(
                device_kind=self._identity.device_kind,
                protocol_version=PROTOCOL_V1,
                model=self._identity.model,
                serial_number=self._identity.serial_number,
                firmware_version=self._identity.firmware_version,
                device_nonce=self._device_nonce,
                controller_nonce=self._controller_nonce,
            )
        self.hello = hello
        return self._start(self._signed_frame(hello), now_s)

    def confirm(self, agreed: Agreed, position: StreamPosition | None) -> bytes:
        """Controller: accept the device's Hello; the AuthConfirm (v1) or AuthConfirmV2 saying
        ``position`` of the streams (v2) that completes the handshake."""
        self.device_id = agreed.device_id
        self._device_nonce = agreed.hello.device_nonce
        self.hello = agreed.hello
        confirm: AuthConfirm | AuthConfirmV2
        if position is None:
            confirm = AuthConfirm(device_nonce=agreed.hello.device_nonce)
        else:
            confirm = AuthConfirmV2(
                device_nonce=agreed.hello.device_nonce,
                protocol_version=PROTOCOL_V2,
                window=agreed.window,
                stream_id=position.stream_id,
                send_seq=position.send_seq,
                peer_stream_id=position.peer_stream_id,
                delivered_seq=position.delivered_seq,
            )
        self._confirm_wire = self._signed_frame(confirm)
        return self._confirm_wire

    def _signed_frame(self, message: Message) -> bytes:
        """A Hello or an AuthConfirm (either version) in a HANDSHAKE frame of its own version, under the
        key of the device the handshake is with."""
        return encode_frame(
            KIND_HANDSHAKE,
            self._own_sender,
            self.device_id,
            0,
            message.encode(),
            key=self._keyring[self.device_id],
            version=message.PROTOCOL,
        )

    # --- the messages this side receives --------------------------------------------------------------
    def on_frame(self, frame: Frame, state: LinkState, now_s: float) -> HandshakeOutcome:
        """A HANDSHAKE frame from the peer (its sender already checked), with the link's ``state``."""
        message_type = frame.payload[0]
        if self.role is Role.DEVICE:
            if message_type == AuthChallenge.TYPE:
                return self._on_challenge(frame, state, now_s)
            if message_type in (AuthConfirm.TYPE, AuthConfirmV2.TYPE):
                return self._on_confirm(frame, state)
            return Refused(
                "handshake_failed", f"message type 0x{message_type:02x} from a controller", frame.device_id
            )
        if message_type in (Hello.TYPE, HelloV2.TYPE):
            return self._on_hello(frame, state)
        return Refused(
            "handshake_failed", f"message type 0x{message_type:02x} from a device", frame.device_id
        )

    @staticmethod
    def _decode(frame: Frame, what: str) -> Message | Refused:
        """The handshake message ``frame`` carries, in a frame of its own version."""
        try:
            message = decode_message(frame.payload)
        except FieldError as error:
            return Refused("handshake_failed", f"{what}: {error}", frame.device_id)
        if frame.version != message.PROTOCOL:
            return Refused(
                "handshake_failed", f"{message.NAME} in a version {frame.version} frame", frame.device_id
            )
        return message

    def _on_challenge(self, frame: Frame, state: LinkState, now_s: float) -> HandshakeOutcome:
        if frame.device_id not in (ANY_DEVICE_ID, self.device_id):
            return Refused("wrong_device", f"challenge for device {frame.device_id}", frame.device_id)
        challenge = self._decode(frame, "auth_challenge")
        if isinstance(challenge, Refused):
            return challenge
        assert isinstance(challenge, AuthChallenge)
        if frame.tag != bytes(TAG_LEN):
            return Refused("bad_tag", "an auth_challenge's tag must be all zeros", frame.device_id)
        if challenge.controller_nonce == self._controller_nonce:
            if state is LinkState.HANDSHAKING:
                self._sent_s = now_s  # our Hello was lost: say it again, same nonces
                return Repeated(self._wire, duplicate=False)
            if state is LinkState.UP:
                # A late copy of the challenge this session answered (the controller sent it twice).
                return Repeated(b"", duplicate=True)
        return Challenged(challenge.controller_nonce)

    def _on_confirm(self, frame: Frame, state: LinkState) -> HandshakeOutcome:
        if frame.device_id != self.device_id:
            return Refused("wrong_device", f"auth_confirm for device {frame.device_id}", frame.device_id)
        if not tag_matches(self._keyring[self.device_id], frame.signed, frame.tag):
            return Refused("bad_tag", "auth_confirm", frame.device_id)
        confirm = self._decode(frame, "auth_confirm")
        if isinstance(confirm, Refused):
            return confirm
        assert isinstance(confirm, AuthConfirm | AuthConfirmV2)
        if confirm.device_nonce != self._device_nonce or not self._device_nonce:
            return Refused("stale_handshake", "auth_confirm for another handshake's nonce", frame.device_id)
        if state is LinkState.UP:
            return Repeated(b"", duplicate=True)  # the controller saw our Hello twice and confirmed twice
        if state is not LinkState.HANDSHAKING:
            return Refused("stale_handshake", "auth_confirm after the handshake timed out", frame.device_id)
        assert self.hello is not None
        if isinstance(confirm, AuthConfirm):
            if PROTOCOL_V1 not in self.versions:
                return Refused(
                    "handshake_failed", "a v1 auth_confirm to a device without v1", frame.device_id
                )
            return Agreed(self.device_id, self.hello, PROTOCOL_V1, 1, None)
        if not isinstance(self.hello, HelloV2) or confirm.window > self.offered_window:
            return Refused(
                "handshake_failed", "auth_confirm_v2 that our hello did not offer", frame.device_id
            )
        peer = StreamPosition(
            confirm.stream_id, confirm.send_seq, confirm.peer_stream_id, confirm.delivered_seq
        )
        return Agreed(self.device_id, self.hello, PROTOCOL_V2, confirm.window, peer)

    def _on_hello(self, frame: Frame, state: LinkState) -> HandshakeOutcome:
        key = self._keyring.get(frame.device_id)
        if key is None:
            return Refused(
                "unknown_device", f"device_id {frame.device_id} has no provisioned key", frame.device_id
            )
        if not tag_matches(key, frame.signed, frame.tag):
            return Refused("bad_tag", "hello", frame.device_id)
        hello = self._decode(frame, "hello")
        if isinstance(hello, Refused):
            return hello
        assert isinstance(hello, Hello | HelloV2)
        if state is LinkState.UP and hello == self.hello and frame.device_id == self.device_id:
            return Repeated(self._confirm_wire, duplicate=True)  # our AuthConfirm was lost: say it again
        if state is not LinkState.HANDSHAKING or hello.controller_nonce != self._controller_nonce:
            return Refused("stale_handshake", "hello answers no challenge of ours", frame.device_id)
        offered = hello.protocol_versions if isinstance(hello, HelloV2) else (hello.protocol_version,)
        common = set(offered) & set(self.versions)
        if not common:
            return Refused(
                "handshake_failed",
                f"device speaks protocol {offered}, this controller {self.versions}",
                frame.device_id,
                go_down="unsupported_protocol_version",
            )
        if isinstance(hello, HelloV2) and PROTOCOL_V2 in common:
            window = min(hello.max_window, self.offered_window)
            peer = StreamPosition(hello.stream_id, hello.send_seq, hello.peer_stream_id, hello.delivered_seq)
            return Agreed(frame.device_id, hello, PROTOCOL_V2, window, peer)
        # A v1 device (or a v2 device and a controller held to v1): AuthConfirm, a v1 session.
        return Agreed(frame.device_id, hello, PROTOCOL_V1, 1, None)
