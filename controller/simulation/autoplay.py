"""Simulated players and dealer for a simulated table (`flushtable run --autoplay`, tests, benchmarks).

``AutoPlayer.next_actions(view)`` looks at the table and says what the people at it do next: players
put chips on spots (``PlaceChips``: the harness, controller/simulation/table.py, turns it into chips on
the simulated bet sensors, which then report ``BetChanged`` like real ones), the dealer presses keys
(``PressKey``: the simulated display's keys, which report ``DealerKey``), the designated player accepts
or waives the button (operator actions from controller/engine/actions.py, put on the daemon's queue).
It never touches the engine's state itself.

Players decide from their own cards only (``engine.private_snapshot`` gives them; a player at a real
table sees their own hand): a simple, legal strategy, with an occasional walk-away (no action: the
decision timeout folds or checks) and an occasional over-limit raise corrected on the next call, so
the table's refusal and correction paths run in every long simulation.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.engine import TableView
from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.round import LIVE
from controller.engine.state import DESIGNATED_PLAYER
from controller.rules.games import CHASE_THE_FLUSH, STREETS, decision_limits
from controller.rules.hands import evaluate
from controller.rules.progressive import PROGRESSIVE
from controller.simulated_players import chase_all_in_street, raise_or_fold
from drivers.events import BetChanged, DealerKey, DealerKeyName


@dataclass(frozen=True, slots=True)
class PlaceChips:
    """A player makes the chips on ``seat``'s ``spot`` (the wager ``wager``) amount to ``amount_cents``."""

    seat: int
    spot: int
    wager: str
    amount_cents: int


@dataclass(frozen=True, slots=True)
class PressKey:
    key: DealerKeyName
    seat: int | None = None


AutoAction = PlaceChips | PressKey | a.OperatorAction


@dataclass(slots=True)
class AutoPlayer:
    """What the simulated people at the table do next. ``rng`` makes a run reproducible."""

    rng: random.Random
    ante_choices_cents: Sequence[int] = (500, 1000, 2500)
    seat_join_rate: float = 0.8
    bonus_rate: float = 0.3
    walk_away_rate: float = 0.03
    over_limit_rate: float = 0.03
    dp_waive_rate: float = 0.2
    dp_funds_cents: int = 500_000
    progressive_rate: float = 0.6  # where the table offers it: the share of seats that play it
    _acted: set[tuple[str, str, int]] = field(default_factory=set)  # (round, street, seat) already acted
    _round_key: str = ""

    def next_actions(self, view: TableView) -> list[AutoAction]:
        state = view.state
        if state == m.IDLE:
            return self._idle(view)
        if state == m.BETTING:
            return self._betting(view)
        if state in view.definition.decision_states:
            return self._decide(view)
        if state == m.PAYING:
            return [*self._clear_chips(view), PressKey("next")]
        live = view.round
        if state == m.HELD and live is not None and live.closed:
            return self._clear_chips(view)  # a dead or voided round: the dealer returns the chips
        if state == m.HELD:
            # Past posting: the dealer puts each spot back as locked, so the supervisor's clear is taken.
            return [
                PlaceChips(seat, spot, wager, held_cents)
                for seat, spot, wager, held_cents in view.past_posted_spots
                if wager in view.spot_wagers and view.spots.get((seat, spot), 0) != held_cents
            ]
        return []

    # --- idle: the button, then the next round ------------------------------------------------
    def _idle(self, view: TableView) -> list[AutoAction]:
        leftovers = self._clear_chips(view)
        if leftovers:
            return leftovers
        if view.config.banking_mode == DESIGNATED_PLAYER and view.dp_seat is None and not view.house_banks:
            if view.dp_offer_seat is None:
                return []  # nobody accepted: a supervisor must move the button
            if self.rng.random() < self.dp_waive_rate:
                return [a.DpWaives()]
            return [a.DpAccepts(self.dp_funds_cents)]
        return [PressKey("next")]

    # --- betting ------------------------------------------------------------------------------------
    def _betting(self, view: TableView) -> list[AutoAction]:
        wagers = view.spot_wagers
        if any(amount for amount in view.spots.values()):
            return [PressKey("confirm")]  # chips are down: no more bets
        players = [seat for seat in view.config.seats if seat != view.dp_seat]
        self.rng.shuffle(players)
        joining = [seat for seat in players if self.rng.random() < self.seat_join_rate]
        joining = sorted(joining[: view.spec.max_players]) or sorted(players[:1])
        out: list[AutoAction] = []
        for seat in joining:
            ante = self.rng.choice(list(self.ante_choices_cents))
            ante = min(max(ante, view.config.min_ante_cents), view.config.max_ante_cents)
            out.append(PlaceChips(seat, 0, "ante", ante))
            for spot, wager in enumerate(wagers):
                if wager == "xtra_bonus":
                    out.append(PlaceChips(seat, spot, wager, ante))  # required, equal to the ante
                elif wager in view.spec.bonus_wagers and self.rng.random() < self.bonus_rate:
                    out.append(PlaceChips(seat, spot, wager, max(ante // 5, 100)))
                elif wager == PROGRESSIVE and self.rng.random() < self.progressive_rate:
                    parameters = view.progressive_parameters
                    assert parameters is not None  # the wager is a spot: the table offers it
                    unit = parameters.settings.unit_cents
                    out.append(PlaceChips(seat, spot, wager, unit))  # always the unit: a fixed amount
        return out

    # --- decisions ------------------------------------------------------------------------------
    def _decide(self, view: TableView) -> list[AutoAction]:  # noqa: PLR0912 - one branch per decision phase of the three games
        live = view.round
        if live is None or live.street is None:
            return []
        street = live.street
        if live.round_id != self._round_key:  # a new round: forget the last one's decisions
            self._round_key = live.round_id
            self._acted.clear()
        spot = view.spec.wagers.index(view.spec.decision_wager)
        chase = view.config.game == CHASE_THE_FLUSH
        out: list[AutoAction] = []
        waiting_for_timeout = False
        for number, play in sorted(live.seats.items()):
            if play.status != LIVE or not play.covered or play.decided:
                continue
            key = (live.round_id, street, number)
            if play.pending_refused:
                # Told the raise is over the limit: correct it to the most allowed.
                _low, high = self._limits(view, number)
                out.append(PlaceChips(number, spot, view.spec.decision_wager, high))
                continue
            if key in self._acted:
                if play.pending_cents == 0 and not (chase and street != m.RIVER):
                    waiting_for_timeout = True  # walked away
                continue
            self._acted.add(key)
            if self.rng.random() < self.walk_away_rate:
                waiting_for_timeout = True
                continue
            _low, high = self._limits(view, number)
            # The same simple strategy as the demonstration's players (controller/simulated_players.py),
            # deciding from what this player can see: their own cards and the community cards dealt.
            if chase:
                all_in_street = chase_all_in_street(play.cards, live.community)
                if all_in_street is not None and STREETS.index(all_in_street) <= STREETS.index(street):
                    out.append(PlaceChips(number, spot, view.spec.decision_wager, high))
                elif street == m.RIVER:
                    out.append(PressKey("fold_seat", number))
                continue
            raise_cents = raise_or_fold(view.config.game, evaluate(play.cards), play.wagers["ante"])
            if raise_cents is None:
                out.append(PressKey("fold_seat", number))
                continue
            amount = raise_cents
            if self.rng.random() < self.over_limit_rate:
                amount = high + play.wagers["ante"]  # a mistake the table must catch
            out.append(PlaceChips(number, spot, view.spec.decision_wager, amount))
        if not out and not waiting_for_timeout:
            out.append(PressKey("confirm"))
        return out

    @staticmethod
    def _limits(view: TableView, seat: int) -> tuple[int, int]:
        live = view.round
        assert live is not None
        play = live.seats[seat]
        street = live.street if view.config.game == CHASE_THE_FLUSH else None
        hand = evaluate([*play.cards, *live.community])
        return decision_limits(view.config.game, hand, play.wagers["ante"], street)

    # --- chips off the table -------------------------------------------------------------------------
    @staticmethod
    def _clear_chips(view: TableView) -> list[AutoAction]:
        wagers = view.spot_wagers
        return [
            PlaceChips(seat, spot, wagers[spot], 0)
            for (seat, spot), amount in sorted(view.spots.items())
            if amount and 0 <= spot < len(wagers)
        ]


def engine_input(action: AutoAction, *, locked: bool) -> object:
    """What the engine is fed for a simulated person's action when no devices stand between them
    (in-process soaks and benches): chips as the sensors' reading, a key as the display's press."""
    if isinstance(action, PlaceChips):
        return BetChanged("sensors", action.seat, action.spot, action.amount_cents, 0, locked)
    if isinstance(action, PressKey):
        return DealerKey("display", action.key, action.seat)
    return action


__all__ = ["AutoAction", "AutoPlayer", "PlaceChips", "PressKey", "engine_input"]
