"""The simulated bet sensor array: seats x spots, each reading the chips on it.

Chips are placed, changed and removed through the API (``place``, ``remove``) or a scenario script.
Every change is reported as a SpotState with the sensor's own lock state. After LockBets the array
reports every occupied spot once more (locked=true) and keeps reporting any change, which is how the
controller catches past-posting. Lamps (SpotLamp) are kept per spot. ``sensor_fault`` puts the array
in fault (status fault, red lamp) until a Reset.
"""

from __future__ import annotations

from typing import Unpack

from firmware_protocol import LockBets, Message, Reset, SpotLamp, SpotState, UnlockBets
from firmware_protocol.vocabulary import DeviceKind, SpotLampColour
from sim_devices.firmware import DeviceOptions, SimulatedDevice

SENSOR_FAULT_CODE = 0x20


class SimulatedBetSensors(SimulatedDevice):
    KIND: DeviceKind = "bet_sensors"
    MODEL = "SIM-BETS-1"
    SERIAL_NUMBER = "BETS-0001"

    def __init__(
        self, *, key: bytes, seats: int = 6, spots: int = 4, **options: Unpack[DeviceOptions]
    ) -> None:
        if not 1 <= seats <= 7:
            raise ValueError(f"seats {seats}: a table has 1..7 seats")
        if not 1 <= spots <= 8:
            raise ValueError(f"spots {spots}: a seat has 1..8 betting spots")
        super().__init__(key=key, **options)
        self.seats = seats
        self.spots = spots
        self.locked = False
        self.chips: dict[tuple[int, int], tuple[int, int]] = {}  # (seat, spot) -> (amount_cents, chip_count)
        self.lamps: dict[tuple[int, int], SpotLampColour] = {}

    def _check_spot(self, seat: int, spot: int) -> None:
        if not 1 <= seat <= self.seats:
            raise ValueError(f"seat {seat}: this array has seats 1..{self.seats}")
        if not 0 <= spot < self.spots:
            raise ValueError(f"spot {spot}: this array has spots 0..{self.spots - 1}")

    # --- API for scripts and tests -------------------------------------------------------------------
    def place(self, seat: int, spot: int, amount_cents: int, chip_count: int | None = None) -> None:
        """Set what lies on a spot (placing, adding or taking away chips): reported at once."""
        self._check_spot(seat, spot)
        if amount_cents < 0:
            raise ValueError(f"amount_cents {amount_cents}: negative")
        if chip_count is None:
            chip_count = 0 if amount_cents == 0 else max(1, amount_cents // 500)
        if (amount_cents == 0) != (chip_count == 0):
            raise ValueError("chip_count must be 0 exactly when amount_cents is 0")
        if amount_cents == 0:
            self.chips.pop((seat, spot), None)
        else:
            self.chips[(seat, spot)] = (amount_cents, chip_count)
        self._report(seat, spot)

    def remove(self, seat: int, spot: int) -> None:
        self.place(seat, spot, 0, 0)

    def sensor_fault(self, code: int = SENSOR_FAULT_CODE) -> None:
        self.set_status("fault", code)

    def _report(self, seat: int, spot: int) -> None:
        amount_cents, chip_count = self.chips.get((seat, spot), (0, 0))
        self.emit(
            SpotState(
                seat=seat, spot=spot, amount_cents=amount_cents, chip_count=chip_count, locked=self.locked
            )
        )

    # --- firmware ------------------------------------------------------------------------------------
    def on_link_up(self) -> None:
        super().on_link_up()
        # A controller that (re)connected learns the table as it lies now.
        for seat, spot in sorted(self.chips):
            self._report(seat, spot)

    def on_message(self, message: Message, seq: int) -> None:
        if isinstance(message, LockBets):
            self.locked = True
            for seat, spot in sorted(self.chips):
                self._report(seat, spot)
        elif isinstance(message, UnlockBets):
            self.locked = False
        elif isinstance(message, SpotLamp):
            try:
                self._check_spot(message.seat, message.spot)
            except ValueError as error:
                self.refuse(seq, 2, str(error))
                return
            self.lamps[(message.seat, message.spot)] = message.colour
        elif isinstance(message, Reset):
            self.set_status("ready")
        else:
            self.refuse(seq, 1, f"{message.NAME} is not for bet sensors")
