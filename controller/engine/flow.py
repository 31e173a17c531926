"""The round flow: the round machine's model, and the round's course from the opening of betting to
the payout, composed of the other parts (docs/engine.md "The parts").

It is the model the ``transitions`` machine drives (kept apart from the machine, so that the round's
logic reads and tests without it): the machine holds the state, this class holds the conditions the
definition names and tells the table what happened (it records outputs; the shell acts on them).
``held`` is a nested state whose child is where the round was held (controller/engine/machine.py), so
resuming needs no note beside the machine, and the round's lifecycle (finished, every card dealt) is
read from the machine's state.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.context import ENGINE, TableContext, operator
from controller.engine.round import LiveRound, SeatPlay
from controller.engine.state import DESIGNATED_PLAYER
from controller.journal import entries as e
from controller.locale import gaming_day_of
from controller.names import format_round_id
from controller.rules.settle import Settlement, bank_by_seat, settle
from drivers.events import (
    COMMUNITY_POSITION,
    LockBets,
    SetSpotLamp,
    ShowButton,
    ShowSeatResult,
    ShowText,
    SpotLampColour,
    UnlockBets,
)

if TYPE_CHECKING:  # the parts, given by the engine (none of them imports the flow: doors.py)
    from controller.engine.bank import Bank
    from controller.engine.bets import Bets
    from controller.engine.deal import DealPart
    from controller.engine.decisions import Decisions
    from controller.engine.faults import Faults
    from controller.engine.kills import SeatKills
    from controller.engine.progressive import TableProgressive
    from controller.engine.settings import TableSettings
    from controller.engine.settling import RoundToSettle


class MachineHalted(Exception):
    """A transition's callback failed; the machine went to ``held``; stop the engine action."""


class RoundFlow:
    """The round machine's model and the round's course."""

    state: str  # the machine's own state, set by transitions ("held/betting" while held from betting)
    # The parts the round's course runs through, built after the flow (they are given it as a door):
    # given by ``connect``.
    _faults: Faults
    _settings: TableSettings
    _bank: Bank
    _bets: Bets
    _deal: DealPart
    _decisions: Decisions
    _progressive: TableProgressive
    _kills: SeatKills
    _settling: RoundToSettle

    def __init__(self, ctx: TableContext) -> None:
        self.ctx = ctx
        self._machine_failed = False
        self.machine = m.build_machine(
            self,
            ctx.config.game,
            on_exception="on_machine_exception",
            after_state_change="after_state_change",
        )
        # The triggers are fired through a table read once from the machine transitions built, not
        # through the library's trigger methods (their per-trigger work was a third of the engine
        # core's time; issue 28): the same states, callbacks and order (controller/engine/machine.py).
        self._dispatch = m.DirectDispatch(
            self.machine, self, after_state_change="after_state_change", on_exception="on_machine_exception"
        )
        # Every event asks where the round stands (the shown state, where it was held): read from a table
        # of the machine's states rather than split from the state's name each time.
        names = self.machine.get_nested_state_names()
        self._shown_of: dict[str, str] = {name: m.top(name) for name in names}
        self._where_of: dict[str, str] = {name: m.held_from(name) or name for name in names}

    def connect(  # noqa: PLR0913 - the round's course runs through every part: one door each
        self,
        *,
        faults: Faults,
        settings: TableSettings,
        bank: Bank,
        bets: Bets,
        deal: DealPart,
        decisions: Decisions,
        progressive: TableProgressive,
        kills: SeatKills,
        settling: RoundToSettle,
    ) -> None:
        self._faults = faults
        self._settings = settings
        self._bank = bank
        self._bets = bets
        self._deal = deal
        self._decisions = decisions
        self._progressive = progressive
        self._kills = kills
        self._settling = settling

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            a.StartRound: lambda action: self.start_round(action.by),
            a.PayoutsDone: lambda action: self.payouts_done(action.by),
            a.VoidRound: lambda action: self._void_round(action.reason, action.by),
            a.Tick: lambda _action: self.tick(),
        }

    # ------------------------------------------------------------------ the machine
    @property
    def shown_state(self) -> str:
        """The state as the table shows it: ``held`` for every child of ``held``."""
        shown = self._shown_of.get(self.state)
        return m.top(self.state) if shown is None else shown

    @property
    def where(self) -> str:
        """Where the round stands: the machine's state, or the state it was held in."""
        where = self._where_of.get(self.state)
        return (m.held_from(self.state) or self.state) if where is None else where

    def table_may_start(self, _event: object) -> bool:
        return self.why_not_start() is None

    def after_state_change(self, event: Any) -> None:
        self.state_entered(m.top(event.transition.source), m.top(event.transition.dest), event.event.name)
        self._kills.lapse_kill_request()  # the decisions closed, or the round ended: a request lapses

    def state_entered(self, source: str, dest: str, trigger: str) -> None:
        self.ctx.journal(e.StateChanged(machine="round", from_state=source, to=dest, trigger=trigger))

    def on_machine_exception(self, event: Any) -> None:
        """``on_exception``: a callback failed inside a transition; the round goes to ``held``, and the
        engine action that fired the transition stops there (see :meth:`fire`)."""
        error = event.error
        self._faults.raise_fault(
            "integrity", f"round machine error: {type(error).__name__}: {error}", latching=True
        )
        if self.shown_state != m.HELD:
            self.fire("hold")  # queued: runs once the failed transition has unwound
        self._machine_failed = True

    def internal_error(self, error: BaseException) -> None:
        """An unexpected error inside the engine: a latching ``integrity`` fault, the table held."""
        self._faults.raise_fault("integrity", f"engine error: {type(error).__name__}: {error}", latching=True)
        try:
            if self.shown_state != m.HELD:
                self.hold_table()
        except Exception:  # the machine itself is broken: force the state, the fault is latched
            self.machine.set_state(self.ctx.definition.hold_target(self.state), model=self)

    def _triggers(self) -> frozenset[str]:
        return self._dispatch.triggers(self.state)

    def fire(self, trigger: str) -> None:
        if trigger not in self._triggers():
            raise RuntimeError(f"trigger {trigger!r} is not valid in state {self.state!r}")
        self._dispatch.trigger(trigger)
        if self._machine_failed:
            # The transition failed and the table is held: nothing after it may act (no Deal may go
            # out from a held table).
            self._machine_failed = False
            raise MachineHalted

    def deal_started(self) -> None:
        """The hole cards' Deal goes out: the bets are locked and the deck verified."""
        self.fire("start_deal")

    def deal_step_complete(self) -> None:
        """The deal step in flight is complete: its decision phase (or the reveal) follows."""
        self.fire("deal_complete")

    def can(self, trigger: str) -> bool:
        return trigger in self._triggers()

    def hold_table(self) -> None:
        """Hold the table (and the round, where it stands) for a supervisor."""
        if self.shown_state == m.HELD:
            return
        self.fire("hold")
        self.ctx.out.append(ShowText(self.ctx.config.display_device, "Table held: call a supervisor"))

    def resume_round(self) -> None:
        """The last latched fault is cleared: the round resumes where it was held, and what was waiting
        on the hold goes on."""
        ctx = self.ctx
        target = self.where
        self.fire("resume")
        self._bets.judge_spots_afresh()
        if target in (m.BETTING, m.BETS_LOCKED):
            # The shoe's state is unknown after a hold before the deal: shuffle a fresh deck.
            self._deal.shuffle_fresh_deck()
        live = ctx.round
        if target in ctx.definition.decision_states and live is not None:
            live.extend_decisions(ctx.now_s + ctx.config.decision_timeout_s)
        if target in ctx.definition.dealing_states and live is not None and live.deal and live.deal.done:
            self._deal.step_done()
        if target in (m.REVEAL, m.SETTLING) and live is not None:
            # Held while settling (an engine or settle error): settle (or pay) now.
            self.reveal_and_settle()

    # ------------------------------------------------------------------ opening and locking
    def why_not_start(self) -> str | None:
        """None when a round may start, else the reason it may not."""
        if self._faults.latched:
            return f"the table is held: {len(self._faults.latched)} latched fault(s) to clear"
        if not self._settings.table_open:
            return "the table is closed: a manager opens it"
        lost = self._faults.devices_not_ready()
        if lost:
            return f"device(s) not ready: {', '.join(lost)}"
        return self._bank.why_no_banker()

    def start_round(self, by: str) -> None:
        ctx = self.ctx
        if self._faults.latched:
            ctx.refuse(
                "start_round", f"the table is held: {len(self._faults.latched)} latched fault(s) to clear", by
            )
            return
        if not self._settings.table_open:
            ctx.refuse("start_round", "the table is closed: a manager opens it", by)
            return
        if self.shown_state != m.IDLE:
            ctx.refuse("start_round", f"a round is already in progress ({self.shown_state})", by)
            return
        why_not = self.why_not_start()
        if why_not is not None:
            ctx.refuse("start_round", why_not, by)
            return
        ctx.forget_round()
        self._bets.new_round()
        self.fire("open_betting")
        config = ctx.config
        ctx.out.append(UnlockBets(config.sensors_device))
        self._deal.shuffle_fresh_deck()
        if self._bank.button_seat is not None:
            ctx.out.append(ShowButton(config.display_device, self._bank.button_seat))
        ctx.out.append(
            ShowText(config.display_device, f"Place your bets{self._progressive.betting_opened()}")
        )

    def lock(self, wagers_by_seat: Mapping[int, Mapping[str, int]], by: str) -> None:
        """No more bets, accepted: the round starts with the seats that bet, and is dealt when the
        deck is verified."""
        ctx = self.ctx
        config = ctx.config
        number = ctx.number_next_round()
        # Dated by the gaming day (controller/locale.py), not the UTC date: a grave shift's rounds after
        # midnight carry the date of the gaming day they belong to.
        day = gaming_day_of(
            datetime.datetime.fromtimestamp(ctx.now_s, tz=datetime.UTC), config.property_settings
        )
        round_id = format_round_id(config.table_id, day, number)
        banking = self._bank.banking()
        seats = {seat: SeatPlay(seat, dict(wagers)) for seat, wagers in sorted(wagers_by_seat.items())}
        button_seat = self._bank.button_seat
        ctx.lock_round(LiveRound(round_id, banking, button_seat, seats))
        # round_started first: every later entry of the round, the state change included, follows it.
        ctx.journal(
            e.RoundStarted(
                round_id=round_id,
                game=config.game,
                banking=dict(banking),
                button_seat=button_seat,
                seats=sorted(seats),
            )
        )
        self.fire("lock_bets")
        ctx.journal(
            e.BetsLocked(wagers={str(seat): dict(play.wagers) for seat, play in sorted(seats.items())}),
            source=operator(by) if by != ENGINE else ENGINE,
        )
        if banking["mode"] == DESIGNATED_PLAYER:
            self._bank.check_coverage()
        ctx.out.append(LockBets(config.sensors_device))
        ctx.out.append(ShowText(config.display_device, "No more bets"))
        self._progressive.after_lock()
        self._deal.maybe_start()

    # ------------------------------------------------------------------ streets, reveal, settle, pay
    def tick(self) -> None:
        """Time passes: a deal whose shoe went silent is a misdeal (deal_timeout_s); a decision phase
        past its deadline closes (the walk-away rule)."""
        self._deal.check_timeout()
        self._decisions.check_timeout()
        self._bank.check_offer_timeout(
            table_open_and_not_held=self._settings.table_open and not self._faults.latched
        )
        self._progressive.tick()

    def decisions_closed(self) -> None:
        """A decision phase closed: deal the next street, or reveal."""
        self.fire("close_decisions")
        if self.state in (m.DEALING_FLOP, m.DEALING_TURN_RIVER):
            self._deal.send([(COMMUNITY_POSITION, 2)])
        elif self.state == m.REVEAL:
            self.reveal_and_settle()

    def reveal_and_settle(self) -> None:
        ctx = self.ctx
        live = ctx.round
        assert live is not None
        if self.state == m.REVEAL:
            self.fire("settle")
        settlement = live.settlement
        if settlement is None:  # (held after round_settled was journaled: it is never settled twice)
            round_obj, round_ = self._settling.settle_round()
            settlement = settle(round_)
            live.close(settlement)  # the round is closed
            # bank_by_seat: designated player only, the bank after each seat is paid.
            ctx.journal(e.round_settled(round_obj, settlement.to_json(), bank_by_seat(settlement)))
            # The round's Progressive: contributed and claimed once, with the round's settlement.
            self._progressive.after_settlement(live.round_id, settlement.progressive)
        self.fire("pay")
        self._show_results(settlement)
        ctx.out.append(ShowText(ctx.config.display_device, "Pay and collect, then press next"))

    def _show_results(self, settlement: Settlement) -> None:
        ctx = self.ctx
        display = ctx.config.display_device
        spot_of = {wager: spot for spot, wager in enumerate(ctx.spot_wagers)}  # (not .index per wager)
        for seat in settlement.seats:
            if seat.status == "dead":
                ctx.out.append(ShowSeatResult(display, seat.seat, "dead", 0))
                continue
            net = seat.net_cents
            result: Literal["win", "lose", "push", "folded"] = (
                "folded" if seat.status == "folded" else "win" if net > 0 else "lose" if net < 0 else "push"
            )
            ctx.out.append(ShowSeatResult(display, seat.seat, result, net))
            for wager in seat.wagers:
                colour: SpotLampColour = (
                    "win" if wager.result == "win" else "lose" if wager.result == "lose" else "push"
                )
                spot = spot_of[wager.wager]
                ctx.out.append(SetSpotLamp(ctx.config.sensors_device, seat.seat, spot, colour))

    def payouts_done(self, by: str) -> None:
        if self.state != m.PAYING:
            self.ctx.refuse("payouts_done", f"nothing to pay ({self.shown_state})", by)
            return
        self.fire("finish")
        self._after_round_closed(hand_played=True)

    def _after_round_closed(self, *, hand_played: bool) -> None:
        """The round is closed (settled, dead or voided): rotate the button, then idle or held."""
        self._bank.after_round(hand_played=hand_played)
        self._bets.clear_empty_spots()
        if self._faults.latched:
            self.fire("hold")  # from complete or dead: held between rounds
        else:
            self.fire("next_round")
        self._bets.judge_spots_afresh()

    # ------------------------------------------------------------------ dead and voided rounds
    def kill_round(
        self, reason: str, *, code: e.ReasonCode = "card_count", private: e.ReasonDetail | None = None
    ) -> None:
        """docs/rules.md: the whole round is dead, every wager returned, the table held until cleared.

        ``reason`` is public (journaled, shown, no card); what the deal knew of the cards (which card,
        where) is ``private``: journaled in the entries' private parts, never shown (a dead round is
        never revealed)."""
        ctx = self.ctx
        live = ctx.round
        if live is None or live.closed:
            return
        why = e.Reason(code=code, message=reason)
        ctx.journal(e.DeadHand(seat=None, reason=why, private=private))
        kind = "red_light" if code == "red_light" else "dead_hand"
        self._faults.raise_fault(kind, f"round dead: {reason}", latching=True, code=code, private=private)
        round_obj, round_ = self._settling.settle_round(dead=True)
        settlement = settle(round_)
        live.close(settlement)  # the round is closed, dead
        ctx.journal(
            e.RoundDead(round=round_obj, settlement=settlement.to_json(), reason=why, private=private)
        )
        self.fire("kill")
        for number in sorted(live.seats):
            ctx.out.append(ShowSeatResult(ctx.config.display_device, number, "dead", 0))
        ctx.out.append(ShowText(ctx.config.display_device, "Round dead: every wager is returned"))
        self._after_round_closed(hand_played=False)

    def _void_round(self, reason: str, by: str) -> None:
        ctx = self.ctx
        live = ctx.round
        open_round = live is not None and not live.closed
        betting_only = not open_round and self.where == m.BETTING
        if not self.can("void") or not (open_round or betting_only):
            ctx.refuse("void_round", f"no open round to void ({self.shown_state})", by)
            return
        if not reason.strip():
            ctx.refuse("void_round", "a reason is required", by)
            return
        ctx.journal(e.VoidOrdered(by=by, reason=reason), source=operator(by))
        if open_round and live is not None:
            round_obj, round_ = self._settling.settle_round(dead=True)
            settlement = settle(round_)
            live.close(settlement)  # closed, as a dead round: its cards are not shown either
            ctx.journal(
                e.RoundVoided(round=round_obj, settlement=settlement.to_json(), reason=reason, by=by),
                source=operator(by),
            )
        self.fire("void")
        ctx.out.append(ShowText(ctx.config.display_device, "Round void: every wager is returned"))
        self._after_round_closed(hand_played=False)
