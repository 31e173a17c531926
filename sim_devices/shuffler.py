"""The simulated card-reading shuffler / dealing shoe.

A real 52-card deck (cards 0..51: suit * 13 + rank, as drivers/events.py and the protocol number them),
shuffled by a seeded RNG for reproducible tests or by the OS's CSPRNG (``secrets``) when no seed is
given. On Shuffle it shuffles and reads the deck back (ShuffleDone: count, missing, extra). On
DealRequest it deals the positions in the order asked, one position at a time, reporting every card
(CardDealt) and then the count at that position (HandComplete), at ``card_interval_s`` per card.

Faults are scripted with ``plan_fault`` (they fire at a set card of the next deal, or during the next
shuffle) or caused at once through the API (``open_door``, ``resend_card``, ``go_silent``, ``unplug_for``):

=================  ===========================================================================
red_light          the shoe's red light: ShufflerFault(red_light), status fault; stops (shuffle or deal)
jam                ShufflerFault(jam) at the position; status fault; the deal stops
misread            a card it cannot read: ShufflerFault(misread); status fault; the deal stops
short / extra      ``position`` gets one card fewer / more than asked; HandComplete tells the count
dealt_twice        the card before is reported again (a double feed / a duplicate card)
wrong_deck_count   the next ShuffleDone counts 51 (one missing) or 53 (one read twice)
door_open          ShufflerFault(door_open); status fault; the deal stops
silent             the firmware hangs for ``duration_s`` (no bytes either way), then carries on
unplug             the cable is pulled for ``duration_s``; the shoe keeps dealing and reports later
power_cycle        the cable is pulled and the shoe loses power: back after ``duration_s`` with a
                   new stream, no deal and no deck (a StatusReport then says deal none)
=================  ===========================================================================

``resend_card(position, index, misread=...)`` reports a card already dealt once more, at any time (after
the deal too): the same card (a repeat) or, with ``misread``, the next card number (a misread).

A Reset clears a fault and abandons a deal; the shoe is ready again.

``preset_deck(cards)`` is the test deck of a shoe on the bench: every shuffle from then on leaves these
cards on top, in the order they are dealt (then every other card in deck order), so a scripted round can
show a chosen outcome through the real devices and controller. ``preset_deck(None)`` shuffles again.

A v2 controller asks for the shoe's state after every handshake (StatusQuery); the StatusReport answer
carries the deal the shoe holds: none, dealing, complete or stopped (a fault ended it), the positions
asked for, and the cards reported so far. ``power_cycle()`` loses all of it (and the deck).
"""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Unpack, get_args

from firmware_protocol import (
    CardDealt,
    DealRequest,
    HandComplete,
    Message,
    Reset,
    Shuffle,
    ShuffleDone,
    ShufflerFault,
    StatusReport,
)
from firmware_protocol.vocabulary import DealProgress, DeviceKind
from sim_devices.firmware import DeviceOptions, SimulatedDevice

DECK_SIZE = 52
FaultKind = Literal[
    "red_light",
    "jam",
    "misread",
    "short",
    "extra",
    "dealt_twice",
    "wrong_deck_count",
    "door_open",
    "silent",
    "unplug",
    "power_cycle",
]
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)
# Fault codes the shoe's Status carries (non-zero exactly when in fault).
FAULT_CODES = {"red_light": 0x10, "jam": 0x11, "misread": 0x12, "door_open": 0x13, "card_count": 0x14}
ERROR_NOT_NOW = 3
ERROR_DEVICE_FAULT = 4


@dataclass(frozen=True, slots=True)
class PlannedFault:
    """One scripted fault. ``at_card`` counts the cards of the next deal from 0 (the fault fires
    before that card leaves the shoe); ``during_shuffle`` fires at the next Shuffle instead;
    ``position`` is for short / extra; ``duration_s`` for silent / unplug; ``missing`` chooses, for
    wrong_deck_count, 51 cards (True) or 53 (False)."""

    kind: FaultKind
    at_card: int = 0
    during_shuffle: bool = False
    position: int | None = None
    duration_s: float = 0.5
    missing: bool = True

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"fault kind {self.kind!r}: not one of {', '.join(FAULT_KINDS)}")
        if self.kind in ("short", "extra") and self.position is None:
            raise ValueError(f"fault {self.kind}: needs the position dealt short or extra")
        if self.at_card < 0:
            raise ValueError(f"fault {self.kind}: at_card {self.at_card} is negative")


class SimulatedShuffler(SimulatedDevice):
    KIND: DeviceKind = "shuffler"
    MODEL = "SIM-SHOE-1"
    SERIAL_NUMBER = "SHOE-0001"

    def __init__(self, *, key: bytes, card_interval_s: float = 0.0, **options: Unpack[DeviceOptions]) -> None:
        super().__init__(key=key, **options)
        seed = options.get("seed")
        self._deck_rng: random.Random = random.Random(seed) if seed is not None else secrets.SystemRandom()
        self.card_interval_s = card_interval_s
        self.deck: list[int] = []  # cards still in the shoe; the next card dealt is deck[-1]
        self.dealt: list[
            tuple[int, int, int]
        ] = []  # (position, index, card): every card dealt since power-on
        self.planned: list[PlannedFault] = []
        self.preset: tuple[int, ...] | None = None  # preset_deck: the top cards, in deal order
        self._deal_task: asyncio.Task[None] | None = None
        self._current_position: int | None = None  # where the deal stands, for a fault's report
        # The deal the shoe holds, for a StatusReport: what was asked, how far it got.
        self.deal_progress: DealProgress = "none"
        self.deal_positions: tuple[tuple[int, int], ...] = ()
        self.cards_reported = 0
        self.shuffles = 0
        self.deals_started = 0

    # --- API for scripts and tests -------------------------------------------------------------------
    def preset_deck(self, cards: Sequence[int] | None) -> None:
        """Every shuffle from now leaves ``cards`` (0..51, each once) on top, in deal order; None: shuffle."""
        if cards is not None and (
            len(set(cards)) != len(cards) or not all(0 <= c < DECK_SIZE for c in cards)
        ):
            raise ValueError("preset_deck: distinct cards 0..51")
        self.preset = None if cards is None else tuple(cards)

    def plan_fault(self, fault: PlannedFault) -> None:
        self.planned.append(fault)

    def open_door(self) -> None:
        self._fault("door_open", self._current_position, "door opened")

    def resend_card(self, position: int, index: int, *, misread: bool = False) -> int:
        """Report the card last dealt at (position, index) again: the same card, or with ``misread``
        another one (the next card number). Returns the card reported; ValueError if none was dealt
        there."""
        for dealt_position, dealt_index, card in reversed(self.dealt):
            if (dealt_position, dealt_index) == (position, index):
                reported = (card + 1) % DECK_SIZE if misread else card
                self.emit(CardDealt(position=position, index=index, card=reported))
                return reported
        raise ValueError(f"resend: no card dealt at position {position} index {index}")

    @property
    def dealing(self) -> bool:
        return self._deal_task is not None and not self._deal_task.done()

    async def wait_deal_finished(self) -> None:
        if self._deal_task is not None:
            await asyncio.shield(self._deal_task)

    # --- firmware ------------------------------------------------------------------------------------
    def on_message(self, message: Message, seq: int) -> None:
        if isinstance(message, Shuffle):
            self._on_shuffle(seq)
        elif isinstance(message, DealRequest):
            self._on_deal(message, seq)
        elif isinstance(message, Reset):
            self._on_reset()
        else:
            self.refuse(seq, 1, f"{message.NAME} is not for a shuffler")

    def _on_reset(self) -> None:
        if self._deal_task is not None:
            self._deal_task.cancel()
            self._deal_task = None
        self._hold_deal("none")
        self.set_status("ready")

    def _hold_deal(self, progress: DealProgress, positions: tuple[tuple[int, int], ...] = ()) -> None:
        self.deal_progress = progress
        if progress in ("none", "dealing"):
            self.deal_positions = positions
            self.cards_reported = 0

    def status_report(self) -> StatusReport:
        return StatusReport(
            state=self.state,
            fault_code=self.fault_code,
            lamp=self.lamp,
            deal=self.deal_progress,
            positions=self.deal_positions,
            cards_reported=min(self.cards_reported, DECK_SIZE),
        )

    def on_power_cycle(self) -> None:
        super().on_power_cycle()
        if self._deal_task is not None:
            self._deal_task.cancel()
            self._deal_task = None
        self.deck = []  # a shoe that lost power must be shuffled again
        self._current_position = None
        self._hold_deal("none")

    def _refused_now(self, seq: int, *, while_dealing: str) -> bool:
        """A shoe dealing, or in fault, refuses a shuffle or a deal (``while_dealing``: the words of the
        first refusal). True when it refused."""
        if self.dealing:
            self.refuse(seq, ERROR_NOT_NOW, while_dealing)
            return True
        if self.state == "fault":
            self.refuse(seq, ERROR_DEVICE_FAULT, "in fault: reset first")
            return True
        return False

    def _on_shuffle(self, seq: int) -> None:
        if self._refused_now(seq, while_dealing="dealing"):
            return
        fault = self._take_fault(during_shuffle=True)
        if fault is not None and fault.kind == "red_light":
            self._fault("red_light", None, "red light during shuffle")
            return
        self.shuffles += 1
        self._hold_deal("none")  # a new deck: the last deal is over
        self.deck = list(range(DECK_SIZE))
        self._deck_rng.shuffle(self.deck)
        if self.preset is not None:  # the bench's test deck: deck[-1] is dealt first
            top = list(self.preset)
            self.deck = [card for card in range(DECK_SIZE) if card not in top][::-1] + top[::-1]
        read_back = list(self.deck)
        if fault is not None and fault.kind == "wrong_deck_count":
            victim = self.deck[self._deck_rng.randrange(DECK_SIZE)]
            if fault.missing:
                read_back.remove(victim)
            else:
                read_back.append(victim)
        seen: dict[int, int] = {}
        for card in read_back:
            seen[card] = seen.get(card, 0) + 1
        self.emit(
            ShuffleDone(
                card_count=len(read_back),
                missing_cards=tuple(card for card in range(DECK_SIZE) if card not in seen),
                extra_cards=tuple(sorted(card for card, times in seen.items() if times > 1)),
            )
        )

    def _on_deal(self, request: DealRequest, seq: int) -> None:
        if self._refused_now(seq, while_dealing="already dealing"):
            return
        self.deals_started += 1
        self._hold_deal("dealing", tuple(request.positions))
        self._deal_task = self.spawn(self._deal(request.positions), "shuffler-deal")

    def _take_fault(self, *, during_shuffle: bool = False, at_card: int | None = None) -> PlannedFault | None:
        for fault in self.planned:
            if during_shuffle and fault.during_shuffle and fault.kind in ("red_light", "wrong_deck_count"):
                self.planned.remove(fault)
                return fault
            if (
                at_card is not None
                and not fault.during_shuffle
                and fault.at_card == at_card
                and fault.kind not in ("short", "extra", "wrong_deck_count")
            ):
                self.planned.remove(fault)
                return fault
        return None

    def _adjust_for(self, position: int) -> int:
        for fault in self.planned:
            if fault.kind in ("short", "extra") and fault.position == position:
                self.planned.remove(fault)
                return -1 if fault.kind == "short" else 1
        return 0

    def _fault(self, kind: str, position: int | None, detail: str) -> None:
        if self._deal_task is not None and self._deal_task is not asyncio.current_task():
            self._deal_task.cancel()
        if self.deal_progress == "dealing":
            self._hold_deal("stopped")
        self.emit(ShufflerFault(fault=kind, position=position, detail=detail))  # type: ignore[arg-type]
        self.set_status("fault", FAULT_CODES.get(kind, 0xFF))

    async def _deal(self, positions: Sequence[tuple[int, int]]) -> None:
        self.set_status("busy")
        card_number = 0
        for position, count in positions:
            self._current_position = position
            dealt_here = 0
            for index in range(count + self._adjust_for(position)):
                fault = self._take_fault(at_card=card_number)
                if fault is not None:
                    if fault.kind in ("red_light", "jam", "misread", "door_open"):
                        detail = f"at card {card_number}, position {position} index {index}"
                        self._fault(fault.kind, position, detail)
                        self._current_position = None
                        return
                    if fault.kind == "silent":
                        await self.go_silent(fault.duration_s)  # the deal stalls while hung
                    elif fault.kind == "unplug":
                        self.spawn(self.unplug_for(fault.duration_s), "shuffler-unplug")
                    elif fault.kind == "power_cycle":
                        self.spawn(self.power_off_for(fault.duration_s), "shuffler-power-cycle")
                        return  # the deal dies with the power
                if self.card_interval_s > 0:
                    await asyncio.sleep(self.card_interval_s)
                if fault is not None and fault.kind == "dealt_twice" and self.dealt:
                    card = self.dealt[-1][2]  # the same card read again
                elif self.deck:
                    card = self.deck.pop()
                else:
                    self._fault("card_count", position, "shoe empty")
                    return
                self.dealt.append((position, index, card))
                self.emit(CardDealt(position=position, index=index, card=card))
                self.cards_reported += 1
                dealt_here += 1
                card_number += 1
            self.emit(HandComplete(position=position, card_count=dealt_here))
        self._current_position = None
        self._hold_deal("complete")
        self.set_status("ready")
