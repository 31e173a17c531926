"""How each field of a message is checked, written, read and shown as JSON (docs/protocol.md §11).

A codec is one field's type on the wire; firmware_protocol/messages.py declares each field of a message
once, with its codec (``card: Annotated[int, CARD]``), in wire order. ``FieldReader`` walks a payload;
every read past its end, and every value out of range, is a FieldError that names the field.
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from firmware_protocol.constants import NONCE_LEN, STREAM_ID_LEN
from firmware_protocol.errors import FieldError
from firmware_protocol.vocabulary import (
    DECK_SIZE,
    MAX_SEAT,
    MAX_SPOT,
    NO_VALUE_U8,
    VALID_POSITIONS,
)

JsonValue: TypeAlias = Any


class FieldReader:
    """Reads fields from a payload; every read that runs past the end is a FieldError."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        self.offset = offset

    def take(self, count: int, field: str) -> bytes:
        end = self.offset + count
        if end > len(self.data):
            raise FieldError(field, f"payload ends after {len(self.data)} bytes, field needs {count} more")
        chunk = self.data[self.offset : end]
        self.offset = end
        return chunk


class Codec(ABC):
    """How one field is checked, written, read and shown as JSON. Abstract: a codec that lacks a way
    to check, write or read cannot be made (the module's constants are made at import, so a gap shows
    there, not at the first message that uses it)."""

    @abstractmethod
    def check(self, field: str, value: object) -> None:
        """FieldError (naming ``field``) unless ``value`` is one this field may carry."""

    @abstractmethod
    def write(self, value: Any, out: bytearray) -> None:
        """Append the checked ``value``'s bytes to ``out``."""

    @abstractmethod
    def read(self, reader: FieldReader, field: str) -> Any:
        """The value at the reader's offset (moved past it); FieldError naming ``field`` if invalid."""

    def to_json(self, value: Any) -> JsonValue:
        return value

    def from_json(self, field: str, raw: JsonValue) -> Any:
        return raw


def _require_int(field: str, value: object) -> int:
    # bool is an int in Python; on the wire and in JSON it is not.
    if not isinstance(value, int) or isinstance(value, bool):
        raise FieldError(field, f"must be an integer, not {type(value).__name__}")
    return value


@dataclass(frozen=True)
class UInt(Codec):
    """Unsigned big-endian integer of ``size`` bytes, range ``low..high``."""

    size: int
    low: int
    high: int

    def check(self, field: str, value: object) -> None:
        number = _require_int(field, value)
        if not self.low <= number <= self.high:
            raise FieldError(field, f"{number} is out of range {self.low}..{self.high}")

    def write(self, value: Any, out: bytearray) -> None:
        out += value.to_bytes(self.size, "big")

    def read(self, reader: FieldReader, field: str) -> Any:
        return int.from_bytes(reader.take(self.size, field), "big")


@dataclass(frozen=True)
class SInt64(Codec):
    """Signed 64-bit big-endian two's complement integer."""

    def check(self, field: str, value: object) -> None:
        number = _require_int(field, value)
        if not -(2**63) <= number < 2**63:
            raise FieldError(field, f"{number} does not fit a signed 64-bit integer")

    def write(self, value: Any, out: bytearray) -> None:
        out += struct.pack(">q", value)

    def read(self, reader: FieldReader, field: str) -> Any:
        return struct.unpack(">q", reader.take(8, field))[0]


@dataclass(frozen=True)
class Position(Codec):
    """A dealing position: 0 dealer/banker, 1..7 seats, 15 community. ``optional``: 0xFF is none."""

    optional: bool = False

    def check(self, field: str, value: object) -> None:
        if value is None and self.optional:
            return
        number = _require_int(field, value)
        if number not in VALID_POSITIONS:
            raise FieldError(field, f"{number} is not a position (0 dealer, 1..7 seats, 15 community)")

    def write(self, value: Any, out: bytearray) -> None:
        out.append(NO_VALUE_U8 if value is None else value)

    def read(self, reader: FieldReader, field: str) -> Any:
        byte = reader.take(1, field)[0]
        return None if byte == NO_VALUE_U8 and self.optional else byte


@dataclass(frozen=True)
class Bool(Codec):
    def check(self, field: str, value: object) -> None:
        if not isinstance(value, bool):
            raise FieldError(field, f"must be true or false, not {type(value).__name__}")

    def write(self, value: Any, out: bytearray) -> None:
        out.append(1 if value else 0)

    def read(self, reader: FieldReader, field: str) -> Any:
        byte = reader.take(1, field)[0]
        if byte > 1:
            raise FieldError(field, f"byte {byte} is not a boolean (0 or 1)")
        return byte == 1


@dataclass(frozen=True)
class FixedBytes(Codec):
    """Exactly ``length`` bytes (a nonce, a stream id); JSON shows them as hex."""

    length: int

    def check(self, field: str, value: object) -> None:
        if not isinstance(value, bytes) or len(value) != self.length:
            raise FieldError(field, f"must be {self.length} bytes")

    def write(self, value: Any, out: bytearray) -> None:
        out += value

    def read(self, reader: FieldReader, field: str) -> Any:
        return bytes(reader.take(self.length, field))

    def to_json(self, value: Any) -> JsonValue:
        return value.hex()

    def from_json(self, field: str, raw: JsonValue) -> Any:
        if not isinstance(raw, str):
            raise FieldError(field, f"must be {self.length * 2} hex digits")
        try:
            return bytes.fromhex(raw)
        except ValueError:
            raise FieldError(field, f"must be {self.length * 2} hex digits") from None


class _IntTuple(Codec):
    """A tuple of small integers (versions, cards): a JSON list of them. ``JSON_ITEMS`` names them in the
    error a non-list gets; the subclass checks the integers themselves."""

    JSON_ITEMS: ClassVar[str]

    def to_json(self, value: Any) -> JsonValue:
        return list(value)

    def from_json(self, field: str, raw: JsonValue) -> Any:
        if not isinstance(raw, list):
            raise FieldError(field, f"must be a list of {self.JSON_ITEMS}")
        return tuple(raw)


@dataclass(frozen=True)
class VersionSet(_IntTuple):
    """Protocol versions 1..8 a side speaks, ascending; the wire carries a bitmap byte (bit v-1 for v)."""

    JSON_ITEMS = "versions"

    def check(self, field: str, value: object) -> None:
        if not isinstance(value, tuple) or not value:
            raise FieldError(field, "must be a non-empty tuple of versions")
        previous = 0
        for version in value:
            number = _require_int(field, version)
            if not previous < number <= 8:
                raise FieldError(field, "versions must be 1..8, distinct and ascending")
            previous = number

    def write(self, value: Any, out: bytearray) -> None:
        out.append(sum(1 << (version - 1) for version in value))

    def read(self, reader: FieldReader, field: str) -> Any:
        bitmap = reader.take(1, field)[0]
        return tuple(bit + 1 for bit in range(8) if bitmap & (1 << bit))


@dataclass(frozen=True)
class Text(Codec):
    """UTF-8 text, a length byte then the bytes; at most ``max_bytes`` bytes, no control characters."""

    max_bytes: int

    def check(self, field: str, value: object) -> None:
        if not isinstance(value, str):
            raise FieldError(field, f"must be a string, not {type(value).__name__}")
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise FieldError(field, "is not encodable as UTF-8") from None
        if size > self.max_bytes:
            raise FieldError(field, f"is {size} bytes of UTF-8, at most {self.max_bytes} allowed")
        if any(ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 for char in value):
            raise FieldError(field, "contains a control character")

    def write(self, value: Any, out: bytearray) -> None:
        encoded = value.encode("utf-8")
        out.append(len(encoded))
        out += encoded

    def read(self, reader: FieldReader, field: str) -> Any:
        size = reader.take(1, field)[0]
        if size > self.max_bytes:
            raise FieldError(field, f"length {size} exceeds {self.max_bytes}")
        try:
            return reader.take(size, field).decode("utf-8")
        except UnicodeDecodeError:
            raise FieldError(field, "is not valid UTF-8") from None


@dataclass(frozen=True)
class Choice(Codec):
    """One of ``names``; the wire carries its index as one byte."""

    names: tuple[str, ...]

    def check(self, field: str, value: object) -> None:
        if value not in self.names:
            raise FieldError(field, f"{value!r} is not one of {', '.join(self.names)}")

    def write(self, value: Any, out: bytearray) -> None:
        out.append(self.names.index(value))

    def read(self, reader: FieldReader, field: str) -> Any:
        byte = reader.take(1, field)[0]
        if byte >= len(self.names):
            raise FieldError(field, f"code {byte} is not one of 0..{len(self.names) - 1}")
        return self.names[byte]


@dataclass(frozen=True)
class CardList(_IntTuple):
    """Distinct cards 0..51 in ascending order: a count byte (0..52) then one byte per card."""

    JSON_ITEMS = "cards"

    def check(self, field: str, value: object) -> None:
        if not isinstance(value, tuple):
            raise FieldError(field, "must be a tuple of cards")
        previous = -1
        for position, card in enumerate(value):
            number = _require_int(f"{field}[{position}]", card)
            if not 0 <= number < DECK_SIZE:
                raise FieldError(f"{field}[{position}]", f"{number} is not a card 0..51")
            if number <= previous:
                raise FieldError(f"{field}[{position}]", "cards must be distinct and in ascending order")
            previous = number

    def write(self, value: Any, out: bytearray) -> None:
        out.append(len(value))
        out += bytes(value)

    def read(self, reader: FieldReader, field: str) -> Any:
        count = reader.take(1, field)[0]
        if count > DECK_SIZE:
            raise FieldError(field, f"count {count} exceeds {DECK_SIZE}")
        return tuple(reader.take(count, field))


@dataclass(frozen=True)
class PositionCounts(Codec):
    """(position, card_count) pairs in dealing order: a count byte (1..9; 0..9 with ``allow_empty``)
    then two bytes a pair."""

    allow_empty: bool = False

    def check(self, field: str, value: object) -> None:
        low = 0 if self.allow_empty else 1
        if not isinstance(value, tuple) or not low <= len(value) <= len(VALID_POSITIONS):
            raise FieldError(field, f"must be {low}..{len(VALID_POSITIONS)} (position, card_count) pairs")
        seen: set[int] = set()
        total = 0
        for index, pair in enumerate(value):
            name = f"{field}[{index}]"
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise FieldError(name, "must be a (position, card_count) pair")
            position = _require_int(name, pair[0])
            count = _require_int(name, pair[1])
            if position not in VALID_POSITIONS:
                raise FieldError(name, f"{position} is not a position (0 dealer, 1..7 seats, 15 community)")
            if position in seen:
                raise FieldError(name, f"position {position} appears twice")
            if not 1 <= count <= DECK_SIZE:
                raise FieldError(name, f"card_count {count} is out of range 1..52")
            seen.add(position)
            total += count
        if total > DECK_SIZE:
            raise FieldError(field, f"asks for {total} cards, a deck has {DECK_SIZE}")

    def write(self, value: Any, out: bytearray) -> None:
        out.append(len(value))
        for position, count in value:
            out.append(position)
            out.append(count)

    def read(self, reader: FieldReader, field: str) -> Any:
        count = reader.take(1, field)[0]
        raw = reader.take(2 * count, field)
        return tuple((raw[i], raw[i + 1]) for i in range(0, len(raw), 2))

    def to_json(self, value: Any) -> JsonValue:
        return [list(pair) for pair in value]

    def from_json(self, field: str, raw: JsonValue) -> Any:
        if not isinstance(raw, list) or not all(isinstance(pair, list) for pair in raw):
            raise FieldError(field, "must be a list of [position, card_count] pairs")
        return tuple(tuple(pair) for pair in raw)


@dataclass(frozen=True)
class OptionalSeat(Codec):
    """A seat 1..7, or None, which the wire carries as 0."""

    def check(self, field: str, value: object) -> None:
        if value is None:
            return
        number = _require_int(field, value)
        if not 1 <= number <= MAX_SEAT:
            raise FieldError(field, f"{number} is out of range 1..{MAX_SEAT} (or null for none)")

    def write(self, value: Any, out: bytearray) -> None:
        out.append(0 if value is None else value)

    def read(self, reader: FieldReader, field: str) -> Any:
        byte = reader.take(1, field)[0]
        return None if byte == 0 else byte


U8 = UInt(1, 0, 0xFF)
U16 = UInt(2, 0, 0xFFFF)
U32 = UInt(4, 0, 0xFFFF_FFFF)
# A keyed bank: 0 passes the wire so that the controller can refuse "no funds" in words on the display.
BANK_CENTS = UInt(8, 0, 100_000_000_000)
SEAT = UInt(1, 1, MAX_SEAT)
SPOT = UInt(1, 0, MAX_SPOT)
CARD = UInt(1, 0, DECK_SIZE - 1)
CARD_INDEX = UInt(1, 0, DECK_SIZE - 1)
CARD_COUNT = UInt(1, 0, DECK_SIZE)
NONCE = FixedBytes(NONCE_LEN)
STREAM_ID = FixedBytes(STREAM_ID_LEN)
"""All zeros: no stream."""
