"""The stand-alone progressive end to end: the real daemon on its simulated devices over
pseudo-terminals (the shoe's preset deck forces a 7-card straight flush to the first seat dealt, every
round, and the cards after it follow in deck order: several seats hit in one round, two of them the
100% level, sharing it), simulated players putting the unit on the progressive spot, and a supervisor
confirming each pending award through the daemon's queue (the panel's path). Afterwards the real
journal: every award paid exactly once, after the confirmation, in the order recorded; the in-meter
equals the locked Progressive wagers; the meter equations hold; and a restart restores the same meter."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from controller.daemon import QueuedTableActions
from controller.engine import actions as a
from controller.errors import UserError
from controller.journal import Journal
from controller.journal.state import TableState
from controller.journal.verify import verify_chain
from controller.rules.cards import parse_card
from controller.simulation.table import SimulatedTable
from sim_devices.table import SimTable
from tests.daemon.harness import DEVICES_TOML, HOUSE_LIMITS_TOML, PROGRESSIVE_TOML, run_daemon, table_toml

# No limit_cents: the meter uncapped, so every forced hit pays its whole level.
TABLE = table_toml("TF9", "top-flush", 6) + HOUSE_LIMITS_TOML + PROGRESSIVE_TOML
SEVEN_CARD_SF = ("9h", "8h", "7h", "6h", "5h", "4h", "3h")  # the first seat dealt: the 100% level
ROUNDS = 5
WAIT_S = 30.0


def test_a_simulated_table_pays_each_forced_jackpot_once_after_a_supervisor_confirms(tmp_path: Path) -> None:
    journal_path = tmp_path / "journal.sqlite"
    config_path = tmp_path / "table.toml"
    config_path.write_text(TABLE + f'\n[journal]\npath = "{journal_path}"\n' + DEVICES_TOML, encoding="utf-8")
    seen: dict[str, Any] = {"confirmed": [], "refused_again": []}

    async def stack_the_shoe(table: SimulatedTable) -> None:
        devices = table.devices
        assert isinstance(devices, SimTable)
        devices.shuffler().preset_deck([parse_card(card) for card in SEVEN_CARD_SF])

    async def supervisor(table: SimulatedTable) -> None:
        """Confirms each pending award once it shows on the table, then tries again (refused)."""
        actions = QueuedTableActions(table.daemon)
        loop = asyncio.get_running_loop()
        while True:
            controller = table.daemon.engine.view().progressive_controller
            for award in controller.state.pending() if controller is not None else []:
                award_id = award.claimed.award_id
                await actions.perform(a.ConfirmProgressiveAward(award_id, by="sam"))
                seen["confirmed"].append(award_id)
                with contextlib.suppress(UserError):
                    await actions.perform(a.ConfirmProgressiveAward(award_id, by="sam"))
                    seen["refused_again"].append(f"{award_id} was taken twice")
            deadline = loop.time() + 0.05
            while loop.time() < deadline:  # the table's own pace: look again at its next change
                await asyncio.sleep(0.01)

    run_daemon(
        config_path,
        journal_path,
        rounds=ROUNDS,
        seed=23,
        companions=[stack_the_shoe, supervisor],
        timeout_s=120.0,
    )
    with Journal.open_existing(journal_path) as journal:
        stored = list(journal.entries())
        state = TableState("TF9").apply_all(journal.replay())
    assert verify_chain(journal_path).ok
    kinds = [entry.kind for entry in stored]
    claimed = [entry.payload for entry in stored if entry.kind == "progressive_award_claimed"]
    paid = [entry for entry in stored if entry.kind == "progressive_award_paid"]
    jackpots = [c for c in claimed if c["paid_from"] == "meter"]
    assert jackpots, "the preset deck forces a 7-card straight flush: some round must have hit it"
    # Every award paid exactly once; each meter award after the supervisor's confirmation, by them.
    paid_ids = [entry.payload["award_id"] for entry in paid]
    pending_ids = {award_id for award_id, award in state.progressive.awards.items() if award.pending}
    assert sorted(paid_ids) == sorted({c["award_id"] for c in claimed} - pending_ids)
    # What still waits is what the supervisor had not confirmed when the table stopped after its last
    # round (on a loaded machine that may be more than the last round's: the supervisor looks at the
    # table's pace, not the rounds'); at least one jackpot went through the confirmation.
    assert pending_ids.isdisjoint(seen["confirmed"])
    assert seen["confirmed"], "no jackpot was confirmed while the table played"
    assert len(paid_ids) == len(set(paid_ids))
    for jackpot in (j for j in jackpots if j["award_id"] not in pending_ids):
        (payment,) = [entry for entry in paid if entry.payload["award_id"] == jackpot["award_id"]]
        assert payment.source == "operator:sam"
        claim_seq = next(
            e.seq
            for e in stored
            if e.kind == "progressive_award_claimed" and e.payload["award_id"] == jackpot["award_id"]
        )
        assert payment.seq > claim_seq
    assert seen["refused_again"] == []
    # Confirmed, and so paid, in the order the controller recorded the awards.
    # (Read from the journal: the supervisor's own list can miss the last confirmation it made as the
    # table stopped and cancelled it between the commit and its note.)
    paid_jackpots = [award_id for award_id in paid_ids if award_id in {j["award_id"] for j in jackpots}]
    assert paid_jackpots == [j["award_id"] for j in jackpots if j["award_id"] not in pending_ids]
    assert set(seen["confirmed"]) <= set(paid_jackpots)
    # The table's settlement and the controller's claims agree, award by award, in the same order.
    for entry in stored:
        if entry.kind == "round_settled" and entry.payload["settlement"].get("progressive"):
            awards = entry.payload["settlement"]["progressive"]["awards"]
            of_round = [c for c in claimed if c["round_id"] == entry.round_id]
            assert [(x["seat"], x["amount_cents"]) for x in awards] == [
                (c["seat"], c["amount_cents"]) for c in of_round
            ]
    # The order recorded: claim numbers 1, 2, ... in journal order.
    assert [c["claim_number"] for c in claimed] == list(range(1, len(claimed) + 1))
    # The in-meter equals the journal's locked Progressive wagers of the settled rounds.
    settled_rounds = {entry.round_id for entry in stored if entry.kind == "round_settled"}
    locked_units = sum(
        1
        for entry in stored
        if entry.kind == "bets_locked" and entry.round_id in settled_rounds
        for wagers in entry.payload["wagers"].values()
        if wagers.get("progressive")
    )
    assert state.progressive.wagers == locked_units
    assert state.progressive.in_meter_cents == 100 * locked_units
    assert kinds.count("progressive_contribution") == len(
        {
            e.round_id
            for e in stored
            if e.kind == "bets_locked"
            and e.round_id in settled_rounds
            and any(w.get("progressive") for w in e.payload["wagers"].values())
        }
    )
    assert state.progressive.equations_hold()
    assert state.progressive.resets == len({(c["round_id"]) for c in jackpots})
    # A restart: the daemon's recovery folds the same meter from the same file.
    with Journal.open_existing(journal_path) as journal:
        again = TableState("TF9").apply_all(journal.replay())
    assert again.progressive == state.progressive
