"""The typed domain events the drivers publish and the domain commands they accept.

This is the contract between drivers/ (which know devices, not games) and controller/ (which knows the
game, not the wire). Everything here is plain data: frozen dataclasses of ints and strings.

Conventions:
- ``device`` is the device's name in the table configuration (``"shuffler"``, ``"sensors"``,
  ``"display"``), not a port.
- A **position** is where the shoe deals: ``DEALER_POSITION`` (0) for the dealer's or banker's hand
  (in designated-player mode the controller tells the shoe to deal the DP's seat as position 0),
  seats 1..7, and ``COMMUNITY_POSITION`` (15) for Chase the Flush's community cards.
- A **card** is an int 0..51: ``suit_index * 13 + rank_index``, ranks 23456789TJQKA, suits cdhs
  (the same number the firmware protocol carries in one byte).
- A **spot** is the betting spot's index on a seat, 0-based, in the order of the game's wagers:
  High Card Flush ante, raise, flush, straight_flush; Top Flush ante, play, top_flush_bonus,
  straight_flush_jackpot; Chase the Flush ante, xtra_bonus, same_suit_bonus, all_in.
- Amounts are integer cents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# The positions, seats and enumerations are the wire's (firmware_protocol.vocabulary): one definition.
from firmware_protocol.vocabulary import COMMUNITY_POSITION as COMMUNITY_POSITION  # noqa: PLC0414  (re-exported)
from firmware_protocol.vocabulary import DEALER_POSITION as DEALER_POSITION  # noqa: PLC0414  (re-exported)
from firmware_protocol.vocabulary import MAX_SEAT as MAX_SEAT  # noqa: PLC0414  (re-exported)
from firmware_protocol.vocabulary import DealerKeyName as DealerKeyName  # noqa: PLC0414
from firmware_protocol.vocabulary import LampColour as LampColour  # noqa: PLC0414
from firmware_protocol.vocabulary import ShufflerFaultKind as ShufflerFaultKind  # noqa: PLC0414
from firmware_protocol.vocabulary import SpotLampColour as SpotLampColour  # noqa: PLC0414


# --- device health (every device) -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DeviceReady:
    """The device connected, authenticated and is ready."""

    device: str
    kind: str  # "shuffler" | "bet_sensors" | "dealer_display"
    model: str
    serial_number: str
    firmware_version: str


@dataclass(frozen=True, slots=True)
class DeviceLost:
    """The link is down (missed heartbeats, a closed port, retries exhausted)."""

    device: str
    reason: str


@dataclass(frozen=True, slots=True)
class SecurityEvent:
    """A frame refused for its tag, its sequence number (a replay) or its sender."""

    device: str
    reason: str  # "bad_tag" | "replay" | "unknown_device" | "handshake_failed" | ...
    detail: str = ""


@dataclass(frozen=True, slots=True)
class DeviceStatusChanged:
    """The device's own status report: ready, busy or fault, with its lamp colour."""

    device: str
    state: Literal["ready", "busy", "fault"]
    fault_code: int
    lamp: LampColour


# --- shuffler / shoe ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DeckVerified:
    """The shuffle finished and the shoe read the whole deck."""

    device: str
    card_count: int
    missing_cards: tuple[int, ...]
    extra_cards: tuple[int, ...]  # cards read more than once

    @property
    def complete(self) -> bool:
        return self.card_count == 52 and not self.missing_cards and not self.extra_cards


@dataclass(frozen=True, slots=True)
class CardDealt:
    device: str
    position: int
    index: int  # 0-based index of the card within that position's hand
    card: int


@dataclass(frozen=True, slots=True)
class HandComplete:
    """The shoe finished a position and counted the cards it dealt there."""

    device: str
    position: int
    card_count: int


@dataclass(frozen=True, slots=True)
class ShufflerFault:
    device: str
    fault: ShufflerFaultKind
    position: int | None = None  # where the deal stood, when it happened mid-deal
    detail: str = ""  # the device's or the driver's words: they may name a card (never shown before reveal)
    card: int | None = None  # the card the fault is about, when one is (a repeat, a misread)
    index: int | None = None
    first_position: int | None = None  # a repeated card: where it was dealt first
    first_index: int | None = None


@dataclass(frozen=True, slots=True)
class DealStateReported:
    """The shoe's answer to the controller's question after a handshake: the deal it holds.
    ``deal``: none (no deal since its last shuffle, reset or power-up), dealing, complete, or stopped
    (a fault ended it); ``positions`` what that deal asked for; ``cards_reported`` how many cards it has
    reported for it - every one of them reached the controller before this answer did."""

    device: str
    deal: Literal["none", "dealing", "complete", "stopped"]
    positions: tuple[tuple[int, int], ...]
    cards_reported: int


# --- bet sensors ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BetChanged:
    """The chips on one spot changed. ``locked`` is the sensor's own lock state when it saw it."""

    device: str
    seat: int
    spot: int
    amount_cents: int
    chip_count: int
    locked: bool


# --- dealer display -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DealerKey:
    device: str
    key: DealerKeyName
    seat: int | None = None  # for fold_seat and kill_seat


@dataclass(frozen=True, slots=True)
class DpBankKeyed:
    """The dealer keyed the bank the offered player posts and pressed accept (protocol dp_bank_keyed)."""

    device: str
    seat: int
    amount_cents: int


DomainEvent = (
    DeviceReady
    | DeviceLost
    | SecurityEvent
    | DeviceStatusChanged
    | DeckVerified
    | CardDealt
    | HandComplete
    | ShufflerFault
    | DealStateReported
    | BetChanged
    | DealerKey
    | DpBankKeyed
)


# --- commands the controller sends ---------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Shuffle:
    device: str


@dataclass(frozen=True, slots=True)
class Deal:
    """Deal ``card_count`` cards to each position, positions in the order given, one position at a
    time (the shoe completes a position, reports HandComplete, then moves on)."""

    device: str
    positions: tuple[tuple[int, int], ...]  # (position, card_count)


@dataclass(frozen=True, slots=True)
class LockBets:
    device: str


@dataclass(frozen=True, slots=True)
class UnlockBets:
    device: str


@dataclass(frozen=True, slots=True)
class SetSpotLamp:
    device: str
    seat: int
    spot: int
    colour: SpotLampColour


@dataclass(frozen=True, slots=True)
class ShowButton:
    device: str
    seat: int


@dataclass(frozen=True, slots=True)
class ShowText:
    device: str
    text: str


@dataclass(frozen=True, slots=True)
class ShowSeatResult:
    device: str
    seat: int
    result: Literal["win", "lose", "push", "dead", "folded"]
    net_cents: int


@dataclass(frozen=True, slots=True)
class ResetDevice:
    device: str


DomainCommand = (
    Shuffle
    | Deal
    | LockBets
    | UnlockBets
    | SetSpotLamp
    | ShowButton
    | ShowText
    | ShowSeatResult
    | ResetDevice
)
