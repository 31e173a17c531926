"""Every scripted shuffler fault arrives at the domain as its event, end to end through a pty.

The shoe is the simulated firmware on a raw pseudo-terminal; the driver opens the pty with pyserial.
Whatever the fault, no card reaches the domain that did not leave the shoe at that place. The driver
reports what the shoe said; whether a count or a repeat is wrong is the engine deal part's judgment
(controller/engine/deal.py ``DealLedger``), applied here to what the driver reported.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from controller.engine.ledger import DealLedger
from drivers.events import (
    CardDealt,
    Deal,
    DeckVerified,
    DeviceLost,
    DeviceReady,
    DeviceStatusChanged,
    HandComplete,
    Shuffle,
    ShufflerFault,
)
from sim_devices.shuffler import PlannedFault
from tests.device_harness.leaks import run_async
from tests.device_harness.rig import Rig, table_rig

DEAL = ((1, 7), (2, 7), (3, 7), (4, 7), (5, 7), (6, 7), (0, 7))


def run_shoe(tmp_path: Path, body: Callable[[Rig], Awaitable[None]], **options: object) -> None:
    async def main() -> None:
        async with table_rig("pty", tmp_path / "run", names=("shuffler",), **options) as rig:  # type: ignore[arg-type]
            await body(rig)
            assert_cards_are_true(rig)

    run_async(main, timeout_s=30)


def assert_cards_are_true(rig: Rig) -> None:
    # Each place's first report is the card that left the shoe there (a later one is a resend).
    dealt = {(p, i): c for p, i, c in rig.table.shuffler().dealt}
    first: dict[tuple[int, int], int] = {}
    for card in rig.log.of(CardDealt):
        first.setdefault((card.position, card.index), card.card)
    for place, card_code in first.items():
        assert dealt.get(place) == card_code


def judged(rig: Rig, deal: tuple[tuple[int, int], ...]) -> list[ShufflerFault]:
    """The engine's deal ledger over the driver's reports, in order: the faults it finds."""
    ledger = DealLedger()
    ledger.start(dict(deal))
    faults: list[ShufflerFault] = []
    for event in rig.log.events:
        if isinstance(event, CardDealt):
            verdict = ledger.card(event)
        elif isinstance(event, HandComplete):
            verdict = ledger.hand_complete(event)[1]
        else:
            continue
        if verdict is not None:
            faults.append(verdict)
    return faults


async def shuffle(rig: Rig) -> DeckVerified:
    await rig.drivers["shuffler"].send(Shuffle("shuffler"))
    return (await rig.log.wait_count(DeckVerified, 1))[0]


def is_fault(kind: str, position: int | None = None) -> Callable[[ShufflerFault], bool]:
    return lambda e: e.fault == kind and (position is None or e.position == position)


@pytest.mark.parametrize(
    ("fault", "at_card", "position"),
    [("red_light", 10, 2), ("jam", 3, 1), ("misread", 30, 5), ("door_open", 48, 0)],
)
def test_a_mid_deal_fault_stops_the_deal_and_arrives_as_shuffler_fault(
    tmp_path: Path, fault: str, at_card: int, position: int
) -> None:
    async def body(rig: Rig) -> None:
        await shuffle(rig)
        rig.table.shuffler().plan_fault(PlannedFault(fault, at_card=at_card))  # type: ignore[arg-type]
        await rig.drivers["shuffler"].send(Deal("shuffler", DEAL))
        event = await rig.log.wait_for(ShufflerFault, is_fault(fault))
        assert event.position == position
        await rig.log.wait_for(DeviceStatusChanged, lambda e: e.state == "fault")
        assert len(rig.log.of(CardDealt)) == at_card  # the cards before the fault, and no more
        assert len(rig.log.of(HandComplete)) == at_card // 7

    run_shoe(tmp_path, body)


def test_red_light_during_the_shuffle(tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        rig.table.shuffler().plan_fault(PlannedFault("red_light", during_shuffle=True))
        await rig.drivers["shuffler"].send(Shuffle("shuffler"))
        event = await rig.log.wait_for(ShufflerFault, is_fault("red_light"))
        assert event.position is None
        assert not rig.log.of(DeckVerified)

    run_shoe(tmp_path, body)


def test_door_opened_between_rounds(tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        rig.table.shuffler().open_door()
        event = await rig.log.wait_for(ShufflerFault, is_fault("door_open"))
        assert event.position is None
        status = await rig.log.wait_for(DeviceStatusChanged, lambda e: e.state == "fault")
        assert status.lamp == "red"

    run_shoe(tmp_path, body)


@pytest.mark.parametrize(("kind", "dealt_there"), [("short", 6), ("extra", 8)])
def test_a_position_dealt_one_short_or_one_extra(tmp_path: Path, kind: str, dealt_there: int) -> None:
    async def body(rig: Rig) -> None:
        await shuffle(rig)
        rig.table.shuffler().plan_fault(PlannedFault(kind, position=3))  # type: ignore[arg-type]
        await rig.drivers["shuffler"].send(Deal("shuffler", DEAL))
        completes = await rig.log.wait_count(HandComplete, 7)
        assert {h.position: h.card_count for h in completes}[3] == dealt_there
        assert not rig.log.of(ShufflerFault)  # the driver reports; the deal part judges
        faults = judged(rig, DEAL)  # an extra card is its own fault, then the shoe's count
        assert [(f.fault, f.position) for f in faults] == [("card_count", 3)] * (1 if kind == "short" else 2)
        assert faults[-1].detail == f"dealt {dealt_there} cards, 7 requested"
        at_three = [c for c in rig.log.of(CardDealt) if c.position == 3]
        assert len(at_three) == dealt_there  # every card reported, each at its place
        assert len(rig.log.of(CardDealt)) == 48 if kind == "short" else 50

    run_shoe(tmp_path, body)


def test_a_card_dealt_twice_is_a_fault_and_never_a_second_copy(tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        await shuffle(rig)
        rig.table.shuffler().plan_fault(PlannedFault("dealt_twice", at_card=12))
        await rig.drivers["shuffler"].send(Deal("shuffler", DEAL))
        await rig.log.wait_count(HandComplete, 7)
        assert not rig.log.of(ShufflerFault)  # the driver reports; the deal part judges
        [fault] = judged(rig, DEAL)
        assert fault.fault == "misread"
        assert "dealt twice" in fault.detail
        cards = [c.card for c in rig.log.of(CardDealt)]
        assert (len(cards), len(set(cards))) == (49, 48)  # reported twice, bound once

    run_shoe(tmp_path, body)


@pytest.mark.parametrize(("missing", "count"), [(True, 51), (False, 53)])
def test_a_wrong_deck_count_arrives_as_an_incomplete_deck(tmp_path: Path, missing: bool, count: int) -> None:
    async def body(rig: Rig) -> None:
        rig.table.shuffler().plan_fault(
            PlannedFault("wrong_deck_count", during_shuffle=True, missing=missing)
        )
        verified = await shuffle(rig)
        assert not verified.complete
        assert verified.card_count == count
        assert len(verified.missing_cards if missing else verified.extra_cards) == 1

    run_shoe(tmp_path, body)


def test_going_silent_mid_deal_is_a_lost_device_and_the_deal_then_completes(tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        await shuffle(rig)
        window_s = rig.drivers["shuffler"].timing.link.heartbeat_window_s
        rig.table.shuffler().plan_fault(PlannedFault("silent", at_card=15, duration_s=3 * window_s))
        await rig.drivers["shuffler"].send(Deal("shuffler", DEAL))
        lost = await rig.log.wait_for(DeviceLost)
        assert lost.reason in ("heartbeat_missed", "no_ack")
        await rig.log.wait_count(DeviceReady, 2, timeout_s=10)
        await rig.log.wait_count(HandComplete, 7, timeout_s=10)
        assert [(c.position, c.index, c.card) for c in rig.log.of(CardDealt)] == rig.table.shuffler().dealt

    run_shoe(tmp_path, body)


def test_unplugged_is_a_lost_device_and_plugged_back_it_is_ready_again(tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        window_s = rig.drivers["shuffler"].timing.link.heartbeat_window_s
        unplug = rig.table.shuffler().spawn(rig.table.shuffler().unplug_for(2 * window_s), "unplug")
        lost = await rig.log.wait_for(DeviceLost)
        assert "line" in lost.reason or lost.reason == "heartbeat_missed"
        await unplug
        await rig.log.wait_count(DeviceReady, 2, timeout_s=10)
        assert (await shuffle(rig)).complete

    run_shoe(tmp_path, body)


def test_a_deal_the_shoe_refuses_while_in_fault_arrives_as_a_fault(tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        rig.table.shuffler().open_door()
        await rig.log.wait_for(DeviceStatusChanged, lambda e: e.state == "fault")
        await rig.drivers["shuffler"].send(Deal("shuffler", DEAL))
        refusal = await rig.log.wait_for(ShufflerFault, is_fault("other"))
        assert "reset first" in refusal.detail
        assert not rig.log.of(CardDealt)

    run_shoe(tmp_path, body)


def test_a_preset_deck_is_dealt_in_the_order_given_every_shuffle(tmp_path: Path) -> None:
    """The bench's test deck (preset_deck): after each shuffle the preset cards come out first, in order,
    then the rest of the deck; the shoe still reads back a complete deck."""
    top = [51, 0, 13, 26, 39, 7, 8]

    async def body(rig: Rig) -> None:
        with pytest.raises(ValueError, match="distinct cards"):
            rig.table.shuffler().preset_deck([1, 1])
        rig.table.shuffler().preset_deck(top)
        for rounds in (1, 2):
            await rig.drivers["shuffler"].send(Shuffle("shuffler"))
            verified = (await rig.log.wait_count(DeckVerified, rounds))[-1]
            assert verified.complete
            await rig.drivers["shuffler"].send(Deal("shuffler", ((3, 7), (0, 2))))
            cards = (await rig.log.wait_count(CardDealt, 9 * rounds))[-9:]
            assert [card.card for card in cards[:7]] == top
            assert {card.card for card in cards[7:]}.isdisjoint(top)
            await rig.log.wait_count(HandComplete, 2 * rounds)

    run_shoe(tmp_path, body)
