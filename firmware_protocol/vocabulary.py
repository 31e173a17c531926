"""The values the wire carries by name (docs/protocol.md §8.1, §9.2): positions, the enumerations
(each value's wire byte is its index in its tuple) and the error and fault codes.

Plain data: the field codecs (firmware_protocol/field_codecs.py) check fields against it, the messages
(firmware_protocol/messages.py) name it, and the drivers and the simulated devices read it.
"""

from __future__ import annotations

from typing import Literal

from table_names import COMMUNITY_POSITION as COMMUNITY_POSITION  # noqa: PLC0414  (re-exported)
from table_names import DEALER_POSITION as DEALER_POSITION  # noqa: PLC0414  (re-exported)
from table_names import DEVICE_KINDS as DEVICE_KINDS  # noqa: PLC0414  (re-exported: the wire's enumeration)
from table_names import MAX_SEAT as MAX_SEAT  # noqa: PLC0414  (re-exported)
from table_names import DeviceKind as DeviceKind  # noqa: PLC0414  (re-exported)

VALID_POSITIONS: frozenset[int] = frozenset({*range(MAX_SEAT + 1), COMMUNITY_POSITION})
MAX_SPOT = 7
DECK_SIZE = 52
NO_VALUE_U8 = 0xFF
"""The byte an optional u8 field (a position, a seat) carries for 'none'."""

DeviceState = Literal["ready", "busy", "fault"]
LampColour = Literal["off", "green", "amber", "red", "blue", "white"]
ShufflerFaultKind = Literal["jam", "misread", "card_count", "door_open", "red_light", "other"]
SpotLampColour = Literal["off", "win", "lose", "push"]
SeatResult = Literal["win", "lose", "push", "dead", "folded"]
DealerKeyName = Literal[
    "next", "confirm", "fold_seat", "dp_waives", "call_floor", "void_request", "dp_accepts", "kill_seat"
]

# The wire value of each enumerated field is its index in these tuples (docs/protocol.md §8.1).
DEVICE_STATES: tuple[DeviceState, ...] = ("ready", "busy", "fault")
LAMP_COLOURS: tuple[LampColour, ...] = ("off", "green", "amber", "red", "blue", "white")
SHUFFLER_FAULTS: tuple[ShufflerFaultKind, ...] = (
    "jam",
    "misread",
    "card_count",
    "door_open",
    "red_light",
    "other",
)
SPOT_LAMP_COLOURS: tuple[SpotLampColour, ...] = ("off", "win", "lose", "push")
SEAT_RESULTS: tuple[SeatResult, ...] = ("win", "lose", "push", "dead", "folded")
DealProgress = Literal["none", "dealing", "complete", "stopped"]
DEAL_PROGRESS: tuple[DealProgress, ...] = ("none", "dealing", "complete", "stopped")
DEALER_KEYS: tuple[DealerKeyName, ...] = (
    "next",
    "confirm",
    "fold_seat",
    "dp_waives",
    "call_floor",
    "void_request",
    "dp_accepts",  # appended (wire value 6): every earlier key keeps its value (docs/protocol.md §11.1)
    "kill_seat",  # appended (wire value 7): the dealer asks a supervisor to kill one seat's hand
)
SEAT_KEYS: frozenset[DealerKeyName] = frozenset({"fold_seat", "kill_seat"})
"""The keys that carry a seat (1..7); every other key carries none."""

# Error codes an ErrorReport carries (docs/protocol.md §9.2).
ERROR_CODES: dict[int, str] = {
    1: "unsupported_message",
    2: "bad_field",
    3: "not_now",
    4: "device_fault",
    5: "busy",
    6: "internal",
}


# Fault codes a Status/StatusReport carries (non-zero exactly when in fault), named as the device
# makers' sheets name them (docs/protocol.md, "Fault codes"). Codes outside this table are the maker's
# own: shown by number, as "device-specific".
FAULT_CODES: dict[int, str] = {
    0x10: "red_light",
    0x11: "jam",
    0x12: "misread",
    0x13: "door_open",
    0x14: "card_count",
    0x20: "sensor_fault",
}
