"""bench/soak_compare.py with the shoe's reports passed through the real shuffler driver, as the daemon
passes them: each ``CardDealt`` and ``HandComplete`` the soak's shoe makes becomes its protocol message,
goes through ``ShufflerDriver.translate``, and every event the driver publishes is fed to the engine;
every Deal, Shuffle and ResetDevice the engine sends to the shoe is told to the driver
(``command_sent``). The same journals as soak_compare.py mean the driver adds no judgment of its own;
run against the code before the deal's integrity moved into the engine, it gives what a real shoe's
reports journaled then (docs/engine.md "Who checks the deal").

    PYTHONPATH=$PWD .venv/bin/python bench/soak_through_driver.py --rounds 500 --out /tmp/through.json
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import firmware_protocol as fp
from controller.engine import TableEngine
from controller.engine.outputs import Output
from drivers.events import CardDealt, Deal, HandComplete, ResetDevice, Shuffle
from drivers.shuffler import ShufflerDriver

SHOE = "shuffler"
_drivers: dict[int, tuple[TableEngine, ShufflerDriver]] = {}  # by engine (kept alive: ids stay unique)
_handle = TableEngine.handle


def _driver_of(engine: TableEngine) -> ShufflerDriver:
    entry = _drivers.get(id(engine))
    if entry is None:
        # A socket URL is only parsed; nothing connects: translate and command_sent are pure.
        driver = ShufflerDriver(SHOE, "socket://127.0.0.1:9", bytes(range(32)), publish=lambda event: None)
        entry = _drivers[id(engine)] = (engine, driver)
    return entry[1]


def handle_through_driver(engine: TableEngine, event: object, now_s: float) -> list[Output]:
    driver = _driver_of(engine)
    events: list[object]
    if isinstance(event, CardDealt):
        message = fp.CardDealt(position=event.position, index=event.index, card=event.card)
        events = list(driver.translate(message))
    elif isinstance(event, HandComplete):
        events = list(driver.translate(fp.HandComplete(position=event.position, card_count=event.card_count)))
    else:
        events = [event]
    outputs: list[Output] = []
    for one in events:
        result = _handle(engine, one, now_s)
        for out in result:
            if isinstance(out, Deal | Shuffle | ResetDevice) and out.device == SHOE:
                driver.command_sent(out)
        outputs += result
    return outputs


def main() -> None:
    setattr(TableEngine, "handle", handle_through_driver)  # noqa: B010 (a bench's patch, on purpose)
    script = Path(__file__).with_name("soak_compare.py")
    sys.argv = [str(script), *sys.argv[1:]]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
