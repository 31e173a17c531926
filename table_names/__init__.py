"""The names the firmware protocol and the controller share, below both of them.

The wire carries seat positions and device kinds and is keyed per device; the controller's rules,
drivers, configuration and panel speak of the same seats, devices and keys. Defined here once, at the
bottom of the house (this package imports nothing but the standard library): the protocol takes them
from here and so does the controller, so the rules engine names a seat, and the configuration checks a
key, without loading the wire protocol.

table_names/records.py is here for the same reason: the plain records (a dataclass's generated methods
without the `dataclasses` module) that the rules, the journal's reader, the configuration and the
drivers' device URLs are made of, for the commands that must start at once (issue 28).
"""

from __future__ import annotations

from typing import Final, Literal

MAX_SEAT: Final = 7
"""The highest seat position the table's hardware has (the wire's positions 1..7; 0 is the dealer's)."""

DEALER_POSITION: Final = 0
"""The dealer's hand's position on the wire and in the journal's cards."""
COMMUNITY_POSITION: Final = 15
"""The community cards' position on the wire and in the journal's cards."""

DeviceKind = Literal["shuffler", "bet_sensors", "dealer_display"]
DEVICE_KINDS: tuple[DeviceKind, ...] = ("shuffler", "bet_sensors", "dealer_display")
"""The table's device kinds; on the wire each is its index here (docs/protocol.md §8.1)."""

DEVICE_KEY_LEN: Final = 32
"""A device's provisioned key, in bytes: 256 bits, random, never shared between devices (the wire's
HMAC-SHA256 key; the table's configuration holds one per device)."""

__all__ = [
    "COMMUNITY_POSITION",
    "DEALER_POSITION",
    "DEVICE_KEY_LEN",
    "DEVICE_KINDS",
    "MAX_SEAT",
    "DeviceKind",
]
