"""Errors of the firmware protocol. Refused input is data, not a crash: streams report it as events."""

from __future__ import annotations


class ProtocolError(ValueError):
    """Base of every error this package raises."""


class FieldError(ProtocolError):
    """A message field out of range or of the wrong type. ``field`` names it, ``reason`` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class FrameError(ProtocolError):
    """A frame refused. ``code`` is one of the error codes in docs/protocol.md §9 (``bad_crc``, ...)."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


class LinkError(ProtocolError):
    """The Link cannot do what was asked (not up, send queue full)."""
