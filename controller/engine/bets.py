"""The bets: every betting spot's last sensor reading, the lock ("no more bets") with the table's limits
and the wagers the settle engine would refuse, and past-posting (chips that change after the lock).

Before the lock bets are free. At the lock the seats with chips are the round's seats, or the lock is
refused naming why. After it, a spot that differs from its locked wager is past-posting (a latching
fault, the table held) until the reveal, after which chips move for the payout; chips on the decision
spot during a decision phase are the decisions part's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.context import TableContext
from controller.engine.round import DEAD, FOLDED, LIVE, SeatPlay
from controller.engine.state import DESIGNATED_PLAYER
from controller.errors import UserError
from controller.money import money
from controller.rules.games import CHASE_THE_FLUSH, check_bet_wagers
from drivers.events import BetChanged

# States after which the cards are face up and chips move legitimately (payouts): no past-posting.
OUTCOME_STATES = (m.REVEAL, m.SETTLING, m.PAYING, m.COMPLETE)


class Bets:
    """Spots, the lock, past-posting and the ante limits."""

    def __init__(self, ctx: TableContext) -> None:
        self.ctx = ctx
        self.spots: dict[tuple[int, int], int] = {}  # (seat, spot) -> the sensor's last amount
        self.past_posted: set[tuple[int, int]] = set()  # spots flagged this round (judged once)

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            a.NoMoreBets: lambda action: self.no_more_bets(action.by),
            BetChanged: self._on_bet_changed,
        }

    def no_more_bets(self, by: str) -> None:
        ctx = self.ctx
        if ctx.state != m.BETTING:
            ctx.refuse("no_more_bets", f"no betting is open ({ctx.state})", by)
            return
        wagers_by_seat, why_not = self._locked_wagers()
        if why_not is not None:
            ctx.refuse("no_more_bets", why_not, by)
            ctx.alert("alert", "bets_refused", f"no more bets refused: {why_not}")
            return
        ctx.flow.lock(wagers_by_seat, by)

    def clear_empty_spots(self) -> None:
        """Between rounds: forget the spots the sensors report empty."""
        for key, amount in list(self.spots.items()):
            if amount == 0:
                del self.spots[key]

    def _on_bet_changed(self, event: BetChanged) -> None:
        ctx = self.ctx
        spec = ctx.spec
        source = event.device
        valid_seat = 1 <= event.seat <= 7 and 0 <= event.spot < len(spec.wagers)
        if not valid_seat or event.amount_cents < 0 or event.chip_count < 0:
            ctx.faults.raise_fault(
                "integrity",
                f"bet sensor report refused: seat {event.seat} spot {event.spot} "
                f"amount {money(event.amount_cents)}",
                latching=False,
                device=event.device,
                source=source,
            )
            return
        wager = spec.wagers[event.spot]
        key = (event.seat, event.spot)
        before = self.spots.get(key, 0)
        self.spots[key] = event.amount_cents
        live = ctx.round
        locked = live is not None and ctx.state not in (m.IDLE, m.BETTING) and not live.closed
        ctx.journal(
            "bet_changed",
            {
                "seat": event.seat,
                "wager": wager,
                "amount_cents": event.amount_cents,
                "chip_count": event.chip_count,
                "locked": locked,
            },
            source=source,
        )
        if live is None or not locked or ctx.state in OUTCOME_STATES:
            return  # before the lock bets are free; after the reveal chips move for the payout
        play = live.seats.get(event.seat)
        decision_spot = spec.wagers.index(spec.decision_wager)
        if (
            play is not None
            and event.spot == decision_spot
            and live.street is not None
            and play.status == LIVE
            and play.covered
            and not play.decided
        ):
            ctx.decisions.decision_chips(play, event.amount_cents)
            return
        if play is not None and (play.status == DEAD or not play.covered):
            return  # a dead seat's wagers go back whatever the chips do
        expected = self._expected_amount(play, event.spot)
        if event.amount_cents == expected:
            return
        if (
            play is not None
            and play.status == FOLDED
            and event.amount_cents == 0
            and wager in self._forfeit_on_fold()
        ):
            return  # the dealer collected a folded seat's forfeited chips
        if key in self.past_posted and before != expected:
            return  # already flagged and held for this spot
        self.past_posted.add(key)
        ctx.journal(
            "past_posting",
            {"seat": event.seat, "wager": wager, "locked_cents": expected, "seen_cents": event.amount_cents},
        )
        ctx.faults.raise_fault(
            "past_posting",
            f"seat {event.seat} {wager}: {money(expected)} locked, "
            f"{money(event.amount_cents)} seen after the lock",
            latching=True,
            device=event.device,
        )
        ctx.flow.hold_table()

    def _expected_amount(self, play: SeatPlay | None, spot: int) -> int:
        if play is None:
            return 0
        return play.wagers.get(self.ctx.spec.wagers[spot], 0)

    def _forfeit_on_fold(self) -> tuple[str, ...]:
        ctx = self.ctx
        if ctx.config.game == CHASE_THE_FLUSH:
            return ("ante", "xtra_bonus")
        if ctx.bank.banking_mode() == DESIGNATED_PLAYER:
            return ("ante", *ctx.spec.bonus_wagers)
        return ("ante",)

    def _locked_wagers(self) -> tuple[dict[int, dict[str, int]], str | None]:
        """The wagers on the table at the lock, by seat, or the reason the lock is refused."""
        ctx = self.ctx
        config = ctx.config
        wagers_by_seat: dict[int, dict[str, int]] = {}
        decision = ctx.spec.decision_wager
        for (seat, spot), amount in sorted(self.spots.items()):
            if amount <= 0:
                continue
            if seat not in config.seats:
                return {}, f"seat {seat}: chips on a seat the table does not have"
            if ctx.bank.banking_mode() == DESIGNATED_PLAYER and seat == ctx.bank.dp_seat:
                return {}, f"seat {seat} is the designated player's: it places no wagers"
            wager = ctx.spec.wagers[spot]
            if wager == decision:
                return {}, f"seat {seat}: chips on the {decision} spot before the cards are seen"
            wagers_by_seat.setdefault(seat, {})[wager] = amount
        for seat, wagers in wagers_by_seat.items():
            ante = wagers.get("ante", 0)
            if ante == 0:
                return {}, f"seat {seat}: wagers without an ante"
            if not config.min_ante_cents <= ante <= config.max_ante_cents:
                return {}, (
                    f"seat {seat}: ante {money(ante)} outside the table's limits "
                    f"{money(config.min_ante_cents)} to {money(config.max_ante_cents)}"
                )
            if config.game == CHASE_THE_FLUSH and wagers.get("xtra_bonus", 0) != ante:
                return {}, f"seat {seat}: the X-tra Bonus must equal the ante ({money(ante)})"
            try:  # whatever else the settle engine would refuse, refuse now, before a card is dealt
                check_bet_wagers(config.game, wagers, field="wagers")
            except UserError as error:
                return {}, f"seat {seat}: {error}"
        if not wagers_by_seat:
            return {}, "no seat has an ante"
        if len(wagers_by_seat) > ctx.spec.max_players:
            return (
                {},
                f"{len(wagers_by_seat)} seats bet, but {config.game} seats at most {ctx.spec.max_players}",
            )
        return wagers_by_seat, None
