"""The decision phases: chips on the decision spot checked against the seat's actual cards, folds from
the dealer's key, the dealer's confirm, and the walk-away timeout (docs/engine.md "Decisions").

A phase opens when its deal step completes and closes by the dealer's confirm or at its deadline; the
round flow then deals the next street or reveals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.context import TableContext
from controller.engine.doors import ClosesDecisions, RaisesFaults
from controller.engine.round import LIVE, SeatPlay
from controller.journal import entries as e
from controller.money import money
from controller.rules.games import CHASE_THE_FLUSH, decision_limits
from controller.rules.hands import evaluate
from drivers.events import ShowText


def undecided(play: SeatPlay) -> bool:
    """The seat is in play and has a decision to make."""
    return play.status == LIVE and play.covered and not play.decided


class Decisions:
    """Raise/play/all-in, check and fold, by seat and street.

    Its doors to the other parts are the three it is given, no more: the bets' spots (read only), the
    faults (to raise one) and the round flow (to close the phase). ``ctx`` is the table's shared record:
    the configuration, the round in play, the time and the outputs."""

    def __init__(
        self,
        ctx: TableContext,
        *,
        spots: Mapping[tuple[int, int], int],
        faults: RaisesFaults,
        flow: ClosesDecisions,
    ) -> None:
        self.ctx = ctx
        self._spots = spots  # (seat, spot) -> the sensor's last amount, kept by the bets
        self._faults = faults
        self._flow = flow

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            a.ConfirmDecisions: lambda action: self.close(cause="confirm", by=action.by),
            a.FoldSeat: lambda action: self.fold(action.seat, action.by),
        }

    def open(self) -> None:
        ctx = self.ctx
        live = ctx.round
        assert live is not None
        spec = ctx.spec
        street = ctx.state
        live.open_street(street, ctx.now_s + ctx.config.decision_timeout_s)
        decision_spot = spec.wagers.index(spec.decision_wager)
        # Chips already on a decision spot (placed early) count as soon as the phase opens.
        for number, play in live.seats.items():
            if undecided(play):
                amount = self._spots.get((number, decision_spot), 0)
                if amount:
                    self.decision_chips(play, amount)
        label = (
            f"{spec.decision_wager} or fold"
            if street == m.DECISIONS
            else f"{street}: all in or {'fold' if street == m.RIVER else 'check'}"
        )
        ctx.out.append(ShowText(ctx.config.display_device, f"Decisions: {label}"))
        if not any(undecided(play) for play in live.seats.values()):
            self.close(cause="nobody to act", by=None)

    def _seat_limits(self, play: SeatPlay) -> tuple[int, int]:
        ctx = self.ctx
        live = ctx.round
        assert live is not None
        street = live.street if ctx.config.game == CHASE_THE_FLUSH else None
        hand = evaluate([*play.cards, *live.community])
        return decision_limits(ctx.config.game, hand, play.wagers["ante"], street)

    def decision_chips(self, play: SeatPlay, amount_cents: int) -> None:
        """Chips on the decision spot during the phase: checked against the seat's actual cards."""
        ctx = self.ctx
        play.chips_on_decision_spot(amount_cents)
        if amount_cents == 0:
            return
        low, high = self._seat_limits(play)
        if low <= amount_cents <= high:
            return
        live = ctx.round
        hand = evaluate([*play.cards, *(live.community if live else [])])
        allowed = f"exactly {money(low)}" if low == high else f"{money(low)} to {money(high)}"
        why = (
            f"on the {live.street if live else ''}"
            if ctx.config.game == CHASE_THE_FLUSH
            else f"with a {hand.flush_length}-card flush"
        )
        over = amount_cents > high
        # The limit speaks of the hand (a 3-card flush, a street's cards): private until the reveal.
        limit_detail = f"{'over' if over else 'under'} the limit: {allowed} {why}"
        action = ctx.spec.decision_wager
        # The public reason names the seat and the amount only: never the hand.
        message = (
            f"seat {play.seat}: {action} of {money(amount_cents)} refused "
            f"({'over' if over else 'under'} the limit)"
        )
        play.refuse_decision_chips(message)
        ctx.journal(
            e.DecisionRefused(
                seat=play.seat,
                action=action,
                amount_cents=amount_cents,
                reason=e.Reason(
                    code="over_limit" if over else "under_limit", message=message, seat=play.seat
                ),
                private=e.DecisionRefusedPrivate(limit_detail=limit_detail),
            )
        )
        if over:
            self._faults.raise_fault("over_limit_raise", message, latching=False)
        else:  # too little is a mistake to correct, not a fault (no fault kind for it in docs/journal.md)
            ctx.alert("alert", "decision_refused", message)

    def fold(self, seat: int, by: str) -> None:
        ctx = self.ctx
        live = ctx.round
        if live is None or ctx.state not in ctx.definition.decision_states:
            ctx.refuse("fold", "no decision phase is open", by)
            return
        play = live.seats.get(seat)
        if play is None or not undecided(play):
            ctx.refuse("fold", f"seat {seat} has no decision to make", by)
            return
        if ctx.config.game == CHASE_THE_FLUSH and live.street != m.RIVER:
            ctx.refuse("fold", f"seat {seat}: before the river a player checks or goes all in", by)
            return
        self._decide(play, "fold", 0, cause="dealer_key")

    def _decide(self, play: SeatPlay, action: str, amount_cents: int, *, cause: str) -> None:
        ctx = self.ctx
        live = ctx.round
        assert live is not None
        street = live.street if ctx.config.game == CHASE_THE_FLUSH else None
        if action == "fold":
            play.fold()
        elif action == "check":
            play.check()  # Chase the Flush before the river: the seat acts again on the next street
        else:
            play.decide(ctx.spec.decision_wager, amount_cents, street)
        ctx.journal(
            e.Decision(seat=play.seat, action=action, amount_cents=amount_cents, street=street, cause=cause)
        )

    def close(self, *, cause: str, by: str | None) -> None:
        ctx = self.ctx
        live = ctx.round
        if live is None or ctx.state not in ctx.definition.decision_states:
            if by is not None:
                ctx.refuse("confirm", "no decision phase is open", by)
            return
        refused = [p.seat for p in live.seats.values() if undecided(p) and p.pending_refused]
        if refused:
            reason = f"seat(s) {', '.join(map(str, refused))}: a refused decision wager must be corrected"
            if by is not None:
                ctx.refuse("confirm", reason, by)
            return
        chase_before_river = ctx.config.game == CHASE_THE_FLUSH and live.street != m.RIVER
        idle_seats = [p.seat for p in live.seats.values() if undecided(p) and not p.pending_cents]
        if cause == "confirm" and idle_seats and not chase_before_river:
            reason = f"seat(s) {', '.join(map(str, idle_seats))} have not acted: fold them or wait"
            ctx.refuse("confirm", reason, by)
            return
        action_name = "all_in" if ctx.config.game == CHASE_THE_FLUSH else ctx.spec.decision_wager
        for number in sorted(live.seats):
            play = live.seats[number]
            if not undecided(play):
                continue
            if play.pending_cents:
                self._decide(play, action_name, play.pending_cents, cause="sensor")
            elif chase_before_river:
                self._decide(play, "check", 0, cause=cause)
            else:
                self._decide(play, "fold", 0, cause=cause)  # the walk-away rule
        live.close_street()
        self._flow.decisions_closed()

    def check_timeout(self) -> None:
        """A decision phase past its deadline closes: every seat that has not acted walked away."""
        ctx = self.ctx
        live = ctx.round
        if (
            live is None
            or ctx.state not in ctx.definition.decision_states
            or live.decision_deadline_s is None
            or ctx.now_s < live.decision_deadline_s
        ):
            return
        self.close(cause="timeout", by=None)
