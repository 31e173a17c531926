"""A shoe's HandComplete for a position the deal step in progress does not include (the deal's ledger
lets it stand: it checks counts, not places): a wrong count when the round deals to the position at a
later step, an integrity fault, the round going on, when the position is not in the round at all."""

from __future__ import annotations

from controller.engine import TableConfig
from drivers.events import COMMUNITY_POSITION, CardDealt, HandComplete
from tests.engine.table import Table, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3, chase_table


def _hand_complete_before_first_card(table: Table, position: int, card_count: int) -> None:
    """The shoe says ``position`` is complete just before it deals the first card of the round."""

    def early(at_position: int, index: int, card: int) -> list[object] | None:
        if index == 0 and table.next_card == 1:
            return [
                HandComplete("shuffler", position, card_count),
                CardDealt("shuffler", at_position, 0, card),
            ]
        return None

    table.tamper = early


def test_hand_complete_for_a_seat_not_in_the_round_is_an_integrity_fault_and_the_round_goes_on() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    _hand_complete_before_first_card(table, 5, 7)
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 1000)
    table.lock()
    assert table.payload("fault_raised") == {
        "fault_id": "FT1-000001",
        "kind": "integrity",
        "severity": "alert",
        "device": "shuffler",
        "reason": {
            "code": "engine_error",
            "message": "hand complete for position 5, which is not in the round",
        },
        "by": None,
    }
    assert table.journal("dead_hand") == []
    assert table.engine.view().state == "decisions"
    assert not table.engine.view().held


def test_hand_complete_for_the_community_during_the_hole_cards_kills_the_round() -> None:
    table = chase_table()
    _hand_complete_before_first_card(table, COMMUNITY_POSITION, 2)
    table.start()
    for seat in (1, 2):
        table.bet(seat, "ante", 500)
        table.bet(seat, "xtra_bonus", 500)
    table.lock()
    reason = {
        "code": "card_count",
        "message": "wrong card count for the community: hand complete for a position not in this deal",
    }
    assert table.payload("round_dead")["reason"] == reason
    fault = table.payload("fault_raised")  # the dead round's fault, and no integrity fault beside it
    assert (fault["kind"], fault["severity"]) == ("dead_hand", "latching")
