"""Driver for the bet sensor array.

Messages -> events: SpotState -> BetChanged (only when what lies on the spot, or the lock, changed
since the driver last reported it: the array re-reports every occupied spot after a reconnect and after
a lock). Commands -> messages: LockBets, UnlockBets, SetSpotLamp (SpotLamp), ResetDevice (Reset,
taken alike by every driver: drivers/supervisor.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

import firmware_protocol as fp
from drivers.events import (
    BetChanged,
    DomainCommand,
    DomainEvent,
    LockBets,
    SetSpotLamp,
    UnlockBets,
)
from drivers.supervisor import DeviceDriver
from firmware_protocol import Message


class BetSensorDriver(DeviceDriver):
    KIND: ClassVar[str] = "bet_sensors"

    def setup(self) -> None:
        self._last: dict[tuple[int, int], BetChanged] = {}

    def encode(self, command: DomainCommand) -> Message:
        if isinstance(command, LockBets):
            return fp.LockBets()
        if isinstance(command, UnlockBets):
            return fp.UnlockBets()
        if isinstance(command, SetSpotLamp):
            return fp.SpotLamp(seat=command.seat, spot=command.spot, colour=command.colour)
        raise ValueError(f"{type(command).__name__} is not a bet sensor command")

    def translate(self, message: Message) -> Iterable[DomainEvent]:
        if not isinstance(message, fp.SpotState):
            return
        event = BetChanged(
            device=self.name,
            seat=message.seat,
            spot=message.spot,
            amount_cents=message.amount_cents,
            chip_count=message.chip_count,
            locked=message.locked,
        )
        key = (message.seat, message.spot)
        previous = self._last.get(key)
        if previous == event or (previous is None and message.amount_cents == 0):
            return
        self._last[key] = event
        yield event
