"""Driver for the dealer button display.

Messages -> events: DealerKey -> DealerKey, DpBankKeyed -> DpBankKeyed. Commands -> messages:
ShowButton, ShowText, ShowSeatResult, ResetDevice (Reset, taken alike by every driver:
drivers/supervisor.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

import firmware_protocol as fp
from drivers.events import (
    DealerKey,
    DomainCommand,
    DomainEvent,
    DpBankKeyed,
    ShowButton,
    ShowSeatResult,
    ShowText,
)
from drivers.supervisor import DeviceDriver
from firmware_protocol import Message


class DealerDisplayDriver(DeviceDriver):
    KIND: ClassVar[str] = "dealer_display"

    def encode(self, command: DomainCommand) -> Message:
        if isinstance(command, ShowButton):
            return fp.ShowButton(seat=command.seat)
        if isinstance(command, ShowText):
            return fp.ShowText(text=command.text)
        if isinstance(command, ShowSeatResult):
            return fp.ShowSeatResult(seat=command.seat, result=command.result, net_cents=command.net_cents)
        raise ValueError(f"{type(command).__name__} is not a dealer display command")

    def translate(self, message: Message) -> Iterable[DomainEvent]:
        if isinstance(message, fp.DealerKey):
            yield DealerKey(device=self.name, key=message.key, seat=message.seat)
        elif isinstance(message, fp.DpBankKeyed):
            yield DpBankKeyed(device=self.name, seat=message.seat, amount_cents=message.amount_cents)
