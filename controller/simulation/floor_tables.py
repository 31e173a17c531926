"""Simulated tables for the floor's demo and benchmark: the real round engine, a shoe that deals what
it is asked, simulated players (controller/engine/autoplay.py), each round's journal records appended
to the table's real journal file. No device, no pty: a floor of 500 tables runs in one process.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from controller.engine import JournalRecord, Output, TableConfig, TableEngine
from controller.engine import actions as a
from controller.engine.state import HOUSE, RecoveredState
from controller.journal.recovery import rebuild_state
from controller.journal.store import Journal
from controller.locale import DEFAULT_PROPERTY, PropertySettings
from controller.rules.games import CHASE_THE_FLUSH, GAMES, HIGH_CARD_FLUSH, TOP_FLUSH
from controller.simulation.autoplay import AutoPlayer, PlaceChips, PressKey
from drivers.events import BetChanged, CardDealt, Deal, DealerKey, DeckVerified, HandComplete, Shuffle

MIXED_GAMES = (HIGH_CARD_FLUSH, TOP_FLUSH, CHASE_THE_FLUSH)
_START_S = 1_800_000_000.0


@dataclass
class SimTable:
    """One table: its engine (rebuilt from its journal once, as the daemon does at start) and a shoe."""

    journal: Journal
    game: str
    rng: random.Random
    now_s: float = _START_S  # the simulated clock: 30 s a round (benches: a fixed start, reproducible)
    property_settings: PropertySettings = DEFAULT_PROPERTY
    # A wall clock to follow (the demo's, injected): each round starts at it, never earlier than the
    # last, so the rounds' ids and times are the day the demo runs, not a fixed date.
    clock: Callable[[], float] | None = None
    engine: TableEngine = field(init=False)
    _records: list[JournalRecord] = field(default_factory=list, init=False)
    _deck: list[int] = field(default_factory=list, init=False)
    _chips: set[tuple[int, str]] = field(default_factory=set, init=False)

    def __post_init__(self) -> None:
        if self.clock is not None:
            self.now_s = self.clock()  # the wall clock followed from the first round
        spec = GAMES[self.game]
        config = TableConfig(
            table_id=self.journal.table_id,
            game=self.game,
            banking_mode=HOUSE,
            seats=tuple(range(1, spec.max_players + 1)),
            property_settings=self.property_settings,
        )
        recovered = RecoveredState.from_table_state(rebuild_state(self.journal))
        self.engine = TableEngine(config, recovered)
        self._wagers = spec.wagers

    def _take(self, outputs: list[Output]) -> None:
        pending = list(outputs)
        while pending:
            output = pending.pop(0)
            if isinstance(output, JournalRecord):
                self._records.append(output)
            elif isinstance(output, Shuffle):
                self._deck = list(range(52))
                self.rng.shuffle(self._deck)
                pending.extend(self.engine.handle(DeckVerified("shuffler", 52, (), ()), self.now_s))
            elif isinstance(output, Deal):
                for position, count in output.positions:
                    for index in range(count):
                        card = self._deck.pop()
                        pending.extend(
                            self.engine.handle(CardDealt("shuffler", position, index, card), self.now_s)
                        )
                    pending.extend(self.engine.handle(HandComplete("shuffler", position, count), self.now_s))

    def play_round(self) -> int:
        """Play one round and journal it (one transaction); returns the entries appended."""
        engine = self.engine
        self.now_s = self.now_s + 30.0 if self.clock is None else max(self.now_s, self.clock())
        for fault_id in list(engine.view().latched):
            self._take(
                engine.handle(a.ClearFault(fault_id, "sim-supervisor", "simulated: checked"), self.now_s)
            )
        player = AutoPlayer(random.Random(self.rng.random()), walk_away_rate=0.0, over_limit_rate=0.0)
        self._take(engine.handle(a.StartRound(), self.now_s))
        spec = GAMES[self.game]
        seats = sorted(self.rng.sample(range(1, spec.max_players + 1), self.rng.randint(1, spec.max_players)))
        for seat in seats:
            ante = self.rng.choice((500, 1000, 2500))
            self._bet(seat, "ante", ante)
            if self.game == CHASE_THE_FLUSH:
                self._bet(seat, "xtra_bonus", ante)
        self._take(engine.handle(a.NoMoreBets(), self.now_s))
        for _ in range(200):  # bounded: a round has a few streets of a few seats
            view = engine.view()
            if view.state not in view.definition.decision_states:
                break
            actions = player.next_actions(view)
            for action in actions:
                if isinstance(action, PlaceChips):
                    self._bet(action.seat, action.wager, action.amount_cents, locked=True)
                elif isinstance(action, PressKey):
                    self._take(engine.handle(DealerKey("display", action.key, action.seat), self.now_s))
            if not actions:
                self.now_s += view.config.decision_timeout_s + 1
                self._take(engine.handle(a.Tick(), self.now_s))
        self._take(engine.handle(a.PayoutsDone(), self.now_s))
        # The dealer has paid and taken the chips: every spot reads empty again for the next round.
        for seat, wager in sorted(self._chips):
            self._bet(seat, wager, 0)
        self._chips.clear()
        records, self._records = self._records, []
        if records:
            self.journal.append_many(records)
        return len(records)

    def _bet(self, seat: int, wager: str, amount_cents: int, *, locked: bool = False) -> None:
        if amount_cents:
            self._chips.add((seat, wager))
        spot = self._wagers.index(wager)
        event = BetChanged("sensors", seat, spot, amount_cents, amount_cents // 100, locked)
        self._take(self.engine.handle(event, self.now_s))
