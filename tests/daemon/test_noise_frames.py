"""Forged frames on a device's line (controller/journal/noise.py at the daemon): each is refused by the
link and reported as a security event; within the device's budget it is journaled (security_event and
its alert), past it only counted, and a noise_suppressed summary carries the count. The real daemon,
its simulated devices over pseudo-terminals, a real journal; the budget's clock is moved by the test."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

from controller.engine.actions import Tick
from controller.journal.noise import DEFAULT_NOISE_POLICY, FORGED_FRAME
from controller.simulation.table import SimulatedTable
from firmware_protocol import DealerKey
from firmware_protocol.constants import KIND_DATA, SENDER_DEVICE
from firmware_protocol.framing import encode_frame
from sim_devices.table import SimTable
from tests.daemon.harness import entries, run_daemon, write_config

FORGER_KEY = bytes(range(32))  # not the display's key
BATCHES, PER_BATCH, STEP_S = 5, 100, 60.0


class FakeClock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def test_500_forged_frames_grow_the_journal_a_bounded_amount_and_every_one_is_counted(tmp_path: Path) -> None:
    clock = FakeClock()
    done = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []

    async def forge(table: SimulatedTable) -> None:
        daemon = table.daemon
        assert isinstance(table.devices, SimTable)
        device = table.devices.devices["display"]
        assert device.port is not None
        driver = daemon.drivers["display"]
        ticks = [0]
        daemon.add_listener(lambda item, _state: ticks.__setitem__(0, ticks[0] + isinstance(item, Tick)))

        async def a_tick_handled() -> None:
            """After the clock moved: the ticker's next Tick, which journals what came due."""
            seen = ticks[0]
            async with asyncio.timeout(20):
                while ticks[0] <= seen:
                    await asyncio.sleep(0.005)

        for batch in range(BATCHES):
            for n in range(PER_BATCH):
                frame = encode_frame(
                    KIND_DATA,
                    SENDER_DEVICE,
                    device.device_id,
                    10_000 + batch * PER_BATCH + n,
                    DealerKey(key="next").encode(),
                    key=FORGER_KEY,
                )
                device.port.send(frame)
            async with asyncio.timeout(20):
                while driver.health.security_events < (batch + 1) * PER_BATCH or not daemon.events.empty():
                    await asyncio.sleep(0.01)
            clock.now_s += STEP_S
            await a_tick_handled()  # the summaries that came due are journaled
        done.set()

    def on_ready(table: SimulatedTable) -> None:
        tasks.append(asyncio.get_running_loop().create_task(forge(table)))

    config = write_config(tmp_path, "hcf-house")
    run = run_daemon(
        config,
        tmp_path / "journal.sqlite",
        autoplay=False,
        integrity_every_rounds=0,
        noise_clock=clock,
        on_ready=on_ready,
        stop_when=lambda _daemon: done.is_set(),
        timeout_s=90,
    )
    assert tasks[0].done()
    assert tasks[0].exception() is None
    journal = entries(run.journal_path)
    security = [e for e in journal if e.kind == "security_event"]
    alerts = [e for e in journal if e.kind == "fault_raised" and e.payload["kind"] == "security_event"]
    summaries = [e for e in journal if e.kind == "noise_suppressed"]
    summarized = sum(int(e.payload["count"]) for e in summaries)
    seen = BATCHES * PER_BATCH
    policy = DEFAULT_NOISE_POLICY
    span_s = BATCHES * STEP_S
    bound = math.floor(policy.burst + policy.rate_per_s * span_s + span_s / policy.summary_after_s + 2)
    print(
        f"\n{seen} forged frames: {len(security)} security_event (+{len(alerts)} alerts) + "
        f"{len(summaries)} noise_suppressed counting {summarized}; bound {bound}"
    )
    assert len(security) + summarized == seen
    assert len(alerts) == len(security)
    assert len(security) + len(summaries) <= bound
    assert all(e.payload["category"] == FORGED_FRAME for e in summaries)
    assert all(e.source == "display" and e.payload["source"] == "display" for e in summaries)
    assert len(summaries) >= BATCHES - 1  # due each minute on the ticker, not only at the shutdown
