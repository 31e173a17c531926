"""The shoe reporting a card it already dealt once more (sim_devices/shuffler.py ``resend_card``, the
scenario action ``resend``), after the deal. The link delivers every message exactly once, so a second
report of a place is the shoe's own doing: the same card there is a fault ("reported twice"), another
card there a misread - and neither is ever bound as a card of the deal. The driver passes both on as
the shoe reported them; the engine's deal part judges them (controller/engine/deal.py ``DealLedger``).
(Before v2 the driver dropped the same card silently, as a possible resend after a reconnect; that
filter is gone.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from drivers.events import CardDealt, Deal, HandComplete, ShufflerFault
from sim_devices.scenario import ScenarioError, parse_scenario
from sim_devices.shuffler import SimulatedShuffler
from tests.device_harness.rig import Rig
from tests.sim.test_shuffler_faults import DEAL, judged, run_shoe, shuffle


def test_a_card_resent_after_the_deal_is_a_repeat_or_a_misread(tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        await shuffle(rig)
        await rig.drivers["shuffler"].send(Deal("shuffler", DEAL))
        await rig.log.wait_count(HandComplete, 7)
        shoe = rig.table.shuffler()
        dealt = {(position, index): card for position, index, card in shoe.dealt}
        assert shoe.resend_card(2, 3) == dealt[(2, 3)]
        assert shoe.resend_card(1, 0, misread=True) == (dealt[(1, 0)] + 1) % 52
        await rig.log.wait_count(CardDealt, 51)  # both reports arrive, as the shoe made them
        assert not rig.log.of(ShufflerFault)  # the driver reports; the deal part judges
        misread = (dealt[(1, 0)] + 1) % 52
        [repeat, fault] = judged(rig, DEAL)  # in the order the shoe reported them
        assert (repeat.fault, repeat.position, repeat.index) == ("misread", 2, 3)
        assert repeat.detail == "index 3 reported twice"
        assert (fault.fault, fault.position) == ("misread", 1)
        assert fault.detail == f"index 0 reported as card {dealt[(1, 0)]} and then as card {misread}"
        with pytest.raises(ValueError, match="no card dealt at position 3 index 9"):
            shoe.resend_card(3, 9)

    run_shoe(tmp_path, body)


def test_the_resend_step_is_checked_whole() -> None:
    table = {"shuffler": SimulatedShuffler}
    step = '[[step]]\nat_s = 0\ndevice = "shuffler"\naction = "resend"\nposition = 1\n'
    scenario = parse_scenario(step + "index = 0\nmisread = true\n", source="s.toml", device_kinds=table)
    assert dict(scenario.steps[0].fields) == {"position": 1, "index": 0, "misread": True}
    with pytest.raises(ScenarioError, match=r"step\[1\]\.index: missing"):
        parse_scenario(step, source="s.toml", device_kinds=table)
    with pytest.raises(ScenarioError, match=r"step\[1\]\.misread: must be true or false"):
        parse_scenario(step + "index = 0\nmisread = 1\n", source="s.toml", device_kinds=table)
