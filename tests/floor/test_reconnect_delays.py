"""The floor service's consumer and a worker's lease loop wait between reconnections by the one shared
rule (controller/waits.py ``ReconnectDelay``, docs/floor.md "The uplink"): ``backoff_initial_s``,
doubled after each failed attempt, each wait spread over half to one and a half times itself, never
past the cap (``backoff_max_s``; for the lease loop also the renew interval).

Each attempt fails at once for real: the floor's CA file is not there, so setting up TLS raises
(an OSError, which both loops retry as the floor's own I/O). A refused port would not do: nats-py's
connect itself tries a refused server again every 2 s for minutes. The waits are read through an
injected waiter that returns at once and records the delay asked, so the test waits for nothing and
holds on a loaded machine."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from controller.floor.partition_setup import WorkerSettings
from controller.floor.service import FloorService
from controller.floor.service_settings import FloorConfig
from controller.floor.workers import FloorWorker
from controller.waits import ReconnectDelay

WAITS = 6
SEED = 29
BOUND_S = 60.0  # a bound on the whole run, never a window: each attempt fails at once


def _config(tmp_path: Path, initial_s: float, max_s: float) -> FloorConfig:
    return FloorConfig(
        ("tls://127.0.0.1:4222",),
        "floor-reader",
        "pw",
        tmp_path / "absent-ca.pem",
        "host=127.0.0.1 dbname=floor",  # never reached: NATS fails first
        backoff_initial_s=initial_s,
        backoff_max_s=max_s,
    )


def _documented(initial_s: float, cap_s: float, rng: random.Random) -> list[float]:
    """The delays docs/floor.md gives, drawn from the same generator the loop is given."""
    delays, next_s = [], initial_s
    for _ in range(WAITS):
        delays.append(min(next_s * (0.5 + rng.random()), cap_s))
        next_s = min(next_s * 2, cap_s)
    return delays


class Recorder:
    """A waiter that records each delay asked and returns at once; after WAITS it sets ``stop``."""

    def __init__(self, stop: asyncio.Event) -> None:
        self.stop = stop
        self.delays_s: list[float] = []

    async def __call__(self, stop: asyncio.Event, delay_s: float) -> bool:
        self.delays_s.append(delay_s)
        if len(self.delays_s) >= WAITS:
            self.stop.set()
        return stop.is_set()


def test_the_floor_service_waits_the_shared_backoff_between_reconnections(tmp_path: Path) -> None:
    config = _config(tmp_path, 0.2, 1.0)

    async def scenario() -> list[float]:
        stop = asyncio.Event()
        recorder = Recorder(stop)
        retry = ReconnectDelay.of(config, random.Random(SEED), waiter=recorder)
        service = FloorService(config, retry=retry)
        async with asyncio.timeout(BOUND_S):
            await service.run(stop)
        assert service.status.last_error.startswith("FileNotFoundError"), service.status.last_error
        return recorder.delays_s

    waited = asyncio.run(scenario())
    assert waited == _documented(0.2, 1.0, random.Random(SEED))
    assert max(waited) <= 1.0
    assert waited[0] < 0.3  # the first wait is 0.2 s jittered


def test_a_workers_lease_loop_waits_the_shared_backoff_capped_at_its_renew_interval(tmp_path: Path) -> None:
    # The renew interval (0.5 s) is below backoff_max_s (5 s): no wait is longer than a tick.
    config = _config(tmp_path, 0.2, 5.0)
    settings = WorkerSettings("A", 2, lease_ttl_s=3.0, renew_interval_s=0.5)

    async def scenario() -> list[float]:
        stop = asyncio.Event()
        recorder = Recorder(stop)
        worker = FloorWorker(config, settings, rng=random.Random(SEED), reconnect_waiter=recorder)
        async with asyncio.timeout(BOUND_S):
            await worker.run(stop)
        assert worker.status.last_error.startswith("FileNotFoundError"), worker.status.last_error
        return recorder.delays_s

    waited = asyncio.run(scenario())
    assert waited == _documented(0.2, 0.5, random.Random(SEED))
    assert max(waited) == 0.5  # the cap reached: jittered waits above it are cut to the interval
