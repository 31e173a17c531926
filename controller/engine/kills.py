"""Killing one seat's hand: a supervisor's kill (``KillSeat``), and the dealer's request by the
``kill_seat`` key waiting for a supervisor's answer (``RequestKillSeat``, ``ConfirmKillSeat``,
``RejectKillSeat``); a request lapses when the decisions close or the round ends (docs/engine.md "Kill
one seat by the dealer's key"; docs/rules.md "Dead hands and walk-aways").

While betting is open a kill excludes the seat from the round about to lock: the bets keep the excluded
seats (their door, ``ExcludesSeats``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.context import ENGINE, TableContext, operator
from controller.engine.doors import ExcludesSeats
from controller.engine.round import DEAD, FOLDED, LiveRound
from controller.journal import entries as e
from drivers.events import ShowSeatResult, ShowText


@dataclass(frozen=True, slots=True)
class KillRequest:
    """The dealer's kill request waiting for a supervisor: the seat, who asked, the round it was asked in
    and its number in that round (1, 2, ...). An answer names all three of round, number and seat."""

    seat: int
    requested_by: str
    round_id: str
    number: int

    def answered(self, status: e.KillRequestStatus, *, by: str, reason: str) -> e.KillSeatRequest:
        """The entry that closes this request (confirmed, rejected or lapsed): the request's own seat,
        asker and number, so every answer names the request it answers."""
        return e.KillSeatRequest(
            seat=self.seat,
            status=status,
            by=by,
            requested_by=self.requested_by,
            reason=reason,
            request_number=self.number,
        )


class SeatKills:
    """A supervisor's kill of one seat, and the dealer's kill request waiting for a supervisor."""

    def __init__(self, ctx: TableContext, *, bets: ExcludesSeats) -> None:
        """``bets``: the seats excluded from the round about to lock (a kill while betting is open)."""
        self.ctx = ctx
        self._bets = bets
        # The dealer's pending request to kill one seat (the kill_seat key), waiting for a supervisor's
        # ConfirmKillSeat or RejectKillSeat. One at a time; it lapses when the decisions close or the
        # round ends (RoundFlow.after_state_change).
        self.kill_request: KillRequest | None = None

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            a.KillSeat: self._on_kill_seat,
            a.RequestKillSeat: lambda action: self._request_kill_seat(action.seat, action.by),
            a.ConfirmKillSeat: self._confirm_kill_seat,
            a.RejectKillSeat: self._reject_kill_seat,
        }

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
            if self._bets.excluded_from_round(seat):
                ctx.refuse("kill_seat", f"seat {seat} is already excluded from this round", by)
                return False
            self._bets.exclude(seat, reason)
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
            ctx.journal(request.answered("confirmed", by=by, reason=reason), source=operator(by))
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
        ctx.journal(request.answered("rejected", by=by, reason=reason), source=operator(by))
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
            request.answered("lapsed", by=ENGINE, reason=f"{why} before a supervisor answered ({ctx.state})"),
            # The request's round, named: after a void (or the round's end) the machine has left the
            # round, and ctx.journal would write the lapse with no round id, out of the round's recall.
            round_id=request.round_id,
        )
        ctx.out.append(ShowText(ctx.config.display_device, f"Kill seat {request.seat}: request lapsed"))


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
