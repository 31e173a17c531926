"""Device path benchmarks over a real pseudo-terminal; prints one JSON object.

- round_trip_ms: a driver command (ShowText) to the dealer display and back: the frame written to the
  pty by pyserial-asyncio-fast, read by the simulated firmware's Link, acknowledged, the ACK read and
  verified by the driver's Link, the caller's await resolved. p50 / p99 / max over ``--round-trips``.
- cards_per_s: the shoe deals 7 positions x 7 cards with no pause between cards; every card crosses
  the pty as its own authenticated, acknowledged frame and reaches the domain as a CardDealt event
  (through the supervisor and the shuffler driver's checks). Cards over the time from the Deal
  command to the last HandComplete, summed over ``--deals`` deals.

The simulated devices run in the same process and event loop as the drivers: one core does both ends
of every frame. ``--transport tcp|usb|sim`` measures the same over the other transports.
Targets (issue 4): round-trip p99 <= 5 ms; >= 1,000 cards/s. Not a test: figures vary with the load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import platform
import statistics
import tempfile
import time
from pathlib import Path

import structlog

from drivers.events import CardDealt, Deal, DeckVerified, DomainEvent, HandComplete, ShowText, Shuffle
from drivers.factory import make_driver
from sim_devices.firmware import LinkTiming
from sim_devices.table import TRANSPORT_KINDS, SimDeviceSpec, SimTable, TransportKind

KEYS = {"shuffler": bytes(range(32)), "display": bytes(range(64, 96))}
TRANSPORT_NAMES = {
    "pty": "pty (pyserial-asyncio-fast <-> raw pty master)",
    "tcp": "TCP 127.0.0.1 (asyncio)",
    "usb": "USB bulk (pyusb on worker threads <-> VirtualUsbBackend)",
    "sim": "sim:// (in-process, no file descriptor)",
}
DEAL = tuple((position, 7) for position in (1, 2, 3, 4, 5, 6, 0))


class Collector:
    def __init__(self) -> None:
        self.cards = 0
        self.completes = 0
        self.verified = 0
        self.changed = asyncio.Event()

    def __call__(self, event: DomainEvent) -> None:
        if isinstance(event, CardDealt):
            self.cards += 1
        elif isinstance(event, HandComplete):
            self.completes += 1
            self.changed.set()
        elif isinstance(event, DeckVerified):
            self.verified += 1
            self.changed.set()

    async def until(self, done: object, timeout_s: float = 30.0) -> None:
        async with asyncio.timeout(timeout_s):
            while not done():  # type: ignore[operator]
                self.changed.clear()
                await self.changed.wait()


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def bench(round_trips: int, deals: int, transport: TransportKind) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as run_dir:
        specs = [
            SimDeviceSpec("shuffler", "shuffler", KEYS["shuffler"], transport=transport),
            SimDeviceSpec("display", "dealer_display", KEYS["display"], transport=transport),
        ]
        table = SimTable(specs, run_dir=Path(run_dir), timing=LinkTiming(1.0), seed=1)
        await table.start()
        collector = Collector()
        drivers = {
            name: make_driver(
                name,
                spec.kind,
                table.url(name),
                KEYS[name],
                publish=collector,
                usb_backend=table.usb_backend,
                sim_hub=table.sim_hub,
            )
            for name, spec in zip(("shuffler", "display"), specs, strict=True)
        }
        try:
            for driver in drivers.values():
                driver.start()
            for driver in drivers.values():
                await driver.wait_ready(timeout_s=10)
            display = drivers["display"]
            for _ in range(50):  # warm up
                await display.send(ShowText("display", "warm up"))
            samples_ms: list[float] = []
            for number in range(round_trips):
                started = time.perf_counter()
                await display.send(ShowText("display", f"round trip {number}"))
                samples_ms.append((time.perf_counter() - started) * 1000)

            shoe = drivers["shuffler"]
            deal_seconds = 0.0
            cards_before = collector.cards
            for number in range(deals):
                await shoe.send(Shuffle("shuffler"))
                await collector.until(lambda n=number: collector.verified > n)
                completes = collector.completes
                started = time.perf_counter()
                await shoe.send(Deal("shuffler", DEAL))
                await collector.until(lambda c=completes: collector.completes >= c + len(DEAL))
                deal_seconds += time.perf_counter() - started
            cards = collector.cards - cards_before
            health = shoe.health
        finally:
            for driver in drivers.values():
                await driver.stop()
            await table.stop()
    return {
        "transport": TRANSPORT_NAMES[transport],
        "devices_in": "same process and event loop as the drivers",
        "round_trips": round_trips,
        "round_trip_ms": {
            "p50": round(statistics.median(samples_ms), 3),
            "p99": round(percentile(samples_ms, 0.99), 3),
            "max": round(max(samples_ms), 3),
            "mean": round(statistics.fmean(samples_ms), 3),
        },
        "cards": cards,
        "deal_seconds": round(deal_seconds, 3),
        "cards_per_s": round(cards / deal_seconds, 1),
        "frame_errors": health.errors,
        "retransmissions": health.retransmissions,
        "targets": {"round_trip_p99_ms_at_most": 5.0, "cards_per_s_at_least": 1000},
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, load average {Path('/proc/loadavg').read_text().split()[0]}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=2000)
    parser.add_argument("--deals", type=int, default=40)
    parser.add_argument("--transport", choices=TRANSPORT_KINDS, default="pty")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    print(json.dumps(asyncio.run(bench(args.round_trips, args.deals, args.transport)), indent=2))


if __name__ == "__main__":
    main()
