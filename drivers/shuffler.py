"""Driver for the card-reading shuffler / dealing shoe.

Messages -> events: ShuffleDone -> DeckVerified; CardDealt -> CardDealt; HandComplete -> HandComplete;
ShufflerFault -> ShufflerFault; StatusReport -> DealStateReported. Commands -> messages: Shuffle, Deal
(DealRequest), ResetDevice (Reset).

The driver also holds the shoe to what it was asked: it knows the deal it requested, so a card for a
position not in the deal or beyond its count, a card already dealt in this deal, a gap in a position's
indexes, a place reported twice, a HandComplete twice or whose count differs from the request, or a
ShuffleDone nobody asked for becomes a ShufflerFault (and such a card is not passed on as a CardDealt).
Nothing is dropped as "a repeat after a reconnect": the link delivers each message exactly once, so a
second report is the shoe's own (a v1 shoe's resend after a reconnect is reported as what it is).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

import firmware_protocol as fp
from drivers.events import (
    CardDealt,
    Deal,
    DealStateReported,
    DeckVerified,
    DomainCommand,
    DomainEvent,
    HandComplete,
    ResetDevice,
    Shuffle,
    ShufflerFault,
)
from drivers.supervisor import DeviceDriver
from firmware_protocol import Message


class ShufflerDriver(DeviceDriver):
    KIND: ClassVar[str] = "shuffler"

    def setup(self) -> None:
        self._requested: dict[int, int] = {}  # position -> cards asked for, for the current deal
        self._hands: dict[int, list[int | None]] = {}  # position -> cards by index (None: refused)
        self._cards_seen: dict[int, tuple[int, int]] = {}  # card -> (position, index) this deal
        self._hands_completed: set[int] = set()
        self._refused: dict[tuple[int, int], int] = {}  # (position, index) -> a card refused there
        self._shuffle_reported = True

    def encode(self, command: DomainCommand) -> Message:
        if isinstance(command, Shuffle):
            return fp.Shuffle()
        if isinstance(command, Deal):
            return fp.DealRequest(positions=tuple(command.positions))
        if isinstance(command, ResetDevice):
            return fp.Reset(hard=False)
        raise ValueError(f"{type(command).__name__} is not a shuffler command")

    def command_sent(self, command: DomainCommand) -> None:
        if isinstance(command, Deal):
            self._start_deal(dict(command.positions))
        elif isinstance(command, Shuffle):
            self._start_deal({})
            self._shuffle_reported = False
        elif isinstance(command, ResetDevice):
            self._start_deal({})

    def _start_deal(self, requested: dict[int, int]) -> None:
        self._requested = requested
        self._hands = {}
        self._cards_seen = {}
        self._hands_completed = set()
        self._refused = {}

    def refused(self, report: fp.ErrorReport) -> Iterable[DomainEvent]:
        # A shoe that will not shuffle or deal (in fault, already dealing) holds up the round: say so.
        yield ShufflerFault(
            device=self.name, fault="other", position=None, detail=f"refused: {report.detail}"
        )

    def translate(self, message: Message) -> Iterable[DomainEvent]:
        name = self.name
        if isinstance(message, fp.CardDealt):
            yield from self._card(message)
        elif isinstance(message, fp.StatusReport):
            yield DealStateReported(
                device=name,
                deal=message.deal,
                positions=tuple(message.positions),
                cards_reported=message.cards_reported,
            )
        elif isinstance(message, fp.HandComplete):
            if message.position in self._hands_completed:
                yield ShufflerFault(
                    device=name,
                    fault="card_count",
                    position=message.position,
                    detail=f"hand_complete reported twice ({message.card_count} cards)",
                )
                return
            self._hands_completed.add(message.position)
            yield HandComplete(device=name, position=message.position, card_count=message.card_count)
            requested = self._requested.get(message.position)
            if requested is not None and message.card_count != requested:
                yield ShufflerFault(
                    device=name,
                    fault="card_count",
                    position=message.position,
                    detail=f"dealt {message.card_count} cards, {requested} requested",
                )
        elif isinstance(message, fp.ShuffleDone):
            if self._shuffle_reported:
                yield ShufflerFault(
                    device=name, fault="other", position=None, detail="shuffle_done with no shuffle asked"
                )
                return
            self._shuffle_reported = True
            yield DeckVerified(
                device=name,
                card_count=message.card_count,
                missing_cards=tuple(message.missing_cards),
                extra_cards=tuple(message.extra_cards),
            )
        elif isinstance(message, fp.ShufflerFault):
            yield ShufflerFault(
                device=name, fault=message.fault, position=message.position, detail=message.detail
            )

    def _card(self, message: fp.CardDealt) -> Iterable[DomainEvent]:
        name = self.name
        position, index, card = message.position, message.index, message.card
        hand = self._hands.setdefault(position, [])
        if index < len(hand):
            repeated = hand[index] == card or self._refused.get((position, index)) == card
            yield ShufflerFault(
                device=name,
                fault="misread",
                position=position,
                detail=f"index {index} reported twice"
                if repeated
                else f"index {index} reported as card {hand[index]} and then as card {card}",
                card=card,
                index=index,
            )
            return
        requested = self._requested.get(position)
        if requested is None or index >= requested:
            yield ShufflerFault(
                device=name,
                fault="card_count",
                position=position,
                detail=f"extra card {card} at index {index} ({requested or 0} requested)",
                card=card,
                index=index,
            )
            return
        if index != len(hand):
            yield ShufflerFault(
                device=name,
                fault="card_count",
                position=position,
                detail=f"index {index} after {len(hand)} cards",
                index=index,
            )
            return
        first = self._cards_seen.get(card)
        if first is not None:
            hand.append(None)  # the place is taken (by a card we refuse): the next index follows on
            self._refused[(position, index)] = card
            yield ShufflerFault(
                device=name,
                fault="misread",
                position=position,
                detail=f"card {card} dealt twice (first at position {first[0]} index {first[1]})",
                card=card,
                index=index,
                first_position=first[0],
                first_index=first[1],
            )
            return
        hand.append(card)
        self._cards_seen[card] = (position, index)
        yield CardDealt(device=name, position=position, index=index, card=card)
