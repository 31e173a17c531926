"""Releasing a held table: clearing its last latched fault resets every device left in fault (the shoe
after its red light), before the fresh shuffle; a clearing journaled by another process (`flushtable
clear` while the daemon runs) is adopted without a second entry. Each from an event script, checked by
the journal entries and commands it leaves."""

from __future__ import annotations

from controller.engine import TableConfig, actions
from controller.journal import entries
from drivers.events import DeviceStatusChanged, ResetDevice, ShufflerFault
from tests.engine.table import Table, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3
from tests.engine.test_table_behaviour import bet_and_lock


def red_light_table() -> Table:
    """A round killed by the shoe's red light during the deal, the shoe reporting itself in fault."""
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    stopped: list[bool] = []

    def tamper(position: int, index: int, card: int) -> list[object] | None:
        if stopped:
            return []  # the shoe deals nothing more after its red light
        if (position, index) != (3, 0):
            return None
        stopped.append(True)
        return [
            DeviceStatusChanged("shuffler", "fault", 3, "red"),
            ShufflerFault("shuffler", "red_light", position, "lamp"),
        ]

    table.tamper = tamper
    bet_and_lock(table)
    assert table.engine.view().state == "held"
    assert table.engine._faults.device_health["shuffler"] == "fault"
    return table


def test_clearing_the_last_fault_resets_the_shoe_left_in_fault() -> None:
    table = red_light_table()
    (fault_id,) = table.engine.view().latched
    outputs = table.call(
        table.engine.handle, actions.ClearFault(fault_id, "sue", "jam cleared, shoe checked"), table.now_s
    )
    assert table.of_type(ResetDevice, outputs) == [ResetDevice("shuffler")]
    reset = [record.entry for record in table.journal("device_reset")]
    assert reset == [
        entries.DeviceReset(device="shuffler", by="sue", reason="in fault when its table was released")
    ]
    assert table.engine.view().state == "idle"
    # The shoe's own report that it is ready again lets the next round start.
    refused = table.start()
    assert "device(s) not ready: shuffler" in table.refusals(refused)[0].reason
    table.event(DeviceStatusChanged("shuffler", "ready", 0, "green"))
    table.start()
    assert table.engine.view().state == "betting"


def test_a_device_that_is_not_in_fault_is_not_reset() -> None:
    table = red_light_table()
    table.event(DeviceStatusChanged("shuffler", "ready", 0, "green"))  # reset by hand on the shoe
    (fault_id,) = table.engine.view().latched
    outputs = table.call(table.engine.handle, actions.ClearFault(fault_id, "sue", "checked"), table.now_s)
    assert table.of_type(ResetDevice, outputs) == []
    assert table.journal("device_reset") == []


def test_no_reset_while_another_latched_fault_still_holds_the_table() -> None:
    table = red_light_table()
    table.event(ShufflerFault("shuffler", "door_open", None, "door"))  # a second latched fault
    first, second = sorted(table.engine.view().latched)
    outputs = table.call(table.engine.handle, actions.ClearFault(first, "sue", "checked"), table.now_s)
    assert table.of_type(ResetDevice, outputs) == []
    assert table.engine.view().held
    outputs = table.call(table.engine.handle, actions.ClearFault(second, "sue", "door closed"), table.now_s)
    assert table.of_type(ResetDevice, outputs) == [ResetDevice("shuffler")]


def test_a_clearing_journaled_elsewhere_is_adopted_without_a_second_entry() -> None:
    table = red_light_table()
    (fault_id,) = table.engine.view().latched
    outputs = table.call(
        table.engine.handle, actions.AdoptClear(fault_id, "sue", "from the command line"), table.now_s
    )
    assert table.journal("fault_cleared") == []  # `flushtable clear` wrote it already
    assert not table.engine.view().held
    assert table.engine.view().state == "idle"
    assert table.of_type(ResetDevice, outputs) == [ResetDevice("shuffler")]
    # Adopting it again (the daemon's watch saw it twice, or the panel cleared it first): nothing.
    assert table.call(table.engine.handle, actions.AdoptClear(fault_id, "sue", "again"), table.now_s) == []
    assert table.refusals() == []
