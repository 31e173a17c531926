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
from controller.engine.doors import BankSpot, LocksRound, ProgressiveAtLock, RaisesFaults, TakesDecisionChips
from controller.engine.round import DEAD, FOLDED, LIVE, LiveRound, SeatPlay
from controller.engine.state import DESIGNATED_PLAYER
from controller.errors import UserError
from controller.journal import entries as e
from controller.money import money
from controller.rules.games import CHASE_THE_FLUSH, check_bet_wagers
from controller.rules.progressive import PROGRESSIVE
from drivers.events import BetChanged, ShowText

# The bank spot of each seat (protocol spot 7, after every game's wager spots): a designated player's
# bank, read by the bet sensors like any spot; journaled as bet_changed with wager "bank".
BANK_SPOT = 7
BANK = "bank"

# States after which the cards are face up and chips move legitimately (payouts): no past-posting.
OUTCOME_STATES = (m.REVEAL, m.SETTLING, m.PAYING, m.COMPLETE)


class Bets:
    """Spots, the lock, past-posting and the ante limits."""

    # The door built after the bets (it reads their spots): given by ``connect``.
    _decisions: TakesDecisionChips

    def __init__(
        self,
        ctx: TableContext,
        *,
        faults: RaisesFaults,
        flow: LocksRound,
        bank: BankSpot,
        progressive: ProgressiveAtLock,
    ) -> None:
        """Its doors: ``faults`` (raise one), ``flow`` (lock the round, hold the table), ``bank`` (the
        designated player's seat and bank, and its bank spot's chips), ``progressive`` (its check at the
        lock)."""
        self.ctx = ctx
        self._faults = faults
        self._flow = flow
        self._bank = bank
        self._progressive = progressive
        self.spots: dict[tuple[int, int], int] = {}  # (seat, spot) -> the sensor's last amount
        self.past_posted: set[tuple[int, int]] = set()  # spots flagged this round (judged once)
        # Each past-posting fault's spot and the amount the round holds there: its clear is refused
        # while the spot reads otherwise (put the chips back, or a supervisor accepts the difference).
        self.past_posting_spots: dict[str, tuple[int, int, str, int]] = {}
        self.past_posting_rounds: dict[str, str] = {}  # fault id -> the round it held
        # Seats a supervisor excluded while betting was open (KillSeat before the lock): left out of the
        # round at the lock whatever their chips say; the dealer gives the chips back.
        self.excluded: dict[int, str] = {}

    def connect(self, *, decisions: TakesDecisionChips) -> None:
        """``decisions``: chips on a decision spot during a decision phase are theirs."""
        self._decisions = decisions

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
            # Like a past-posted bet: the dealer is told which spot, nothing is taken into action, and
            # betting stays open until the chips are corrected or a supervisor excludes the seat.
            ctx.refuse("no_more_bets", why_not, by)
            ctx.alert("alert", "bets_refused", f"no more bets refused: {why_not}")
            ctx.out.append(ShowText(ctx.config.display_device, f"Refused: {why_not}"))
            return
        self._flow.lock(wagers_by_seat, by)

    def new_round(self) -> None:
        """A round opens: no spot is flagged and no seat excluded yet (both belong to one round)."""
        self.past_posted.clear()
        self.excluded.clear()

    def judge_spots_afresh(self) -> None:
        """A round resumed or closed: a spot flagged past-posted may be judged again (the flag stops a
        spot raising the same fault on every sensor report while the round is held)."""
        self.past_posted.clear()

    def excluded_from_round(self, seat: int) -> bool:
        return seat in self.excluded

    def exclude(self, seat: int, reason: str) -> None:
        """A supervisor excluded the seat while betting is open: left out of the round at the lock."""
        self.excluded[seat] = reason

    def forget_past_posting(self, fault_id: str) -> None:
        """The past-posting fault ``fault_id`` is released: its spot no longer holds a clear back."""
        self.past_posting_spots.pop(fault_id, None)
        self.past_posting_rounds.pop(fault_id, None)

    def clear_empty_spots(self) -> None:
        """Between rounds: forget the spots the sensors report empty."""
        for key, amount in list(self.spots.items()):
            if amount == 0:
                del self.spots[key]

    def _on_bet_changed(self, event: BetChanged) -> None:
        ctx = self.ctx
        bank_spot = event.spot == BANK_SPOT and ctx.config.banking_mode == DESIGNATED_PLAYER
        valid_seat = 1 <= event.seat <= 7 and (0 <= event.spot < len(ctx.spot_wagers) or bank_spot)
        if not valid_seat or event.amount_cents < 0 or event.chip_count < 0:
            self._faults.raise_fault(
                "integrity",
                f"bet sensor report refused: seat {event.seat} spot {event.spot} "
                f"amount {money(event.amount_cents)}",
                latching=False,
                device=event.device,
                source=event.device,
            )
        elif bank_spot:
            self._on_bank_spot(event)
        else:
            self._on_wager_spot(event)

    def _journal_read(self, event: BetChanged, wager: str, *, locked: bool) -> None:
        """The sensors' read of one spot as it came (a wager's spot, or the bank spot: never locked)."""
        self.ctx.journal(
            e.BetChanged(
                seat=event.seat,
                wager=wager,
                amount_cents=event.amount_cents,
                chip_count=event.chip_count,
                locked=locked,
            ),
            source=event.device,
        )

    def _on_bank_spot(self, event: BetChanged) -> None:
        """The bank spot holds the chips a player posts as the DP's bank: never a wager (the bank taken
        is the amount read when the button was accepted). But once the round is locked the bank the
        settlement counts on may not leave the felt before the reveal: a DP's bank spot that drops below
        its posted bank is past-posting the bank (the table held, like any locked spot)."""
        ctx = self.ctx
        self._bank.bank_spot_read(
            event.seat, event.amount_cents, before_lock=ctx.where in (m.IDLE, m.BETTING)
        )
        self._journal_read(event, BANK, locked=False)
        live = ctx.round
        in_play = (
            live is not None and ctx.state not in (m.IDLE, m.BETTING, *OUTCOME_STATES) and not live.closed
        )
        seen = self._bank.bank_short_on_spot() if event.seat == self._bank.dp_seat else None
        if in_play and seen is not None and (event.seat, BANK_SPOT) not in self.past_posted:
            self._past_posting(
                event,
                BANK_SPOT,
                BANK,
                held_cents=self._bank.dp_funds_cents,
                seen_cents=seen,
                held_as="posted",
            )

    def _on_wager_spot(self, event: BetChanged) -> None:
        """A wager's spot: free before the lock and after the reveal; between them, the decisions' chips
        or past-posting (``_judge_locked_spot``)."""
        ctx = self.ctx
        wager = ctx.spot_wagers[event.spot]
        key = (event.seat, event.spot)
        before = self.spots.get(key, 0)
        self.spots[key] = event.amount_cents
        live = ctx.round
        state = ctx.state  # (read once: every chip move asks it)
        locked = live is not None and state not in (m.IDLE, m.BETTING) and not live.closed
        self._journal_read(event, wager, locked=locked)
        if live is None or not locked or state in OUTCOME_STATES:
            return  # before the lock bets are free; after the reveal chips move for the payout
        self._judge_locked_spot(event, live, wager, before)

    def _judge_locked_spot(self, event: BetChanged, live: LiveRound, wager: str, before: int) -> None:
        """Chips that move on a locked spot before the reveal: the decisions' on the decision spot, nothing
        on a dead seat's or an excluded seat's or a refused Progressive's, a folded seat's forfeit taken;
        else past-posting, flagged once per spot."""
        spec = self.ctx.spec
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
            self._decisions.decision_chips(play, event.amount_cents)
            return
        if play is not None and (play.status == DEAD or not play.covered):
            return  # a dead seat's wagers go back whatever the chips do
        if play is None and event.seat in self.excluded:
            return  # a seat excluded before the lock: the dealer gives its chips back
        if wager == PROGRESSIVE and self._progressive.refused_at_lock is not None:
            return  # the Progressive wagers refused at the lock (link lost): the dealer gives them back
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
        if (event.seat, event.spot) in self.past_posted and before != expected:
            return  # already flagged and held for this spot
        self._past_posting(
            event, event.spot, wager, held_cents=expected, seen_cents=event.amount_cents, held_as="locked"
        )

    def _past_posting(
        self, event: BetChanged, spot: int, wager: str, *, held_cents: int, seen_cents: int, held_as: str
    ) -> None:
        """Chips on a spot changed after the lock (a wager, or the DP's bank): journaled, a latching fault,
        the table held; flagged once per spot and round."""
        ctx = self.ctx
        self.past_posted.add((event.seat, spot))
        ctx.journal(
            e.PastPosting(seat=event.seat, wager=wager, locked_cents=held_cents, seen_cents=seen_cents)
        )
        fault_id = self._faults.raise_fault(
            "past_posting",
            f"seat {event.seat} {wager}: {money(held_cents)} {held_as}, "
            f"{money(seen_cents)} seen after the lock",
            latching=True,
            device=event.device,
        )
        self.past_posting_spots[fault_id] = (event.seat, spot, wager, held_cents)
        if ctx.round is not None:
            self.past_posting_rounds[fault_id] = ctx.round.round_id
        self._flow.hold_table()

    def spot_still_off(self, fault_id: str) -> str | None:
        """What a past-posting fault's spot reads now, in words, if not the amount the round holds there
        (None once the chips are back as locked, or for a fault this engine did not see raised)."""
        live = self.ctx.round
        if (
            fault_id not in self.past_posting_spots
            or live is None
            or live.closed
            or self.past_posting_rounds.get(fault_id) != live.round_id
        ):
            return None  # its round is over (dead, voided): every wager goes back, nothing to compare
        seat, spot, wager, held_cents = self.past_posting_spots[fault_id]
        if spot == BANK_SPOT:
            reading = self._bank.bank_spot(seat)
            off = self._bank.bank_short_on_spot() is not None
        else:
            reading = self.spots.get((seat, spot), 0)
            off = reading != held_cents
        if not off:
            return None
        return f"seat {seat} {wager} reads {money(reading)}, the round holds {money(held_cents)}"

    def _expected_amount(self, play: SeatPlay | None, spot: int) -> int:
        if play is None:
            return 0
        return play.wagers.get(self.ctx.spot_wagers[spot], 0)

    def _forfeit_on_fold(self) -> tuple[str, ...]:
        ctx = self.ctx
        if ctx.config.game == CHASE_THE_FLUSH:
            return ("ante", "xtra_bonus")
        if self._bank.banking_mode() == DESIGNATED_PLAYER:
            return ("ante", *ctx.spec.bonus_wagers)
        return ("ante",)

    def _locked_wagers(self) -> tuple[dict[int, dict[str, int]], str | None]:  # noqa: PLR0912 - one branch per wager kind, the order of the rules' text
        """The wagers on the table at the lock, by seat, or the reason the lock is refused."""
        ctx = self.ctx
        config = ctx.config
        seen = self._bank.bank_short_on_spot()
        if seen is not None:
            return {}, (
                f"seat {self._bank.dp_seat}'s bank spot holds {money(seen)}, less than the bank "
                f"{money(self._bank.dp_funds_cents)} it posted: put the bank back"
            )
        wagers_by_seat: dict[int, dict[str, int]] = {}
        decision = ctx.spec.decision_wager
        for (seat, spot), amount in sorted(self.spots.items()):
            if amount <= 0 or seat in self.excluded:
                continue
            if seat not in config.seats:
                return {}, f"seat {seat}: chips on a seat the table does not have"
            if self._bank.banking_mode() == DESIGNATED_PLAYER and seat == self._bank.dp_seat:
                return {}, f"seat {seat} is the designated player's: it places no wagers"
            wager = ctx.spot_wagers[spot]
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
            for wager in ctx.spec.bonus_wagers:
                amount = wagers.get(wager, 0)
                if amount > config.max_bonus_for(wager):
                    return {}, (
                        f"seat {seat} {wager}: {money(amount)} is over the table's maximum "
                        f"{money(config.max_bonus_for(wager))}"
                    )
            try:  # whatever else the settle engine would refuse, refuse now, before a card is dealt
                game_wagers = {name: cents for name, cents in wagers.items() if name != PROGRESSIVE}
                check_bet_wagers(config.game, game_wagers, field="wagers")
            except UserError as error:
                return {}, f"seat {seat}: {error}"
        if not wagers_by_seat:
            return {}, "no seat has an ante"
        why_not = self._progressive.at_lock(wagers_by_seat)  # the spot's unit; the link (refused, not held)
        if why_not is not None:
            return {}, why_not
        if len(wagers_by_seat) > ctx.spec.max_players:
            return (
                {},
                f"{len(wagers_by_seat)} seats bet, but {config.game} seats at most {ctx.spec.max_players}",
            )
        return wagers_by_seat, None
