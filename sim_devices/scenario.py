"""Scenario files: what a simulated table does, and when (TOML; docs/devices.md describes the format).

    # seconds from the start of `flushtable sim`
    [[step]]
    at_s = 1.0
    device = "sensors"
    action = "place"
    seat = 1
    spot = 0
    amount_cents = 2500
    chip_count = 3          # optional: about one chip per 5.00 when left out

    [[step]]
    at_s = 4.0
    device = "shuffler"
    action = "fault"
    kind = "jam"
    at_card = 10            # fires before the 11th card of the next deal

Actions: place, remove, sensor_fault (bet sensors; spot 7 is a seat's bank spot); press, key_bank (dealer
display: key_bank keys a designated player's bank, seat and amount_cents); fault, open_door, resend
(shuffler); silent, unplug (any device, for ``duration_s``). A bad file is refused whole, with one line
naming the file, the step and the field: every value is checked against what the device can do (a seat
and spot of this table's sensor array, an amount the wire carries, a finite duration of at most a day, a
card position and index of a deal) before anything starts, so no step is refused half-way through a run.

A step may be anchored to what the simulated devices themselves see, so a script can act "after the
deal" or "after the lock" however long the controller takes to get there:

    [[step]]
    after = "deal"          # at_s counts from the end of the shoe's 2nd deal (its 2nd DealRequest)
    count = 2
    at_s = 0.1
    device = "sensors"
    action = "place"        # e.g. a raise, or chips added after the lock (past-posting)
    ...

``after`` is "start" (the default: the scenario's start), "deal" (the shoe finished its ``count``-th
deal since the start and the controller acknowledged all of it; Chase the Flush deals three times a
round) or "lock" (the bet sensors received
their ``count``-th LockBets). The anchors are watched on the devices' side only (no controller).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from firmware_protocol.field_codecs import BANK_CENTS, U16, U32
from firmware_protocol.vocabulary import (
    DEALER_KEYS,
    DECK_SIZE,
    MAX_SEAT,
    MAX_SPOT,
    SEAT_KEYS,
    VALID_POSITIONS,
)
from sim_devices.bet_sensors import SimulatedBetSensors
from sim_devices.dealer_display import SimulatedDealerDisplay
from sim_devices.firmware import SimulatedDevice
from sim_devices.shuffler import FAULT_KINDS, PlannedFault, SimulatedShuffler

MAX_SCENARIO_S = 24 * 3600.0
ANCHORS = ("start", "deal", "lock")
ANCHOR_POLL_S = 0.002  # how often the anchors' device state is looked at (a deal takes far longer)

# action -> (device class it needs or None for any, required fields, optional fields)
_ACTIONS: dict[str, tuple[type[SimulatedDevice] | None, tuple[str, ...], tuple[str, ...]]] = {
    "place": (SimulatedBetSensors, ("seat", "spot", "amount_cents"), ("chip_count",)),
    "remove": (SimulatedBetSensors, ("seat", "spot"), ()),
    "sensor_fault": (SimulatedBetSensors, (), ("code",)),
    "press": (SimulatedDealerDisplay, ("key",), ("seat",)),
    "key_bank": (SimulatedDealerDisplay, ("seat", "amount_cents"), ()),
    "fault": (
        SimulatedShuffler,
        ("kind",),
        ("at_card", "during_shuffle", "position", "duration_s", "missing"),
    ),
    "open_door": (SimulatedShuffler, (), ()),
    "resend": (SimulatedShuffler, ("position", "index"), ("misread",)),
    "silent": (None, ("duration_s",), ()),
    "unplug": (None, ("duration_s",), ()),
}
_INT_FIELDS = {"seat", "spot", "amount_cents", "chip_count", "code", "at_card", "position", "index"}
_FLOAT_FIELDS = {"duration_s"}
_BOOL_FIELDS = {"during_shuffle", "missing", "misread"}
MAX_ANCHOR_COUNT = 1_000_000  # the count-th deal or lock: a million rounds is beyond any one run
# The whole-number fields' ranges, as the wire carries them (firmware_protocol/messages.py); a bet sensor
# seat and spot are further limited to the table's array (parse_scenario's seats and spots).
_INT_RANGES: dict[str, tuple[int, int]] = {
    "seat": (1, MAX_SEAT),
    "spot": (0, MAX_SPOT),
    "amount_cents": (0, U32.high),
    "chip_count": (0, U16.high),
    "code": (1, U16.high),
    "at_card": (0, DECK_SIZE - 1),
    "position": (min(VALID_POSITIONS), max(VALID_POSITIONS)),
    "index": (0, DECK_SIZE - 1),
}


class ScenarioError(ValueError):
    """A scenario file refused: the message is one line naming the file, the step and the field."""


@dataclass(frozen=True, slots=True)
class Step:
    at_s: float
    device: str
    action: str
    fields: Mapping[str, Any]
    number: int  # 1-based, as the file lists them
    after: str = "start"  # the anchor at_s counts from: "start", "deal" or "lock"
    count: int = 1  # the anchor's count-th occurrence (deal, lock)


@dataclass(frozen=True, slots=True)
class Scenario:
    source: str
    steps: tuple[Step, ...]


def parse_scenario(
    text: str,
    *,
    source: str,
    device_kinds: Mapping[str, type[SimulatedDevice]],
    seats: int = MAX_SEAT,
    spots: int = MAX_SPOT + 1,
) -> Scenario:
    """Check the whole file against the table's devices (name -> firmware class) and its bet sensor
    array (``seats`` x ``spots``) before anything runs. A caller that reads a file a person names parses
    the TOML with its own limits and calls ``scenario_from_document`` (controller/simulation/scenario.py)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"{source}: not TOML: {error}") from None
    except ValueError:  # tomllib's int() of a number of more than 4300 digits: not a TOMLDecodeError
        raise ScenarioError(f"{source}: not TOML: a number of more than 4300 digits") from None
    return scenario_from_document(
        document, source=source, device_kinds=device_kinds, seats=seats, spots=spots
    )


def scenario_from_document(
    document: Mapping[str, Any],
    *,
    source: str,
    device_kinds: Mapping[str, type[SimulatedDevice]],
    seats: int = MAX_SEAT,
    spots: int = MAX_SPOT + 1,
) -> Scenario:
    """The scenario of a parsed TOML document, every step checked (ScenarioError naming the step)."""
    unknown = set(document) - {"step"}
    if unknown:
        raise ScenarioError(
            f"{source}: {sorted(unknown)[0]}: unknown key (a scenario has only [[step]] tables)"
        )
    raw_steps = document.get("step", [])
    if not isinstance(raw_steps, list):
        raise ScenarioError(f"{source}: step: must be an array of tables ([[step]])")
    steps = [
        _parse_step(raw, number, source, device_kinds, seats=seats, spots=spots)
        for number, raw in enumerate(raw_steps, start=1)
    ]
    steps.sort(key=lambda step: (step.after, step.count, step.at_s, step.number))
    return Scenario(source, tuple(steps))


def _parse_step(
    raw: object,
    number: int,
    source: str,
    device_kinds: Mapping[str, type[SimulatedDevice]],
    *,
    seats: int,
    spots: int,
) -> Step:
    """One step, checked in a fixed order (the first fault found is the one reported): when and on
    what it acts, then its fields' names and values, then the rules of its action."""
    where = f"{source}: step[{number}]"
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: must be a table")

    def fail(field: str, reason: str) -> ScenarioError:
        return ScenarioError(f"{where}.{field}: {reason}")

    at_s, device, action, after, count = _step_anchor(raw, device_kinds, fail)
    fields = _step_fields(raw, action, device_kinds[device], fail, seats=seats, spots=spots)
    _step_action_rules(action, fields, fail)
    return Step(float(at_s), device, action, fields, number, after, count)


_Fail = Callable[[str, str], ScenarioError]


def _step_anchor(
    raw: dict[str, Any], device_kinds: Mapping[str, type[SimulatedDevice]], fail: _Fail
) -> tuple[float, str, str, str, int]:
    """When the step runs (``at_s`` after its anchor, the ``count``-th one) and on what device."""
    at_s = raw.get("at_s")
    if isinstance(at_s, bool) or not isinstance(at_s, int | float):
        raise fail("at_s", "missing or not a number of seconds")
    if not 0 <= at_s <= MAX_SCENARIO_S:
        raise fail("at_s", f"{at_s} is not between 0 and {MAX_SCENARIO_S:.0f} s")
    device = raw.get("device")
    if not isinstance(device, str) or device not in device_kinds:
        raise fail(
            "device", f"{device!r} is not one of this table's devices ({', '.join(sorted(device_kinds))})"
        )
    action = raw.get("action")
    if not isinstance(action, str) or action not in _ACTIONS:
        raise fail("action", f"{action!r} is not one of {', '.join(_ACTIONS)}")
    needs = _ACTIONS[action][0]
    if needs is not None and not issubclass(device_kinds[device], needs):
        raise fail("action", f"{action} is not something device {device} ({device_kinds[device].KIND}) does")
    after = raw.get("after", "start")
    if after not in ANCHORS:
        raise fail("after", f"{after!r} is not one of {', '.join(ANCHORS)}")
    count = raw.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_ANCHOR_COUNT:
        raise fail("count", f"must be a whole number from 1 to {MAX_ANCHOR_COUNT:,}")
    if after != "start":
        wanted: type[SimulatedDevice] = {"deal": SimulatedShuffler, "lock": SimulatedBetSensors}[after]
        if not any(issubclass(kind, wanted) for kind in device_kinds.values()):
            raise fail("after", f"{after}: this table has no {wanted.KIND} to watch")
    return at_s, device, action, after, count


def _step_fields(
    raw: dict[str, Any],
    action: str,
    device_kind: type[SimulatedDevice],
    fail: _Fail,
    *,
    seats: int,
    spots: int,
) -> dict[str, Any]:
    """The action's own fields: none unknown, none missing, each of its type and in its range."""
    _needs, required, optional = _ACTIONS[action]
    anchor_keys = ("at_s", "device", "action", "after", "count")
    fields = {key: value for key, value in raw.items() if key not in anchor_keys}
    for key in fields:
        if key not in required and key not in optional:
            raise fail(key, f"unknown field for action {action}")
    for key in required:
        if key not in fields:
            raise fail(key, f"missing (action {action} needs {', '.join(required)})")
    for key, value in fields.items():
        if key in _INT_FIELDS:
            if isinstance(value, bool) or not isinstance(value, int):
                raise fail(key, "must be a whole number")
            low, high = _int_range(key, action, device_kind, seats=seats, spots=spots)
            if not low <= value <= high:
                shown = f"a {len(str(value))}-digit number" if value.bit_length() > 64 else str(value)
                raise fail(key, f"{shown} is out of range {low}..{high}")
        if key in _FLOAT_FIELDS and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or not 0 <= value <= MAX_SCENARIO_S
        ):
            raise fail(key, f"must be a number of seconds from 0 to {MAX_SCENARIO_S:.0f}")
        if key in _BOOL_FIELDS and not isinstance(value, bool):
            raise fail(key, "must be true or false")
    return fields


def _step_action_rules(action: str, fields: dict[str, Any], fail: _Fail) -> None:
    """What an action's fields must say together: chips with an amount, a real position, a known key
    (with a seat exactly when it takes one), a fault the shuffler can plan."""
    if (
        action == "place"
        and "chip_count" in fields
        and (fields["amount_cents"] == 0) != (fields["chip_count"] == 0)
    ):
        raise fail("chip_count", "must be 0 exactly when amount_cents is 0")
    if "position" in fields and fields["position"] not in VALID_POSITIONS:
        positions = ", ".join(str(position) for position in sorted(VALID_POSITIONS))
        raise fail("position", f"{fields['position']} is not a position a card is dealt to ({positions})")
    if action == "press":
        if fields["key"] not in DEALER_KEYS:
            raise fail("key", f"{fields['key']!r} is not one of {', '.join(DEALER_KEYS)}")
        if (fields["key"] in SEAT_KEYS) != ("seat" in fields):
            raise fail("seat", "fold_seat and kill_seat need a seat 1..7; no other key takes one")
    if action == "fault":
        if fields["kind"] not in FAULT_KINDS:
            raise fail("kind", f"{fields['kind']!r} is not one of {', '.join(FAULT_KINDS)}")
        try:
            PlannedFault(**fields)
        except (TypeError, ValueError) as error:
            raise fail("kind", str(error)) from None


def _int_range(
    key: str, action: str, device: type[SimulatedDevice], *, seats: int, spots: int
) -> tuple[int, int]:
    """The values a whole-number field may take for this action on this device."""
    low, high = _INT_RANGES[key]
    if issubclass(device, SimulatedBetSensors):  # the array's own seats and spots (it refuses others)
        if key == "seat":
            high = min(high, seats)
        elif key == "spot":
            high = min(high, spots - 1)
    if action == "key_bank" and key == "amount_cents":
        low, high = BANK_CENTS.low, BANK_CENTS.high
    return low, high


def apply_step(step: Step, device: SimulatedDevice) -> None:
    """Carry out one step on its device (ValueError if a value does not fit this device)."""
    fields = step.fields
    if isinstance(device, SimulatedBetSensors):
        if step.action == "place":
            device.place(fields["seat"], fields["spot"], fields["amount_cents"], fields.get("chip_count"))
            return
        if step.action == "remove":
            device.remove(fields["seat"], fields["spot"])
            return
        if step.action == "sensor_fault":
            device.sensor_fault(fields.get("code", 0x20))
            return
    if isinstance(device, SimulatedDealerDisplay) and step.action == "press":
        device.press(fields["key"], fields.get("seat"))
        return
    if isinstance(device, SimulatedDealerDisplay) and step.action == "key_bank":
        device.key_bank(fields["seat"], fields["amount_cents"])
        return
    if isinstance(device, SimulatedShuffler):
        if step.action == "fault":
            device.plan_fault(PlannedFault(**fields))
            return
        if step.action == "open_door":
            device.open_door()
            return
        if step.action == "resend":
            device.resend_card(fields["position"], fields["index"], misread=fields.get("misread", False))
            return
    if step.action == "silent":
        device.go_silent(float(fields["duration_s"]))
        return
    if step.action == "unplug":
        device.spawn(device.unplug_for(float(fields["duration_s"])), f"unplug {step.device}")
        return
    raise ValueError(f"step {step.number}: {step.action} does not apply to {type(device).__name__}")


class _AnchorWatch:
    """When each deal ended and each lock arrived (loop time), watched on the simulated devices."""

    def __init__(self, devices: Mapping[str, SimulatedDevice]) -> None:
        self._shoes = [device for device in devices.values() if isinstance(device, SimulatedShuffler)]
        self._sensors = [device for device in devices.values() if isinstance(device, SimulatedBetSensors)]
        self.deal_ends: list[float] = []
        self.locks: list[float] = []
        self.changed = asyncio.Event()
        self._deals_seen = sum(shoe.deals_started for shoe in self._shoes)
        self._locked_before = any(sensors.locked for sensors in self._sensors)

    async def watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            # A deal has ended when it has started, the shoe is no longer dealing (or in fault), and the
            # controller has acknowledged every message of it (the cards leave the shoe long before the
            # controller reads them; a step "after the deal" must not overtake them on another line).
            started = sum(shoe.deals_started for shoe in self._shoes)
            busy = any(shoe.dealing or shoe.outbox or shoe.link.pending_count for shoe in self._shoes)
            ended = started - (1 if busy else 0)
            while self._deals_seen + len(self.deal_ends) < ended:
                self.deal_ends.append(loop.time())
                self.changed.set()
            locked = any(sensors.locked for sensors in self._sensors)
            if locked and not self._locked_before:
                self.locks.append(loop.time())
                self.changed.set()
            self._locked_before = locked
            await asyncio.sleep(ANCHOR_POLL_S)

    async def wait_for(self, after: str, count: int, start_s: float) -> float:
        """The loop time the anchor happened (the scenario's start for "start")."""
        if after == "start":
            return start_s
        times = self.deal_ends if after == "deal" else self.locks
        while len(times) < count:
            self.changed.clear()
            await self.changed.wait()
        return times[count - 1]


async def play(scenario: Scenario, devices: Mapping[str, SimulatedDevice], *, on_step: Any = None) -> None:
    """Run every step at its time (seconds from its anchor). A step whose values do not fit is reported
    through ``on_step(step, error)`` and skipped; the table carries on. Steps of one anchor run in
    time order; different anchors run side by side."""
    loop = asyncio.get_running_loop()
    start_s = loop.time()
    watch = _AnchorWatch(devices)
    groups: dict[tuple[str, int], list[Step]] = {}
    for step in scenario.steps:
        groups.setdefault((step.after, step.count), []).append(step)

    async def run_group(after: str, count: int, steps: list[Step]) -> None:
        anchor_s = await watch.wait_for(after, count, start_s)
        for step in sorted(steps, key=lambda step: (step.at_s, step.number)):
            delay_s = anchor_s + step.at_s - loop.time()
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            error: str | None = None
            try:
                apply_step(step, devices[step.device])
            except ValueError as problem:
                error = str(problem)
            if on_step is not None:
                on_step(step, error)

    watcher = loop.create_task(watch.watch(), name="scenario-anchors")
    try:
        await asyncio.gather(*(run_group(after, count, steps) for (after, count), steps in groups.items()))
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
