"""The bets: every betting spot's last sensor reading, the lock ("no more bets") with the table's limits
and the wagers the settle engine would refuse, and past-posting (chips that change after the lock).

Before the lock bets are free. At the lock the seats with chips are the round's seats, or the lock is
refused naming why. After it, a spot that differs from its locked wager is past-posting (a latching
fault, the table held) until the reveal, after which chips move for the payout; chips on the decision
spot during a decision phase are the decisions part's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.context import ENGINE, TableContext, operator
from controller.engine.doors import BankSpot, LocksRound, ProgressiveAtLock, RaisesFaults, TakesDecisionChips
from controller.engine.round import DEAD, FOLDED, LIVE, LiveRound, SeatPlay
from controller.engine.state import DESIGNATED_PLAYER
from controller.errors import UserError
from controller.journal import entries as e
from controller.money import money
from controller.rules.games import CHASE_THE_FLUSH, check_bet_wagers
from controller.rules.progressive import PROGRESSIVE
from drivers.events import BetChanged, ShowSeatResult, ShowText

# The bank spot of each seat (protocol spot 7, after every game's wager spots): a designated player's
# bank, read by the bet sensors like any spot; journaled as bet_changed with wager "bank".
BANK_SPOT = 7
BANK = "bank"

# States after which the cards are face up and chips move legitimately (payouts): no past-posting.
OUTCOME_STATES = (m.REVEAL, m.SETTLING, m.PAYING, m.COMPLETE)


@dataclass(frozen=True, slots=True)
class KillRequest:
    """The dealer's kill request waiting for a supervisor: the seat, who asked, the round it was asked in
    and its number in that round (1, 2, ...). An answer names all three of round, number and seat."""

    seat: int
    requested_by: str
    round_id: str
    number: int


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
        # The dealer's pending request to kill one seat (the kill_seat key), waiting for a supervisor's
        # ConfirmKillSeat or RejectKillSeat. One at a time; it lapses when the decisions close or the
        # round ends (after_state_change).
        self.kill_request: KillRequest | None = None

    def connect(self, *, decisions: TakesDecisionChips) -> None:
        """``decisions``: chips on a decision spot during a decision phase are theirs."""
        self._decisions = decisions

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            a.NoMoreBets: lambda action: self.no_more_bets(action.by),
            a.KillSeat: self._on_kill_seat,
            a.RequestKillSeat: lambda action: self._request_kill_seat(action.seat, action.by),
            a.ConfirmKillSeat: self._confirm_kill_seat,
            a.RejectKillSeat: self._reject_kill_seat,
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

    def _on_bank_spot(self, event: BetChanged) -> None:
        """The bank spot holds the chips a player posts as the DP's bank: never a wager (the bank taken
        is the amount read when the button was accepted). But once the round is locked the bank the
        settlement counts on may not leave the felt before the reveal: a DP's bank spot that drops below
        its posted bank is past-posting the bank (the table held, like any locked spot)."""
        ctx = self.ctx
        self._bank.bank_spot_read(
            event.seat, event.amount_cents, before_lock=ctx.where in (m.IDLE, m.BETTING)
        )
        ctx.journal(
            e.BetChanged(
                seat=event.seat,
                wager=BANK,
                amount_cents=event.amount_cents,
                chip_count=event.chip_count,
                locked=False,
            ),
            source=event.device,
        )
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
        ctx.journal(
            e.BetChanged(
                seat=event.seat,
                wager=wager,
                amount_cents=event.amount_cents,
                chip_count=event.chip_count,
                locked=locked,
            ),
            source=event.device,
        )
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

    def _on_kill_seat(self, action: a.KillSeat) -> None:
        self._kill_seat(action.seat, action.reason, action.by)

    def _kill_seat(self, seat: int, reason: str, by: str, requested_by: str | None = None) -> bool:
        """A supervisor kills one seat's hand (docs/rules.md "Dead hands and walk-aways": an exposed or
        fouled hand) before the decisions close: its wagers are returned and the rest of the round goes on.
        While betting is open it excludes the seat from the round about to lock (a spot refused at the
        lock, say).
        ``requested_by``: the dealer whose kill_seat key asked for it (ConfirmKillSeat). True when done."""
        ctx = self.ctx
        if not by.strip():
            ctx.refuse("kill_seat", "by: the supervisor's name is required", "unknown")
            return False
        if not reason.strip():
            ctx.refuse("kill_seat", "reason: a reason is required", by)
            return False
        if seat not in ctx.config.seats:
            ctx.refuse("kill_seat", f"seat {seat} is not a seat of this table", by)
            return False
        where = ctx.where
        display = ctx.config.display_device
        if where == m.BETTING:
            if seat in self.excluded:
                ctx.refuse("kill_seat", f"seat {seat} is already excluded from this round", by)
                return False
            self.excluded[seat] = reason
            ctx.journal(
                e.SeatKilled(seat=seat, by=by, reason=reason, excluded=True),
                source=operator(by),
            )
            ctx.out.append(ShowSeatResult(display, seat, "dead", 0))
            ctx.out.append(ShowText(display, f"Seat {seat} excluded: return its chips"))
            return True
        live = ctx.round
        if live is None or self._kill_window() is not None:
            ctx.refuse("kill_seat", f"a seat is killed only before the decisions close ({ctx.state})", by)
            return False
        why = _why_not_killable(live, seat)
        if why is not None:
            ctx.refuse("kill_seat", why, by)
            return False
        play = live.seats[seat]
        asked = "" if requested_by is None else f" at the {requested_by}'s request"
        message = f"killed by a supervisor{asked}: {reason}"
        play.kill(message)
        ctx.journal(
            e.SeatKilled(seat=seat, by=by, reason=reason, requested_by=requested_by),
            source=operator(by),
        )
        ctx.journal(e.DeadHand(seat=seat, reason=e.Reason(code="operator", message=message, seat=seat)))
        ctx.out.append(ShowSeatResult(display, seat, "dead", 0))
        ctx.out.append(ShowText(display, f"Seat {seat} dead: every wager returned"))
        request = self.kill_request
        if request is not None and request.seat == seat:
            # The dealer's request for this seat is answered, by the Confirm or by the panel's own Kill.
            self.kill_request = None
            ctx.journal(
                e.KillSeatRequest(
                    seat=seat,
                    status="confirmed",
                    by=by,
                    requested_by=request.requested_by,
                    reason=reason,
                    request_number=request.number,
                ),
                source=operator(by),
            )
        return True

    # ------------------------------------------------------------------ the dealer's kill request
    def _kill_window(self) -> str | None:
        """None while a dealt hand may be killed (the lock to the close of the decisions), else why not."""
        ctx = self.ctx
        live = ctx.round
        open_states = (m.BETS_LOCKED, *ctx.definition.dealing_states, *ctx.definition.decision_states)
        if live is None or live.closed or ctx.where not in open_states:
            return f"a seat is killed only after the lock and before the decisions close ({ctx.state})"
        return None

    def _request_kill_seat(self, seat: int, by: str) -> None:
        """The dealer's kill_seat key: journal the request and wait for a supervisor (docs/rules.md "Dead
        hands": the supervisor kills a hand, the dealer asks). Refused, journaled and shown, when the
        seat could not be killed now: the supervisor is not asked for what cannot be done."""
        ctx = self.ctx
        display = ctx.config.display_device
        why = self._kill_window()
        live = ctx.round
        if why is None and live is not None:
            if self.kill_request is not None:
                why = f"seat {self.kill_request.seat}'s kill request is already waiting for a supervisor"
            else:
                why = _why_not_killable(live, seat)
        if why is not None or live is None:  # (the kill window is open only in a live round)
            why = why or "no round is in play"
            ctx.refuse("kill_seat_request", why, by)
            ctx.out.append(ShowText(display, f"Refused: {why}"))
            return
        number = live.number_kill_request()
        self.kill_request = KillRequest(seat, by, live.round_id, number)
        ctx.journal(
            e.KillSeatRequest(seat=seat, status="requested", by=by, request_number=number),
            source=operator(by),
        )
        ctx.out.append(ShowText(display, f"Kill seat {seat}: waiting for a supervisor"))

    def _pending_for(
        self, action: str, seat: int, round_id: str, request_number: int, by: str
    ) -> KillRequest | None:
        """The pending request when it is request ``request_number`` of round ``round_id``, for ``seat``;
        else refused (journaled) and None. The round is checked first: an answer to a request of another
        round (one that lapsed while the supervisor typed the reason) must never answer this round's
        request, whatever seat. Then the request's number: an answer to an earlier request of this round
        (rejected, then asked again for the same seat) must never answer the later one."""
        request = self.kill_request
        if request is None:
            self.ctx.refuse(action, "no kill request is waiting for a supervisor", by)
            return None
        if request.round_id != round_id:
            self.ctx.refuse(
                action,
                f"the waiting kill request is for round {request.round_id}, not round {round_id}: "
                "that request is no longer waiting",
                by,
            )
            return None
        if request.number != request_number:
            self.ctx.refuse(
                action,
                f"the waiting kill request is request {request.number} of this round, not request "
                f"{request_number}: that request is no longer waiting",
                by,
            )
            return None
        if request.seat != seat:
            self.ctx.refuse(
                action, f"the waiting kill request is for seat {request.seat}, not seat {seat}", by
            )
            return None
        return request

    def _confirm_kill_seat(self, action: a.ConfirmKillSeat) -> None:
        """A supervisor confirms the dealer's request: the KillSeat it stands for, by the supervisor, with
        the dealer's request recorded. A kill refused (the reason empty, the seat folded since) leaves
        the request waiting: the supervisor may reject it, or it lapses."""
        seat, by = action.seat, action.by
        request = self._pending_for("confirm_kill_seat", seat, action.round_id, action.request_number, by)
        if request is not None:
            # The kill journals the request confirmed (with its number).
            self._kill_seat(seat, action.reason, by, requested_by=request.requested_by)

    def _reject_kill_seat(self, action: a.RejectKillSeat) -> None:
        ctx = self.ctx
        seat, reason, by = action.seat, action.reason, action.by
        request = self._pending_for("reject_kill_seat", seat, action.round_id, action.request_number, by)
        if request is None:
            return
        if not reason.strip():
            ctx.refuse("reject_kill_seat", "reason: a reason is required", by)
            return
        self.kill_request = None
        ctx.journal(
            e.KillSeatRequest(
                seat=seat,
                status="rejected",
                by=by,
                requested_by=request.requested_by,
                reason=reason,
                request_number=request.number,
            ),
            source=operator(by),
        )
        ctx.out.append(ShowText(ctx.config.display_device, f"Kill seat {seat} rejected: play on"))

    def lapse_kill_request(self) -> None:
        """After every change of the round machine's state: a request still waiting when the decisions
        have closed or the round has ended lapses (journaled; the display told). A hold keeps it: the
        round stands where it was."""
        request = self.kill_request
        if request is None or self._kill_window() is None:
            return
        ctx = self.ctx
        self.kill_request = None
        live = ctx.round
        why = "the round ended" if live is None or live.closed else "the decisions closed"
        ctx.journal(
            e.KillSeatRequest(
                seat=request.seat,
                status="lapsed",
                by=ENGINE,
                requested_by=request.requested_by,
                reason=f"{why} before a supervisor answered ({ctx.state})",
                request_number=request.number,
            ),
            # The request's round, named: after a void (or the round's end) the machine has left the
            # round, and ctx.journal would write the lapse with no round id, out of the round's recall.
            round_id=request.round_id,
        )
        ctx.out.append(ShowText(ctx.config.display_device, f"Kill seat {request.seat}: request lapsed"))

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


def _why_not_killable(live: LiveRound, seat: int) -> str | None:
    """Why a seat's hand cannot be killed in this round (not dealt in, already dead, folded), or None."""
    play = live.seats.get(seat)
    if play is None:
        return f"seat {seat} is not in this round"
    if play.status == DEAD:
        return f"seat {seat} is already dead"
    if play.status == FOLDED:
        return f"seat {seat} has folded"
    return None
