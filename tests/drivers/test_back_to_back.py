"""One driver test suite, run unchanged against every transport (python-can's back2back pattern).

``BackToBack`` holds the tests; each subclass only names its transport: a pseudo-terminal opened by
pyserial, TCP on 127.0.0.1, the pyusb VirtualUsbBackend through usb.core.find(backend=...), and the
in-process sim:// line. Devices are the simulated firmware (sim_devices), drivers are the real ones.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import ClassVar

import pytest

import firmware_protocol as fp
from drivers.events import (
    BetChanged,
    CardDealt,
    Deal,
    DealerKey,
    DealStateReported,
    DeckVerified,
    DeviceLost,
    DeviceReady,
    DeviceStatusChanged,
    HandComplete,
    LockBets,
    ResetDevice,
    SecurityEvent,
    SetSpotLamp,
    ShowButton,
    ShowSeatResult,
    ShowText,
    Shuffle,
    UnlockBets,
)
from drivers.factory import make_driver
from drivers.supervisor import DeviceHealth, DeviceUnavailable, DriverTiming
from firmware_protocol.runner import LinkTiming
from sim_devices.shuffler import PlannedFault
from sim_devices.table import TransportKind
from tests.device_harness.leaks import run_async
from tests.device_harness.rig import TEST_KEYS, TEST_TIME_SCALE, EventLog, Rig, table_rig

SIX_SEATS_AND_BANKER = ((1, 7), (2, 7), (3, 7), (4, 7), (5, 7), (6, 7), (0, 7))
# A loaded machine's lateness on top of a bound measured on the wall clock: the Link's verdict comes
# from a loop timer, which runs late when the process waits for a core. The exact bound (the link is
# down at LINK_SILENCE_TIMEOUT_S of silence, not before, not after) is the sans-I/O Link's, tested
# without a clock in tests/protocol/test_link_basic.py; here it tells a heartbeat verdict from none.
LOAD_ALLOWANCE_S = 2.0
AFTER_RECONNECT_S = 10.0  # what follows a reconnect "at once" (a second when quiet), bounded for a loaded one


async def shuffle_and_verify(rig: Rig) -> None:
    await rig.drivers["shuffler"].send(Shuffle("shuffler"))
    verified = await rig.log.wait_count(DeckVerified, 1)
    assert verified[-1].complete


class BackToBack:
    TRANSPORT: ClassVar[TransportKind]

    def run(self, tmp_path: Path, body: object, **rig_options: object) -> None:
        async def main() -> None:
            async with table_rig(self.TRANSPORT, tmp_path / "run", **rig_options) as rig:  # type: ignore[arg-type]
                await body(rig)  # type: ignore[operator]

        run_async(main, timeout_s=40)

    def test_every_device_authenticates_and_reports_ready(self, tmp_path: Path) -> None:
        async def body(rig: Rig) -> None:
            ready = {event.device: event for event in rig.log.of(DeviceReady)}
            assert set(ready) == {"shuffler", "sensors", "display"}
            assert ready["shuffler"].kind == "shuffler"
            assert ready["sensors"].kind == "bet_sensors"
            assert ready["display"].kind == "dealer_display"
            assert ready["shuffler"].serial_number == rig.table.devices["shuffler"].identity.serial_number
            for name in ready:  # each device's first message after the handshake: its status
                await rig.log.wait_for(DeviceStatusChanged, lambda e, name=name: e.device == name)  # type: ignore[misc]
            for driver in rig.drivers.values():
                health = driver.health
                assert health.state == "ready"
                assert health.frames_received >= 1
                assert (health.errors, health.reconnects) == (0, 0)
                assert health.last_heard_unix_s is not None

        self.run(tmp_path, body)

    def test_deal_of_six_hands_and_the_banker_arrives_card_by_card_in_order(self, tmp_path: Path) -> None:
        async def body(rig: Rig) -> None:
            await shuffle_and_verify(rig)
            await rig.drivers["shuffler"].send(Deal("shuffler", SIX_SEATS_AND_BANKER))
            completes = await rig.log.wait_count(HandComplete, 7)
            cards = rig.log.of(CardDealt)
            shoe = rig.table.shuffler()
            # Exactly what left the shoe, in the order it left, positions in the order requested.
            assert [(c.position, c.index, c.card) for c in cards] == shoe.dealt
            assert [c.position for c in cards] == [p for p, n in SIX_SEATS_AND_BANKER for _ in range(n)]
            assert [c.index for c in cards] == [i for _, n in SIX_SEATS_AND_BANKER for i in range(n)]
            assert len({c.card for c in cards}) == 49
            assert [(h.position, h.card_count) for h in completes] == list(SIX_SEATS_AND_BANKER)
            # Each HandComplete comes after the last card of its position and before the next's first.
            order = [e for e in rig.log.events if isinstance(e, CardDealt | HandComplete)]
            assert [type(e).__name__ for e in order[:8]] == ["CardDealt"] * 7 + ["HandComplete"]

        self.run(tmp_path, body)

    def test_bets_are_reported_and_changes_after_lock_are_flagged_locked(self, tmp_path: Path) -> None:
        async def body(rig: Rig) -> None:
            sensors = rig.table.bet_sensors()
            sensors.place(1, 0, 2500, 3)
            sensors.place(2, 0, 1000, 1)
            sensors.place(2, 2, 500, 1)
            await rig.log.wait_count(BetChanged, 3)
            sensors.place(2, 2, 0, 0)  # taken back before the lock
            await rig.log.wait_count(BetChanged, 4)
            await rig.drivers["sensors"].send(LockBets("sensors"))
            assert sensors.locked
            await rig.log.wait_count(BetChanged, 6)  # the two occupied spots, confirmed locked
            sensors.place(1, 0, 5000, 4)  # past-posting: chips added after the lock
            changes = await rig.log.wait_count(BetChanged, 7)
            assert [(c.seat, c.spot, c.amount_cents, c.chip_count, c.locked) for c in changes] == [
                (1, 0, 2500, 3, False),
                (2, 0, 1000, 1, False),
                (2, 2, 500, 1, False),
                (2, 2, 0, 0, False),
                (1, 0, 2500, 3, True),
                (2, 0, 1000, 1, True),
                (1, 0, 5000, 4, True),
            ]
            await rig.drivers["sensors"].send(UnlockBets("sensors"))
            assert not rig.table.bet_sensors().locked  # (re-read: the send changed it)
            await rig.drivers["sensors"].send(SetSpotLamp("sensors", 1, 0, "win"))
            assert sensors.lamps[(1, 0)] == "win"

        self.run(tmp_path, body)

    def test_display_shows_what_it_is_told_and_sends_the_dealers_keys(self, tmp_path: Path) -> None:
        async def body(rig: Rig) -> None:
            display = rig.table.dealer_display()
            driver = rig.drivers["display"]
            await driver.send(ShowButton("display", 4))
            await driver.send(ShowText("display", "Place your bets"))
            await driver.send(ShowSeatResult("display", 2, "win", 1500))
            assert (display.button_seat, display.text, display.seat_results) == (
                4,
                "Place your bets",
                {2: ("win", 1500)},
            )
            display.press("next")
            display.press("fold_seat", 3)
            display.press("void_request")
            keys = await rig.log.wait_count(DealerKey, 3)
            assert [(k.key, k.seat) for k in keys] == [
                ("next", None),
                ("fold_seat", 3),
                ("void_request", None),
            ]

        self.run(tmp_path, body)

    def test_unplugged_mid_deal_loss_reported_then_reconnects_and_resumes_exactly(
        self, tmp_path: Path
    ) -> None:
        async def body(rig: Rig) -> None:
            await shuffle_and_verify(rig)
            shoe = rig.table.shuffler()
            window_s = rig.drivers["shuffler"].timing.link.heartbeat_window_s
            shoe.plan_fault(PlannedFault("unplug", at_card=20, duration_s=3 * window_s))
            await rig.drivers["shuffler"].send(Deal("shuffler", SIX_SEATS_AND_BANKER))
            await rig.log.wait_for(CardDealt, lambda e: e.position == 3, timeout_s=5)
            unplugged_at = time.monotonic()
            lost = await rig.log.wait_for(DeviceLost, timeout_s=5)
            assert time.monotonic() - unplugged_at <= window_s + LOAD_ALLOWANCE_S  # the heartbeat window
            assert lost.device == "shuffler"
            await rig.log.wait_count(DeviceReady, 4, timeout_s=10)  # re-authenticated
            # The shoe says, at once, that it holds this deal; the deal completes (in a second, when quiet).
            # (the first answer came after the first handshake, before the deal)
            state = (await rig.log.wait_count(DealStateReported, 2, timeout_s=AFTER_RECONNECT_S))[-1]
            assert state.deal in ("dealing", "complete")
            assert state.positions == SIX_SEATS_AND_BANKER
            await rig.log.wait_count(HandComplete, 7, timeout_s=AFTER_RECONNECT_S)
            cards = rig.log.of(CardDealt)
            assert [(c.position, c.index, c.card) for c in cards] == shoe.dealt  # nothing lost or doubled
            assert len(cards) == 49
            assert rig.drivers["shuffler"].health.reconnects == 1
            assert shoe.counters.sessions == 2

        self.run(tmp_path, body, card_interval_s=0.01)

    def test_a_shoe_power_cycled_mid_deal_says_so_as_soon_as_it_is_back(self, tmp_path: Path) -> None:
        """The shoe loses power mid-deal: back, it holds no deal, and says so in its first answer - so the
        controller ends the deal at once instead of waiting for the deal timeout."""

        async def body(rig: Rig) -> None:
            await shuffle_and_verify(rig)
            shoe = rig.table.shuffler()
            await rig.drivers["shuffler"].send(Deal("shuffler", SIX_SEATS_AND_BANKER))
            await rig.log.wait_for(CardDealt, lambda e: e.position == 2, timeout_s=5)
            assert shoe.port is not None
            await shoe.port.unplug()
            shoe.power_cycle()
            await rig.log.wait_for(DeviceLost, timeout_s=5)
            await shoe.port.plug()
            await rig.log.wait_count(DeviceReady, 4, timeout_s=10)
            first, state = await rig.log.wait_count(DealStateReported, 2, timeout_s=AFTER_RECONNECT_S)
            assert first.deal == "none"  # after the first handshake, before the deal
            assert (state.deal, state.positions, state.cards_reported) == ("none", (), 0)
            assert len(rig.log.of(HandComplete)) < 7  # the deal never finished

        self.run(tmp_path, body, card_interval_s=0.01)

    def test_a_genuine_key_press_repeated_across_a_reconnect_is_delivered_twice(self, tmp_path: Path) -> None:
        async def body(rig: Rig) -> None:
            display = rig.table.dealer_display()
            display.press("next")
            await rig.log.wait_count(DealerKey, 1)
            await display.unplug_for(0.05)
            await rig.log.wait_for(DeviceLost, timeout_s=5)
            await rig.log.wait_count(DeviceReady, 4, timeout_s=10)
            display.press("next")
            keys = await rig.log.wait_count(DealerKey, 2)
            assert [(key.key, key.seat) for key in keys] == [("next", None), ("next", None)]

        self.run(tmp_path, body)

    def test_a_v1_shoe_deals_through_the_v2_driver_in_v1(self, tmp_path: Path) -> None:
        async def body(rig: Rig) -> None:
            driver = rig.drivers["shuffler"]
            assert (driver.link.version, driver.link.window) == (1, 1)
            await shuffle_and_verify(rig)
            await driver.send(Deal("shuffler", SIX_SEATS_AND_BANKER))
            await rig.log.wait_count(HandComplete, 7, timeout_s=10)
            assert len(rig.log.of(CardDealt)) == 49
            assert not rig.log.of(DealStateReported)  # a v1 shoe is never asked
            statuses = rig.log.of(DeviceStatusChanged)
            assert statuses  # a v1 device reports its Status itself

        self.run(tmp_path, body, protocol_versions=(1,))

    def test_a_silent_device_is_lost_within_the_heartbeat_window_and_a_pending_command_arrives_after(
        self, tmp_path: Path
    ) -> None:
        """v2: the command accepted before the device hung is not failed when the link drops: the link
        keeps it and delivers it, once, after the next handshake."""

        async def body(rig: Rig) -> None:
            display = rig.table.dealer_display()
            driver = rig.drivers["display"]
            texts: list[str] = []

            def watch(event: object) -> None:
                if isinstance(event, fp.MessageReceived) and isinstance(event.message, fp.ShowText):
                    texts.append(event.message.text)

            display.on_link_event = watch
            window_s = driver.timing.link.heartbeat_window_s
            silence = display.go_silent(4 * window_s)
            started = time.monotonic()
            pending = asyncio.get_running_loop().create_task(
                driver.send(ShowText("display", "said while hung"))
            )
            lost = await rig.log.wait_for(DeviceLost)
            assert time.monotonic() - started <= window_s + LOAD_ALLOWANCE_S  # within the heartbeat window
            assert lost.reason in ("heartbeat_missed", "no_ack")
            assert not pending.done()  # kept, not failed
            with pytest.raises(DeviceUnavailable):
                await driver.send(ShowText("display", "not ready"))  # a new command is refused meanwhile
            await silence
            await pending  # delivered after the reconnect (bounded by request_timeout_s)
            assert texts == ["said while hung"]  # once
            await driver.send(ShowText("display", "back"))
            assert display.text == "back"
            assert driver.health.reconnects == 1

        self.run(tmp_path, body)

    def test_a_v1_device_s_pending_commands_fail_when_its_link_drops(self, tmp_path: Path) -> None:
        """v1 (the v1 firmware, driven by the v2 driver in v1): what the line took unacknowledged fails
        its send at once, as v1 always did - v1 cannot resume."""

        async def body(rig: Rig) -> None:
            display = rig.table.dealer_display()
            driver = rig.drivers["display"]
            assert driver.link.version == 1
            window_s = driver.timing.link.heartbeat_window_s
            silence = display.go_silent(4 * window_s)
            started = time.monotonic()
            with pytest.raises(DeviceUnavailable):
                await driver.send(ShowText("display", "nobody hears this"))
            assert time.monotonic() - started <= window_s + LOAD_ALLOWANCE_S  # when the link went down
            await silence
            await driver.wait_ready(timeout_s=5)
            await driver.send(ShowText("display", "back"))
            assert display.text == "back"

        self.run(tmp_path, body, protocol_versions=(1,))

    def test_a_device_with_the_wrong_key_is_refused_as_a_security_event(self, tmp_path: Path) -> None:
        async def body(rig: Rig) -> None:
            await rig.drivers["display"].stop()
            log = EventLog()
            impostor_driver = make_driver(
                "display",
                "dealer_display",
                rig.table.url("display"),
                TEST_KEYS["sensors"],  # not the display's key
                device_id=rig.table.devices["display"].device_id,
                publish=log,
                timing=DriverTiming(
                    link=LinkTiming(TEST_TIME_SCALE), backoff_initial_s=0.02, backoff_max_s=0.1
                ),
                usb_backend=rig.table.usb_backend,
                sim_hub=rig.table.sim_hub,
            )
            impostor_driver.start()
            try:
                alert = await log.wait_for(SecurityEvent)
                assert alert.reason == "bad_tag"
                assert not log.of(DeviceReady)
                assert impostor_driver.state != "ready"
            finally:
                await impostor_driver.stop()

        self.run(tmp_path, body)

    def test_a_device_absent_at_start_is_retried_with_backoff_until_it_appears(self, tmp_path: Path) -> None:
        async def body(rig: Rig) -> None:
            await rig.drivers["display"].stop()
            port = rig.table.ports["display"]
            await port.unplug()
            log = EventLog()
            healths: list[DeviceHealth] = []
            attempts_seen = asyncio.Event()

            def on_health(health: DeviceHealth) -> None:
                healths.append(health)
                if health.connect_attempts >= 3 and health.state == "disconnected":
                    attempts_seen.set()

            driver = make_driver(
                "display",
                "dealer_display",
                rig.table.url("display"),
                TEST_KEYS["display"],
                publish=log,
                timing=DriverTiming(
                    link=LinkTiming(TEST_TIME_SCALE), backoff_initial_s=0.02, backoff_max_s=0.1
                ),
                usb_backend=rig.table.usb_backend,
                sim_hub=rig.table.sim_hub,
                on_health=on_health,
            )
            driver.start()
            try:
                async with asyncio.timeout(5):
                    await attempts_seen.wait()
                assert not log.events  # nothing to report while it was never there
                assert healths[-1].last_error
                assert driver._backoff.attempts >= 3  # each failure waited longer
                await port.plug()
                await driver.wait_ready(timeout_s=5)
                assert driver._backoff.attempts == 0  # reset by the good handshake
                assert log.of(DeviceReady)
                assert driver.health.reconnects == 0  # a first connection, however late
                assert [h.state for h in healths[:2]] == ["connecting", "disconnected"]
            finally:
                await driver.stop()

        self.run(tmp_path, body)

    def test_reset_clears_a_fault(self, tmp_path: Path) -> None:
        async def body(rig: Rig) -> None:
            shoe = rig.table.shuffler()
            shoe.open_door()
            await rig.log.wait_for(DeviceStatusChanged, lambda e: e.state == "fault")
            await rig.drivers["shuffler"].send(ResetDevice("shuffler"))
            await rig.log.wait_for(
                DeviceStatusChanged, lambda e: e.state == "ready", since=len(rig.log.events) - 1
            )
            await shuffle_and_verify(rig)

        self.run(tmp_path, body)


class TestPty(BackToBack):
    TRANSPORT = "pty"


class TestTcp(BackToBack):
    TRANSPORT = "tcp"


class TestUsb(BackToBack):
    TRANSPORT = "usb"


class TestSim(BackToBack):
    TRANSPORT = "sim"
