"""The Progressive wager at the table (the engine, stand-alone: its meter kept in its own journal):
the spot sensed like every spot, the unit checked at the lock, contributions and the jackpot lock at the
settlement, a meter award waiting for a supervisor, link lost refusing the wagers at the next lock, a
claim not answered asked again until it is, and a restart from the real journal restoring the meter."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from controller.engine import TableConfig, TableEngine, actions
from controller.journal import Journal
from controller.journal.state import TableState
from controller.progressive.controller import (
    ClaimAnswer,
    LinkState,
    ProgressiveController,
    ProgressiveUnavailable,
)
from controller.progressive.model import Hit, parse_parameters
from drivers.events import BetChanged, ShowText
from tests.engine.table import Table, recovered_state, stack

PARAMETERS = parse_parameters(
    {
        "unit_cents": 100,
        "base_cents": 100_000,
        "reset_cents": 100_000,
        "increment_percent": 20,
        "hidden_percent": 5,
    }
)
PROGRESSIVE_SPOT = 4  # after Top Flush's four wagers

SEVEN_CARD_SF = ["9h", "8h", "7h", "6h", "5h", "4h", "3h"]  # a 7-card straight flush: 100% of the meter
THREE_CARD_SF = ["Ac", "Kc", "Qc", "2d", "5s", "7d", "9s"]  # a 3-card run: 5 units, fixed
NOTHING = ["Ad", "Kh", "2c", "4d", "6c", "8d", "Ts"]
NOTHING_2 = ["Qh", "Jd", "3c", "5d", "7c", "9d", "Th"]
NOTHING_3 = ["Jh", "Td", "5c", "6d", "8c", "2s", "Qd"]
DEALER = ["As", "Ks", "Qs", "Js", "2h", "3d", "4c"]


def progressive_shown(engine: TableEngine) -> dict[str, Any]:
    """The progressive's part of what the table shows (this table offers the wager)."""
    view = engine.view()
    assert view.progressive_controller is not None
    assert view.progressive_parameters is not None
    state = view.progressive_controller.state
    return {
        "meter_cents": state.meter_cents if state.opened else view.progressive_parameters.settings.base_cents,
        "pending": [award.to_json() for award in state.pending()],
        # The claims waiting are the part's own (the table shows them as an alert).
        "waiting_claims": [claim.round_id for claim in engine._progressive.waiting],
        "meters": state.to_json(),
    }


def config() -> TableConfig:
    return TableConfig(game="top-flush", progressive=PARAMETERS)


def progressive(table: Table, seat: int, amount_cents: int) -> None:
    table.event(BetChanged("sensors", seat, PROGRESSIVE_SPOT, amount_cents, 1, False))


def play(table: Table, seats: dict[int, int]) -> None:
    """One round: every seat antes 5.00 and plays 5.00; ``seats`` the Progressive wager of each."""
    table.start()
    for seat in (1, 2, 3):
        table.bet(seat, "ante", 500)
        if seats.get(seat):
            progressive(table, seat, seats[seat])
    table.lock()
    for seat in (1, 2, 3):
        table.bet(seat, "play", 500)
    table.key("confirm")


def texts(table: Table) -> list[str]:
    return [out.text for out in table.of_type(ShowText)]


def test_a_jackpot_is_frozen_the_meter_re_seeds_and_the_award_waits_for_a_supervisor() -> None:
    table = Table(config(), stack(SEVEN_CARD_SF, THREE_CARD_SF, NOTHING, DEALER))
    play(table, {1: 100, 2: 100, 3: 100})
    assert "Place your bets · Progressive 1,000.00" in texts(table)  # the dealer's display shows the meter
    contribution = table.payload("progressive_contribution")
    assert contribution["wagers"] == 3
    assert contribution["to_meter_cents"] == 60
    claimed = [record.payload for record in table.journal("progressive_award_claimed")]
    # Settlement order at a house table: the highest seat first: seat 2's fixed award, then seat 1's jackpot.
    assert [(c["seat"], c["amount_cents"], c["paid_from"]) for c in claimed] == [
        (2, 500, "house"),
        (1, 100_060, "meter"),
    ]
    assert claimed[1]["needs_confirmation"] is True
    reset = table.payload("progressive_reset")
    assert reset["amount_cents"] == 100_000
    paid = [record.payload for record in table.journal("progressive_award_paid")]
    assert [p["award_id"] for p in paid] == [claimed[0]["award_id"]]  # the fixed award, in the round
    # The settlement says the same awards.
    settlement = table.payload("round_settled")["settlement"]
    assert settlement["progressive"]["awards"][1]["amount_cents"] == 100_060
    snapshot = progressive_shown(table.engine)
    assert snapshot["meter_cents"] == 100_000  # re-seeded at once
    assert [p["award_id"] for p in snapshot["pending"]] == [claimed[1]["award_id"]]
    assert any("Progressive seat 1: 1,000.60 pending a supervisor" in text for text in texts(table))
    # The round pays and closes meanwhile; the supervisor confirms afterwards.
    table.key("next")
    assert table.engine.view().state == "idle"
    award_id = claimed[1]["award_id"]
    table.event(actions.ConfirmProgressiveAward(award_id, by="sue"))
    (confirmed,) = [r for r in table.journal("progressive_award_paid") if r.payload["award_id"] == award_id]
    assert confirmed.source == "operator:sue"
    assert progressive_shown(table.engine)["pending"] == []
    # A second confirmation is refused: nothing is paid twice.
    outs = table.event(actions.ConfirmProgressiveAward(award_id, by="sue"))
    assert "already paid" in table.refusals(outs)[0].reason
    assert len(table.journal("progressive_award_paid")) == 2


def test_a_wrong_amount_on_the_progressive_spot_refuses_the_lock() -> None:
    table = Table(config(), stack(NOTHING, DEALER))
    table.start()
    table.bet(1, "ante", 500)
    progressive(table, 1, 500)
    outs = table.lock()
    (refusal,) = table.refusals(outs)
    assert refusal.reason == (
        "seat 1 progressive: must be exactly the unit (1.00), not 5.00 "
        "(the Progressive wager is a fixed amount)"
    )
    assert table.engine.view().state == "betting"
    progressive(table, 1, 100)
    table.lock()
    assert table.engine.view().state != "betting"
    assert table.payload("bets_locked")["wagers"]["1"] == {"ante": 500, "progressive": 100}


class LinkAsTold(ProgressiveController):
    """The stand-alone controller whose link is as the test says (``link``): a stand-in for a linked
    table's client losing its link (the real one is the floor's link client)."""

    link = LinkState(True)

    def link_state(self) -> LinkState:
        return self.link


def test_with_the_link_lost_the_wagers_are_refused_at_the_lock_and_taken_again_after() -> None:
    table = Table(config(), stack(NOTHING, THREE_CARD_SF, NOTHING_2, DEALER))
    standalone = table.engine.view().progressive_controller
    assert isinstance(standalone, ProgressiveController)
    controller = LinkAsTold(standalone.store, state=standalone.state)
    controller.link = LinkState(False, "no meter broadcast for 5 s")
    table.engine.set_progressive_controller(controller)
    play(table, {1: 100})
    assert table.payload("bets_locked")["wagers"]["1"] == {"ante": 500}  # refused, the round plays
    assert any("Progressive closed: no meter broadcast for 5 s" in text for text in texts(table))
    assert table.journal("progressive_contribution") == []
    assert not [a for a in table.alerts() if a.kind == "past_posting"]  # the chips stay until returned
    table.key("next")
    controller.link = LinkState(True)
    for seat in (1, 2, 3):  # the dealer collects and pays: the felt is clear
        for spot in range(PROGRESSIVE_SPOT + 1):
            table.event(BetChanged("sensors", seat, spot, 0, 0, False))
    table.deck = stack(NOTHING, NOTHING_2, NOTHING_3, DEALER)
    table.next_card = 0
    play(table, {1: 100})
    assert len(table.journal("progressive_contribution")) == 1


class LinkDown(ProgressiveController):
    """The stand-alone controller whose claims cannot be answered while ``down``: a stand-in for a
    linked table's client with its link lost (the real one is the floor's link client)."""

    down = True

    def claim_now(
        self, table_id: str, round_id: str, hits: Sequence[Hit], *, by: str = "engine"
    ) -> ClaimAnswer:
        if self.down:
            raise ProgressiveUnavailable("the claim could not reach the controller")
        return super().claim_now(table_id, round_id, hits, by=by)


def test_a_claim_not_answered_is_asked_again_and_paid_once() -> None:
    table = Table(config(), stack(NOTHING, THREE_CARD_SF, NOTHING_2, DEALER))
    standalone = table.engine.view().progressive_controller
    assert isinstance(standalone, ProgressiveController)
    controller = LinkDown(standalone.store, state=standalone.state)
    table.engine.set_progressive_controller(controller)
    play(table, {2: 100})
    assert table.journal("progressive_award_claimed") == []
    assert progressive_shown(table.engine)["waiting_claims"] != []
    table.tick(1)
    assert table.journal("progressive_award_claimed") == []
    controller.down = False
    table.tick(1)
    table.tick(1)
    assert len(table.journal("progressive_award_claimed")) == 1
    assert len(table.journal("progressive_award_paid")) == 1  # a fixed award: paid once, in the end
    assert len(table.journal("progressive_contribution")) == 1


def test_a_restart_from_the_real_journal_restores_the_meter(tmp_path: Path) -> None:
    table = Table(config(), stack(SEVEN_CARD_SF, THREE_CARD_SF, NOTHING, DEALER))
    play(table, {1: 100, 2: 100})
    with Journal.open(tmp_path / "journal.sqlite", "T1", synchronous="OFF") as journal:
        journal.append_many(table.journal())
        state = TableState("T1").apply_all(journal.replay())
    assert state.progressive.equations_hold()
    before = progressive_shown(table.engine)
    from controller.engine.state import RecoveredState

    again = Table(config(), stack(NOTHING, DEALER), RecoveredState.from_table_state(state))
    after = progressive_shown(again.engine)
    assert after["meter_cents"] == before["meter_cents"] == 100_000
    assert after["pending"] == before["pending"]
    assert after["meters"] == before["meters"]


@pytest.mark.parametrize("amount", [1, 99, 101, 200])
def test_only_the_unit_is_taken_on_the_spot(amount: int) -> None:
    table = Table(config(), stack(NOTHING, DEALER))
    table.start()
    table.bet(1, "ante", 500)
    progressive(table, 1, amount)
    outs = table.lock()
    assert "must be exactly the unit (1.00)" in table.refusals(outs)[0].reason


def test_a_managers_change_of_parameters_is_taken_between_rounds_only() -> None:
    table = Table(config(), stack(NOTHING, NOTHING_2, NOTHING_3, DEALER))
    new = {**PARAMETERS.to_json(), "unit_cents": 200, "increment_percent": 10}
    table.start()  # betting open: no change (the lock would check the old unit)
    outs = table.event(actions.SetProgressiveParameters(new, by="mia", role="manager"))
    assert table.refusals(outs)[0].reason == (
        "progressive: parameters change only between rounds; a round is in play"
    )
    table.event(actions.VoidRound("no players", by="sue"))
    outs = table.event(actions.SetProgressiveParameters(new, by="sam", role="supervisor"))
    assert "only a manager changes" in table.refusals(outs)[0].reason
    outs = table.event(actions.SetProgressiveParameters({**new, "reset_cents": 5}, by="mia", role="manager"))
    assert "is below the base" in table.refusals(outs)[0].reason
    table.event(actions.SetProgressiveParameters(new, by="mia", role="manager"))
    changed = table.journal("progressive_parameters_changed")[-1]
    assert changed.source == "operator:mia"
    assert changed.payload["after"]["unit_cents"] == 200
    # The next round takes the new unit at the lock, and refuses the old one.
    table.start()
    table.bet(1, "ante", 500)
    progressive(table, 1, 100)
    assert "must be exactly the unit (2.00), not 1.00" in table.refusals(table.lock())[0].reason


def test_a_new_files_parameters_the_meter_refuses_are_an_alert_not_a_fault() -> None:
    """A restart with a file whose limit is below the meter as it stands: said once, the meter keeps
    its parameters, the table plays on (no latched fault)."""
    table = Table(config(), stack(NOTHING, NOTHING_2, NOTHING_3, DEALER))
    play(table, {1: 100, 2: 100, 3: 100})  # the meter at 1,000.60
    recovered = recovered_state(table.engine)
    lower = parse_parameters({**PARAMETERS.to_json(), "limit_cents": 100_010})
    again = Table(TableConfig(game="top-flush", progressive=lower), stack(NOTHING, DEALER), recovered)
    again.start()
    (alert,) = [a for a in again.alerts() if a.kind == "progressive_parameters_refused"]
    assert "100010 is below the meter as it stands (100060)" in alert.message
    assert not again.engine.view().held
    assert again.engine.view().progressive_parameters == PARAMETERS
