"""1% of the bytes corrupted on the pty, both ways: no wrong card ever reaches the domain, and the link
recovers (the Link retransmits; when its retries run out it goes down and the supervisor reconnects and
re-authenticates; the shoe resends what was never acknowledged)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from drivers.events import (
    CardDealt,
    Deal,
    DeckVerified,
    DomainCommand,
    HandComplete,
    SecurityEvent,
    Shuffle,
    ShufflerFault,
)
from drivers.supervisor import DeviceUnavailable
from sim_devices.noise import NoiseRates
from sim_devices.shuffler import PlannedFault
from tests.device_harness.leaks import run_async
from tests.device_harness.rig import Rig, table_rig

DEAL = ((1, 7), (2, 7), (3, 7), (4, 7), (5, 7), (6, 7), (0, 7))
ROUNDS = 2


async def deliver(rig: Rig, command: DomainCommand, arrived: Callable[[], bool]) -> None:
    """Send until the shoe has it. A command whose ACK was lost with the link may have arrived anyway;
    the test asks the shoe (its oracle) rather than sending a deal twice."""
    driver = rig.drivers["shuffler"]
    for _ in range(40):
        if arrived():
            return
        await driver.wait_ready(timeout_s=10)
        try:
            await driver.send(command)
            return
        except DeviceUnavailable:
            continue
    raise AssertionError(f"{command} never delivered")


def test_one_percent_corrupted_bytes_never_yield_a_wrong_card_and_the_link_recovers(tmp_path: Path) -> None:
    async def body() -> None:
        async with table_rig(
            "pty", tmp_path / "run", names=("shuffler",), noise=NoiseRates(flip=0.01), seed=11
        ) as rig:
            shoe = rig.table.shuffler()
            for round_number in range(ROUNDS):
                shuffles, deals = shoe.shuffles, shoe.deals_started
                await deliver(rig, Shuffle("shuffler"), lambda s=shuffles: shoe.shuffles > s)  # type: ignore[misc]
                await rig.log.wait_count(DeckVerified, round_number + 1, timeout_s=30)
                await deliver(rig, Deal("shuffler", DEAL), lambda d=deals: shoe.deals_started > d)  # type: ignore[misc]
                await rig.log.wait_count(HandComplete, 7 * (round_number + 1), timeout_s=60)
                await rig.drivers["shuffler"].wait_ready(timeout_s=10)
            cards = [(c.position, c.index, c.card) for c in rig.log.of(CardDealt)]
            # Every card the shoe dealt, in order, once; nothing else.
            assert cards == shoe.dealt
            assert len(cards) == ROUNDS * 49
            assert all(d.complete for d in rig.log.of(DeckVerified))
            # Noise is caught by the CRC, never taken for a forged or replayed frame. A Hello that answers
            # an earlier handshake attempt (its challenge was resent through the noise) is the one alert
            # a noisy line can cause: the protocol reports it as stale_handshake.
            reasons = {event.reason for event in rig.log.of(SecurityEvent)}
            assert reasons <= {"stale_handshake"}
            health = rig.drivers["shuffler"].health
            assert health.errors > 0  # the noise was real
            noise = rig.table.ports["shuffler"].noise_out
            assert noise is not None
            assert noise.counters.flipped > 0

    run_async(body, timeout_s=150)


def test_a_noisy_line_and_unplugs_mid_deal_deliver_every_command_and_card_exactly_once(
    tmp_path: Path,
) -> None:
    """v2 over a real pty: bytes flipped, dropped and duplicated (0.2 % each), reads split, and the cable
    pulled in the middle of every deal. Each command is sent once (no oracle, no retry): the link
    resumes across every reconnect, so the shoe carries out each exactly once, and every card it dealt
    reaches the domain once, in order."""

    async def body() -> None:
        noise = NoiseRates(flip=0.002, drop=0.002, duplicate=0.002, split=0.05)
        async with table_rig("pty", tmp_path / "run", names=("shuffler",), noise=noise, seed=12) as rig:
            shoe = rig.table.shuffler()
            driver = rig.drivers["shuffler"]
            window_s = driver.timing.link.heartbeat_window_s
            for round_number in range(3):
                await driver.wait_ready(timeout_s=20)
                await driver.send(Shuffle("shuffler"))
                await rig.log.wait_count(DeckVerified, round_number + 1, timeout_s=30)
                shoe.plan_fault(
                    PlannedFault("unplug", at_card=10 + 10 * round_number, duration_s=2 * window_s)
                )
                await driver.wait_ready(timeout_s=20)
                await driver.send(Deal("shuffler", DEAL))
                await rig.log.wait_count(HandComplete, 7 * (round_number + 1), timeout_s=60)
            assert (shoe.shuffles, shoe.deals_started) == (3, 3)  # each command carried out once
            cards = [(c.position, c.index, c.card) for c in rig.log.of(CardDealt)]
            assert cards == shoe.dealt
            assert len(cards) == 3 * 49
            assert not rig.log.of(ShufflerFault)  # nothing reported twice
            assert driver.health.reconnects >= 3
            assert driver.link.stats.retransmissions > 0

    run_async(body, timeout_s=200)
