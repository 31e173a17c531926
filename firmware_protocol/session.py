"""One authenticated session of a link, from the handshake that made it to the link going down
(docs/protocol.md §6, §8, §9): who it is with (the device's id and Hello), its key, its version and
window.

``Session`` seals this side's DATA, ACK and NAK frames (``seal``), accepts the peer's (``accept``:
this session's device, a good tag, this session's version), says which messages each side may send in it
(``refuse_to_send``, ``admit``), says when an ACK is due (v1: for each DATA frame; v2: one per read),
and keeps its clocks: when the peer was last heard (silence ends the session), when this side last
wrote (idleness calls for a heartbeat), and when it last sent a NAK (the holdoff). It holds no stream
state: the numbered streams outlive a session (``send_window`` and ``receive_window``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from firmware_protocol.constants import (
    HEARTBEAT_INTERVAL_S,
    KIND_ACK,
    KIND_DATA,
    KIND_HANDSHAKE,
    KIND_NAK,
    LINK_SILENCE_TIMEOUT_S,
    NAK_HOLDOFF_S,
    PROTOCOL_V1,
    SENDER_CONTROLLER,
    SENDER_DEVICE,
)
from firmware_protocol.crypto import tag_matches
from firmware_protocol.errors import FieldError
from firmware_protocol.events import AnyHello, Role, SecurityAlert
from firmware_protocol.framing import Frame, encode_frame
from firmware_protocol.messages import Message, decode_message

SENDER_BY_ROLE: Final = {Role.CONTROLLER: SENDER_CONTROLLER, Role.DEVICE: SENDER_DEVICE}

_KIND_NAMES = {KIND_DATA: "data", KIND_ACK: "ack", KIND_NAK: "nak", KIND_HANDSHAKE: "handshake"}


class Session:
    """The terms and clocks of one session; made when a handshake completes (``Handshake.open_session``),
    at ``now_s``."""

    def __init__(  # noqa: PLR0913 - keyword-only session settings, each a protocol parameter
        self,
        role: Role,
        device_id: int,
        hello: AnyHello,
        key: bytes,
        *,
        version: int,
        window: int,
        now_s: float,
        knows: Callable[[int], bool],
    ) -> None:
        """``knows(device_id)``: a key is provisioned for that device (a frame from an unknown device
        is reported apart from one of a known device that is not this session's)."""
        self.role = role
        self.device_id = device_id
        self.hello = hello
        """The device's Hello: who it is."""
        self.version = version
        self.window = window
        """DATA frames in flight at most: 1 in v1."""
        self._key = key
        self._knows = knows
        self._sender = SENDER_BY_ROLE[role]
        self._peer = "device" if role is Role.CONTROLLER else "controller"
        self._last_heard_s = now_s
        self._last_sent_s = now_s
        self._last_nak_s = float("-inf")
        self._ack_owed = False

    # --- frames ---------------------------------------------------------------------------------------
    def seal(self, kind: int, seq: int, payload: bytes = b"") -> bytes:
        """This side's frame of ``kind``, tagged with the session key, in the session's version."""
        return encode_frame(
            kind, self._sender, self.device_id, seq, payload, key=self._key, version=self.version
        )

    def seal_message(self, seq: int, message: Message) -> bytes:
        """The DATA frame carrying ``message`` as ``seq``."""
        return encode_frame(
            KIND_DATA,
            self._sender,
            self.device_id,
            seq,
            message.encode(),
            key=self._key,
            version=self.version,
        )

    def accept(self, frame: Frame, now_s: float) -> SecurityAlert | str | None:
        """None when ``frame`` (a DATA, ACK or NAK from the peer's side) is authentic and this
        session's: the peer is heard at ``now_s``. Else a SecurityAlert to report, or the code of a
        refusal only counted (an authentic frame of another version: a peer's bug, not an attack)."""
        if frame.device_id != self.device_id:
            reason = "wrong_device" if self._knows(frame.device_id) else "unknown_device"
            return SecurityAlert(
                reason, f"device_id {frame.device_id} is not this session's", frame.device_id
            )
        if not tag_matches(self._key, frame.signed, frame.tag):
            kind_name = _KIND_NAMES.get(frame.kind, "?")
            return SecurityAlert("bad_tag", f"{kind_name} seq {frame.seq}", frame.device_id)
        if frame.version != self.version:
            # The tag covers the version byte, so nobody but the peer could have set it.
            return "bad_version"
        self._last_heard_s = now_s
        return None

    # --- messages -------------------------------------------------------------------------------------
    def refuse_to_send(self, message: Message) -> str | None:
        """Why this side may not send ``message`` in this session (None: it may)."""
        if message.HANDSHAKE:
            return f"{message.NAME} belongs to the handshake; the link sends it itself"
        if message.SENT_BY not in ("either", self.role.value):
            return f"{message.NAME} is sent by the {message.SENT_BY}, not the {self.role.value}"
        if self.version < message.PROTOCOL:
            return f"{message.NAME} is a v{message.PROTOCOL} message; this session is v{self.version}"
        return None

    def admit(self, payload: bytes) -> Message | str:
        """The message a delivered DATA frame carries, or why it is rejected: not a message, not one the
        peer may send, or not one of this session's version."""
        try:
            message = decode_message(payload)
        except FieldError as error:
            return str(error)
        if message.HANDSHAKE or message.SENT_BY not in ("either", self._peer):
            return f"{message.NAME} is not sent by a {self._peer}"
        if self.version < message.PROTOCOL:
            return f"{message.NAME} is not a v{self.version} message"
        return message

    # --- acknowledgement -----------------------------------------------------------------------------
    def ack_at_once(self) -> bool:
        """A DATA frame was taken (delivered, held or recognised as a copy). v1 acknowledges each frame
        at once (True); v2 owes one cumulative ACK for every DATA frame of one read (False), sent when
        the read is done: ``take_owed_ack``."""
        if self.version == PROTOCOL_V1:
            return True
        self._ack_owed = True
        return False

    def take_owed_ack(self) -> bool:
        """An ACK is owed for this read (and is now taken to be sent)."""
        owed, self._ack_owed = self._ack_owed, False
        return owed

    # --- clocks ---------------------------------------------------------------------------------------
    def wrote(self, now_s: float) -> None:
        """This side wrote a frame."""
        self._last_sent_s = now_s

    def silent(self, now_s: float) -> bool:
        """The peer has not been heard for LINK_SILENCE_TIMEOUT_S: the session is over."""
        return now_s - self._last_heard_s >= LINK_SILENCE_TIMEOUT_S

    def idle(self, now_s: float) -> bool:
        """This side has written nothing for HEARTBEAT_INTERVAL_S: time for a heartbeat."""
        return now_s - self._last_sent_s >= HEARTBEAT_INTERVAL_S

    def nak_allowed(self, now_s: float) -> bool:
        """A NAK may go now (one per NAK_HOLDOFF_S, so one burst of noise does not cost several retries
        of the peer's); if so, it is taken to have gone."""
        if now_s - self._last_nak_s < NAK_HOLDOFF_S:
            return False
        self._last_nak_s = now_s
        return True

    def deadline_s(self) -> float:
        """When the session's own clocks next need looking at (silence, or the next heartbeat)."""
        return min(self._last_heard_s + LINK_SILENCE_TIMEOUT_S, self._last_sent_s + HEARTBEAT_INTERVAL_S)
