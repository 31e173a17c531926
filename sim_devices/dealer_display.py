"""The simulated dealer button display: the button seat, a line of text, each seat's result, and the
dealer's keys (next, confirm, fold seat N, designated player waives or accepts, call floor, void request,
kill seat N: a request a supervisor confirms on the panel),
pressed through the API (``press``) or a scenario script, and a designated player's bank keyed in
(``key_bank``: the dp_bank_keyed message)."""

from __future__ import annotations

from typing import Unpack

from firmware_protocol import (
    DealerKey,
    DpBankKeyed,
    Message,
    Reset,
    ShowButton,
    ShowSeatResult,
    ShowText,
)
from firmware_protocol.vocabulary import DealerKeyName, DeviceKind, SeatResult
from sim_devices.firmware import DeviceOptions, SimulatedDevice


class SimulatedDealerDisplay(SimulatedDevice):
    KIND: DeviceKind = "dealer_display"
    MODEL = "SIM-DISPLAY-1"
    SERIAL_NUMBER = "DISP-0001"

    def __init__(self, *, key: bytes, **options: Unpack[DeviceOptions]) -> None:
        super().__init__(key=key, **options)
        self.button_seat: int | None = None
        self.text = ""
        self.seat_results: dict[int, tuple[SeatResult, int]] = {}

    def press(self, key: DealerKeyName, seat: int | None = None) -> None:
        """The dealer presses a key; fold_seat and kill_seat take the seat 1..7."""
        self.emit(DealerKey(key=key, seat=seat))

    def key_bank(self, seat: int, amount_cents: int) -> None:
        """The dealer keys the bank the offered player posts, for ``seat``, and presses accept."""
        self.emit(DpBankKeyed(seat=seat, amount_cents=amount_cents))

    def on_message(self, message: Message, seq: int) -> None:
        if isinstance(message, ShowButton):
            self.button_seat = message.seat
        elif isinstance(message, ShowText):
            self.text = message.text
        elif isinstance(message, ShowSeatResult):
            self.seat_results[message.seat] = (message.result, message.net_cents)
        elif isinstance(message, Reset):
            self.seat_results.clear()
            self.text = ""
            self.set_status("ready")
        else:
            self.refuse(seq, 1, f"{message.NAME} is not for a dealer display")
