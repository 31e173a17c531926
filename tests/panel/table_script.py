"""A scripted round of the real round engine, written to a real journal step by step, and a small
journal-backed TableActions for the panel tests.

``ScriptedRound`` rebuilds the engine from the journal as the daemon does at start (the reducer's state,
tests/journal/scripted.py), plays one High Card Flush round on a stacked deck through the engine's own
entry points and domain events (tests/engine/table.py: a shoe, sensors and keys), and appends the
journal records the engine returned, in order, a step at a time: the panel sees what the engine really
writes, never an imitation of its entries. ``raise_red_light`` is the shoe's red light between rounds,
through the engine too.

``JournalTableActions`` stands in for the engine's operator actions (fault_cleared, button_moved, ...)
behind the panel's routes: a real object over the real journal, the one stand-in in these tests.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.engine import JournalRecord, TableConfig
from controller.engine import actions as engine_actions
from controller.engine.actions import (
    ClearFault,
    CloseTable,
    MoveButton,
    OpenTable,
    OperatorAction,
    SetLimits,
    SetPaytable,
    VoidRound,
)
from controller.engine.state import RecoveredState
from controller.journal import Journal
from controller.journal.recovery import rebuild_state
from controller.journal.state_parts import REVEAL_STATES
from controller.panel.backend import ActionRefused
from drivers.events import CardDealt, ShufflerFault
from tests.engine.table import Table, stack

HOLE_CARDS = {
    0: ["As", "Ks", "Qs", "2d", "3c", "4h", "5c"],
    1: ["Ah", "Kh", "Qh", "Jh", "2c", "3d", "4s"],
    2: ["9d", "8d", "7d", "2h", "3h", "6s", "Tc"],
    3: ["Jc", "Qc", "9c", "8c", "7c", "2s", "3s"],
}
# The dealer's 3-card spade flush A-K-Q qualifies; seats 1 and 3 beat it with 4- and 5-card flushes,
# seat 2's 3-card 9-high diamond flush loses. The engine deals the seats in order, then the dealer.
SEATS = [1, 2, 3]
ANTE_CENTS = 1000
STEPS = ("betting", "bets_locked", "dealt", "decisions", "reveal", "settled")


def all_cards() -> set[str]:
    return {card for cards in HOLE_CARDS.values() for card in cards}


def _table(journal: Journal) -> Table:
    """The engine as the daemon would start it on this journal, with the stacked deck; latched faults
    left by an earlier round cleared first by a scripted supervisor (journaled), as the floor would."""
    recovered = RecoveredState.from_table_state(rebuild_state(journal))
    config = TableConfig(table_id=journal.table_id)
    deck = stack(*(HOLE_CARDS[position] for position in [*SEATS, 0]))
    table = Table(config, deck, recovered)
    for fault_id in list(table.engine.view().latched):
        table.call(
            table.engine.handle,
            engine_actions.ClearFault(fault_id, "script-supervisor", "scripted: checked"),
            table.now_s,
        )
    return table


def _append(journal: Journal, records: Sequence[JournalRecord]) -> None:
    if records:
        journal.append_many(list(records))


@dataclass
class ScriptedRound:
    """One High Card Flush round played by the engine: every seat antes 10.00 and raises 10.00.

    ``red_light_at``: the shoe's red light with the n-th card dealt (the round dies mid-deal: steps
    ``betting``, ``bets_locked`` then ``dead``). ``after_deal``: shoe events sent once the deal is
    complete, before the decisions (a shoe re-reporting a card, say). ``wrong_count``: the count the
    shoe reports for a position's hand instead of the cards it dealt (a seat's: that hand is dead).
    ``first_raise``: a seat's first chips on the raise spot, corrected to 10.00 (over the limit: refused).
    ``bonuses``: the bonus wagers a seat places with its ante."""

    journal: Journal
    red_light_at: int | None = None
    after_deal: Sequence[object] = ()
    wrong_count: dict[int, int] = field(default_factory=dict)
    first_raise: dict[int, int] = field(default_factory=dict)  # a raise placed (and refused) before 10.00
    bonuses: dict[int, dict[str, int]] = field(default_factory=dict)  # a seat's bonus wagers, by name
    round_id: str = ""
    fault_ids: list[str] = field(default_factory=list)
    _records: list[JournalRecord] | None = None

    def records(self) -> list[JournalRecord]:
        """Every record the round writes (played once, on the journal as it stands at the first call)."""
        if self._records is None:
            self._records = self._play()
        return self._records

    def _play(self) -> list[JournalRecord]:
        table = _table(self.journal)
        engine = table.engine
        if self.red_light_at is not None:
            seen = {"cards": 0}
            at = self.red_light_at

            def red_light(position: int, index: int, card: int) -> list[object] | None:
                seen["cards"] += 1
                if seen["cards"] == at:
                    return [
                        CardDealt("shuffler", position, index, card),
                        ShufflerFault("shuffler", "red_light", position),
                    ]
                return [] if seen["cards"] > at else None  # the shoe deals no more after its red light

            table.tamper = red_light
        table.hand_complete_count.update(self.wrong_count)
        table.start()
        for seat in SEATS:
            table.bet(seat, "ante", ANTE_CENTS)
            for wager, cents in self.bonuses.get(seat, {}).items():
                table.bet(seat, wager, cents)
        table.lock()
        if self.red_light_at is None:
            for event in self.after_deal:
                table.event(event)
            for seat, cents in self.first_raise.items():
                table.bet(seat, "raise", cents, locked=True)
            for seat in SEATS:
                table.bet(seat, "raise", ANTE_CENTS, locked=True)
            table.key("confirm")
            table.call(engine.handle, engine_actions.PayoutsDone(), table.now_s)
        records = table.journal()
        self.round_id = next(r.round_id for r in records if r.kind == "round_started" and r.round_id)
        self.fault_ids = [str(r.payload["fault_id"]) for r in records if r.kind == "fault_raised"]
        return records

    def steps(self) -> Iterator[str]:
        """Append the round's records a step at a time; yields the step's name after each."""
        records = self.records()
        kinds = [r.kind for r in records]

        def after(kind: str) -> int:
            return max(i for i, k in enumerate(kinds) if k == kind) + 1

        def state_to(states: frozenset[str] | set[str]) -> int:
            return next(
                i for i, r in enumerate(records) if r.kind == "state_changed" and r.payload["to"] in states
            )

        cuts: list[tuple[str, int]] = [
            ("betting", state_to({"betting"}) + 1),
            ("bets_locked", after("bets_locked")),
        ]
        if self.red_light_at is not None:
            cuts.append(("dead", len(records)))
        else:
            cuts += [
                ("dealt", after("hand_complete")),
                ("decisions", state_to(set(REVEAL_STATES))),
                ("reveal", state_to({"reveal"}) + 1),
                ("settled", len(records)),
            ]
        done = 0
        for name, cut in cuts:
            _append(self.journal, records[done:cut])
            done = cut
            yield name

    def play_all(self) -> str:
        for _ in self.steps():
            pass
        return self.round_id


def raise_red_light(journal: Journal) -> str:
    """The shuffler's red light between rounds, through the engine: a latching fault, the table held.
    Returns the fault's id."""
    table = _table(journal)
    before = len(table.journal())
    table.event(ShufflerFault("shuffler", "red_light", None, "lamp"))
    records = table.journal()[before:]
    _append(journal, records)
    return next(str(r.payload["fault_id"]) for r in records if r.kind == "fault_raised")


class _StandInEngine:
    """What the change control asks of an engine: whether it is between rounds (always, here), and to
    handle the approved change's action (recorded in the stand-in's ``calls``)."""

    def __init__(self, actions: JournalTableActions) -> None:
        self.actions = actions

    def why_not_between_rounds(self) -> str | None:
        return None

    def handle(self, action: OperatorAction, _now_s: float) -> list[Any]:
        self.actions.calls.append(action)
        return []


class JournalTableActions:
    """TableActions over the journal: what the engine's actions write, for tests (see module doc).
    ``calls`` holds every action performed, in order."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.calls: list[OperatorAction] = []
        self.table_open = True

    def _write(self, kind: str, payload: dict[str, Any], by: str) -> None:
        self.journal.append(kind, payload, round_id=None, source=f"operator:{by}")

    async def perform(self, action: OperatorAction) -> None:
        self.calls.append(action)
        if isinstance(action, ClearFault):
            self.clear_fault(action.fault_id, action.by, action.reason)
        elif isinstance(action, VoidRound):
            raise ActionRefused("no round in progress to void")
        elif isinstance(action, MoveButton):
            payload = {"from_seat": None, "to_seat": action.seat, "reason": "supervisor", "by": action.by}
            self._write("button_moved", payload, action.by)
        elif isinstance(action, OpenTable):
            self.table_open = True
        elif isinstance(action, CloseTable):
            self._write("table_closed", {"by": action.by, "reason": action.reason}, action.by)
        elif not isinstance(action, SetLimits | SetPaytable):
            raise ActionRefused(f"{type(action).__name__}: not an action these tests perform")

    async def run(self, work: Any) -> list[Any]:
        """The change control's steps (controller/changes.py) on this stand-in: an approved change's
        engine action lands in ``calls``; the steps' own records are journaled."""
        outputs: list[Any] = work(_StandInEngine(self), time.time())
        for output in outputs:
            if isinstance(output, JournalRecord):
                self.journal.append(output.kind, output.entry, round_id=output.round_id, source=output.source)
        return outputs

    def clear_fault(self, fault_id: str, by: str, reason: str) -> None:
        """What the engine journals when a supervisor clears a fault (synchronous, for setting up)."""
        self._write("fault_cleared", {"fault_id": fault_id, "by": by, "reason": reason}, by)
        # The engine releases the hold once no latched fault is left.
        self.journal.append(
            "state_changed",
            {"machine": "round", "from": "held", "to": "idle", "trigger": "clear"},
            round_id=None,
            source="engine",
        )
