"""Driver for the card-reading shuffler / dealing shoe.

Messages -> events: ShuffleDone -> DeckVerified; CardDealt -> CardDealt; HandComplete -> HandComplete;
ShufflerFault -> ShufflerFault; StatusReport -> DealStateReported. Commands -> messages: Shuffle, Deal
(DealRequest), ResetDevice (Reset, taken alike by every driver: drivers/supervisor.py).

The driver reports, the engine judges (docs/engine.md "Who checks the deal"): every card the shoe
reports is passed on with its position and index, every HandComplete with its count, and the shoe's own
faults (a red light, a jam, a misread it saw) as ShufflerFault; whether a card repeats, breaks its
position's index order or exceeds the deal's count is the engine's deal part's to decide
(controller/engine/deal.py). The driver checks only what is the protocol's: frames, decoding (a card code
that is not a card is refused by firmware_protocol before it gets here), and a ShuffleDone nobody asked
for (a reply to no request), which becomes a ShufflerFault. Nothing is dropped as "a repeat after a
reconnect": the link delivers each message exactly once, so a second report is the shoe's own, and
passed on as such.
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
    Shuffle,
    ShufflerFault,
)
from drivers.supervisor import DeviceDriver
from firmware_protocol import Message


class ShufflerDriver(DeviceDriver):
    KIND: ClassVar[str] = "shuffler"

    def setup(self) -> None:
        self._shuffle_reported = True  # False from a Shuffle sent until its ShuffleDone

    def encode(self, command: DomainCommand) -> Message:
        if isinstance(command, Shuffle):
            return fp.Shuffle()
        if isinstance(command, Deal):
            return fp.DealRequest(positions=tuple(command.positions))
        raise ValueError(f"{type(command).__name__} is not a shuffler command")

    def command_sent(self, command: DomainCommand) -> None:
        if isinstance(command, Shuffle):
            self._shuffle_reported = False

    def refused(self, report: fp.ErrorReport) -> Iterable[DomainEvent]:
        # A shoe that will not shuffle or deal (in fault, already dealing) holds up the round: say so.
        yield ShufflerFault(
            device=self.name, fault="other", position=None, detail=f"refused: {report.detail}"
        )

    def translate(self, message: Message) -> Iterable[DomainEvent]:
        name = self.name
        if isinstance(message, fp.CardDealt):
            yield CardDealt(device=name, position=message.position, index=message.index, card=message.card)
        elif isinstance(message, fp.StatusReport):
            yield DealStateReported(
                device=name,
                deal=message.deal,
                positions=tuple(message.positions),
                cards_reported=message.cards_reported,
            )
        elif isinstance(message, fp.HandComplete):
            yield HandComplete(device=name, position=message.position, card_count=message.card_count)
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
