"""The button and the designated player's bank: who is offered the button, who accepted it with what
funds, who waived; whether the house banks this round; which seats the bank covers at the lock; and
where the button goes after a round (docs/engine.md "Designated player").

On a house-banked table only the button seat is kept (``move_button``); every designated-player action
is refused there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.context import ENGINE, TableContext, operator
from controller.engine.state import DESIGNATED_PLAYER, HOUSE, RecoveredState
from controller.journal import entries as e
from controller.money import money
from controller.rules.games import clockwise_from
from controller.rules.paytables import Paytable, default_paytable, parse_paytable
from controller.rules.settle import NOT_COVERED, bonus_top_cents, cover_seats
from drivers.events import DpBankKeyed, ShowButton, ShowSeatResult, ShowText


class Bank:
    """The button and the designated player's bank."""

    def __init__(self, ctx: TableContext, recovered: RecoveredState) -> None:
        self.ctx = ctx
        config = ctx.config
        self.button_seat: int | None = recovered.button_seat
        # Designated player: the seat the button is offered to, who accepted with what funds, who waived.
        self.dp_seat: int | None = None
        self.dp_funds_cents = 0
        # The bank lies on the DP's bank spot (the spot held at least the bank when it was accepted, or
        # reached it before the lock: bank_spot_read): the chips the settlement counts on are on the
        # felt, so they may not leave it before the reveal. Never set for a bank whose chips never reach
        # the spot before the lock (a table without a bank spot): that bank is unguarded.
        self.bank_on_spot = False
        # The chips on each seat's bank spot (the bets' BANK_SPOT), as the bet sensors last read them and
        # the bets passed on (bank_spot_read): the bank a player posts when it accepts the button by the
        # dealer's key (docs/rules.md "Designated player").
        self.bank_spots: dict[int, int] = {}
        self.dp_waived: set[int] = set()
        self.dp_offer_seat: int | None = None
        # When the offer to dp_offer_seat lapses into a waive ([timeouts] dp_offer_s); None: not timed yet
        # (the clock starts at the first tick the table could start a round, not while it is closed).
        self.offer_deadline_s: float | None = None
        # The seats where someone sits, as the table last saw it: the seats that played the last settled
        # round (and its DP). None until a round was played: every seat. docs/rules.md "An empty seat is
        # never offered the button"; the sensors see chips, not people, so a seat that took no part in
        # the last hand counts as empty unless chips lie on its bank spot (docs/engine.md).
        self.occupied: set[int] | None = None
        self.house_banks = False  # DP table, nobody accepted, the house may bank: this round is house-banked
        if config.banking_mode == DESIGNATED_PLAYER:
            if self.button_seat not in config.seats:
                self.dp_offer_seat = config.seats[0]
            elif recovered.button_moves_on and self.button_seat is not None:
                self.dp_offer_seat = self._next_seat(self.button_seat)
            else:
                self.dp_offer_seat = self.button_seat

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            a.DpAccepts: lambda action: self._dp_accepts(action.funds_cents, action.by, action.seat),
            a.DpWaives: lambda action: self.dp_waives(action.by),
            a.MoveButton: lambda action: self._move_button(action.seat, action.by),
            DpBankKeyed: self._on_bank_keyed,
        }

    def accept_from_bank_spot(self, by: str) -> a.DpAccepts | None:
        """The dealer's ``dp_accepts`` key: the offered player accepts with the chips on its bank spot.
        None (refused, with the reason on the display) when the spot holds nothing."""
        ctx = self.ctx
        seat = self.dp_offer_seat
        if ctx.config.banking_mode != DESIGNATED_PLAYER or seat is None or self.dp_seat is not None:
            return a.DpAccepts(0, by, seat)  # refused by the accept itself, in its words
        funds = self.bank_spots.get(seat, 0)
        if funds <= 0:
            why = f"seat {seat} has no chips on its bank spot: place the bank there or key the amount"
            ctx.refuse("dp_accepts", why, by)
            ctx.out.append(ShowText(ctx.config.display_device, f"Refused: {why}"))
            return None
        return a.DpAccepts(funds, by, seat)

    def bank_spot_read(self, seat: int, amount_cents: int, *, before_lock: bool) -> None:
        """The bet sensors read ``amount_cents`` on ``seat``'s bank spot. A bank keyed (or accepted on the
        panel) before its chips were placed: once the spot holds the posted bank before the lock, it is
        held to the spot from then on, as a bank posted on the spot (the lock refuses it short; after the
        lock a drop is past-posting)."""
        self.bank_spots[seat] = amount_cents
        if (
            seat == self.dp_seat
            and not self.bank_on_spot
            and amount_cents >= self.dp_funds_cents
            and before_lock
        ):
            self.bank_on_spot = True

    def bank_spot(self, seat: int) -> int:
        """The chips the sensors last read on ``seat``'s bank spot."""
        return self.bank_spots.get(seat, 0)

    def _on_bank_keyed(self, event: DpBankKeyed) -> None:
        """The dealer keyed the bank the offered player posts and pressed accept."""
        ctx = self.ctx
        ctx.journal(e.DealerKey(key="dp_accepts", seat=event.seat), source=event.device)
        if event.amount_cents <= 0:
            why = "a keyed bank of 0: key the amount the player posts"
            ctx.refuse("dp_accepts", why, "dealer")
            ctx.out.append(ShowText(ctx.config.display_device, f"Refused: {why}"))
            return
        self._dp_accepts(event.amount_cents, "dealer", event.seat)

    def bank_short_on_spot(self) -> int | None:
        """The chips on the DP's bank spot when they are fewer than the bank it posted there (the DP took
        some back), else None. Coverage and the payout count on the posted bank: it must be on the felt."""
        if self.dp_seat is None or not self.bank_on_spot or self.banking_mode() != DESIGNATED_PLAYER:
            return None
        seen = self.bank_spots.get(self.dp_seat, 0)
        return seen if seen < self.dp_funds_cents else None

    def banking_mode(self) -> str:
        """This round's banking: the designated player's, or the house's (house table, or nobody took
        the button and the house may bank)."""
        if self.ctx.config.banking_mode == DESIGNATED_PLAYER and not self.house_banks:
            return DESIGNATED_PLAYER
        return HOUSE

    def banking(self) -> dict[str, object]:
        """The settle input's ``banking`` for a round locked now."""
        banking: dict[str, object] = {"mode": self.banking_mode()}
        if self.banking_mode() == DESIGNATED_PLAYER:
            banking["seat"] = self.dp_seat
            banking["funds"] = self.dp_funds_cents
            if self.ctx.config.bonus_cap_cents is not None:
                banking["bonus_cap"] = self.ctx.config.bonus_cap_cents
        return banking

    def why_no_banker(self) -> str | None:
        """None when the round has a banker, else why it may not start."""
        if (
            self.ctx.config.banking_mode == DESIGNATED_PLAYER
            and self.dp_seat is None
            and not self.house_banks
        ):
            if self.dp_offer_seat is None:
                return "nobody accepted the designated player's button and the house may not bank"
            return f"the button is offered to seat {self.dp_offer_seat}: accept or waive first"
        return None

    def _next_seat(self, seat: int) -> int:
        """The next seat clockwise that is not empty (seats are numbered clockwise); the next configured
        seat when every other seat is empty."""
        order = clockwise_from(seat, self.ctx.config.seats)
        seated = [other for other in order if self.is_occupied(other)]
        return seated[0] if seated else order[0]

    def is_occupied(self, seat: int) -> bool:
        """Someone sits there: it played the last settled round, or chips lie on its bank spot."""
        if self.occupied is None or seat in self.occupied:
            return True
        return self.bank_spots.get(seat, 0) > 0

    def check_coverage(self) -> None:
        """Designated player: take seats into action in order while the DP's bank covers each seat's
        largest possible win — ante, the largest raise, and its bonus wagers' top payouts, the bonus part
        bounded by the aggregate cap (docs/rules.md "Designated player"); an uncovered seat is dead. The
        settle engine's own ``cover_seats`` decides, on the paytables the round settles by, so the lock
        and the settlement always agree."""
        ctx = self.ctx
        live = ctx.round
        assert live is not None
        assert self.dp_seat is not None
        antes = {number: play.wagers["ante"] for number, play in live.seats.items()}
        tops = {
            number: bonus_top_cents(play.wagers, self._paytable, ctx.spec)
            for number, play in live.seats.items()
        }
        coverage = cover_seats(
            ctx.config.game,
            self.dp_seat,
            self.dp_funds_cents,
            antes,
            bonus_tops_cents=tops,
            bonus_cap_cents=ctx.config.bonus_cap_cents,
        )
        for number in coverage.action_order:
            if number in coverage.covered:
                continue
            live.seats[number].leave_uncovered(NOT_COVERED)
            ctx.journal(
                e.DeadHand(seat=number, reason=e.Reason(code="not_covered", message=NOT_COVERED, seat=number))
            )
            ctx.out.append(ShowSeatResult(ctx.config.display_device, number, "dead", 0))

    def _paytable(self, wager: str) -> Paytable:
        """The paytable a designated-player round settles ``wager`` by (the settle input's)."""
        config = self.ctx.config
        given = config.paytables.get(wager)
        if given is None:
            return default_paytable(config.game, DESIGNATED_PLAYER, wager)
        return parse_paytable(given, field=f"paytables.{wager}")

    def check_offer_timeout(self, *, table_open_and_not_held: bool) -> None:
        """docs/rules.md: a player waives by the dealer's key "or the offer's timeout". The offer's clock
        runs only while a round could start (idle, the table open, nothing latched: the round flow,
        which asks, knows the last two): a closed or held table does not walk the button round the table."""
        ctx = self.ctx
        waiting = (
            ctx.config.banking_mode == DESIGNATED_PLAYER
            and self.dp_seat is None
            and self.dp_offer_seat is not None
            and ctx.state == m.IDLE
            and table_open_and_not_held
        )
        if not waiting:
            self.offer_deadline_s = None
            return
        if self.offer_deadline_s is None:
            self.offer_deadline_s = ctx.now_s + ctx.config.dp_offer_timeout_s
            return
        if ctx.now_s >= self.offer_deadline_s:
            self.dp_waives("timeout", timed_out=True)

    def after_round(self, *, hand_played: bool) -> None:
        """The button moves "hand by hand": only after a hand was played and settled. After a dead or
        voided round (a misdeal) the same designated player keeps the button and its funds for the
        replay, as a cardroom redeals a misdeal with the button where it was."""
        config = self.ctx.config
        if config.banking_mode != DESIGNATED_PLAYER or not hand_played:
            return
        last = self.dp_seat if self.dp_seat is not None else self.button_seat
        live = self.ctx.round
        if live is not None:
            self.occupied = set(live.seats) | ({last} if last is not None else set())
        self._offer_anew(self._next_seat(last) if last is not None else config.seats[0])
        # The display walks the dealer through the offer: who is asked next.
        self.ctx.out.append(ShowText(config.display_device, f"Button offered to seat {self.dp_offer_seat}"))

    def _offer_anew(self, seat: int) -> None:
        """Nobody holds the bank; the button is offered to ``seat`` first, nobody has waived yet."""
        self.dp_seat = None
        self.dp_funds_cents = 0
        self.bank_on_spot = False
        self.dp_waived.clear()
        self.house_banks = False
        self.dp_offer_seat = seat
        self.offer_deadline_s = None

    def _dp_accepts(self, funds_cents: int, by: str, seat: int | None) -> None:
        ctx = self.ctx
        if ctx.config.banking_mode != DESIGNATED_PLAYER:
            ctx.refuse("dp_accepts", "this table is house-banked", by)
            return
        if ctx.state not in (m.IDLE, m.BETTING):
            ctx.refuse("dp_accepts", f"the button moves only between rounds ({ctx.state})", by)
            return
        if self.dp_seat is not None:
            ctx.refuse("dp_accepts", f"seat {self.dp_seat} already holds the button", by)
            return
        offered = self.dp_offer_seat
        if offered is None:
            ctx.refuse("dp_accepts", "nobody is offered the button (everyone waived)", by)
            return
        if seat is not None and seat != offered:
            ctx.refuse("dp_accepts", f"the button is offered to seat {offered}, not seat {seat}", by)
            return
        if isinstance(funds_cents, bool) or not isinstance(funds_cents, int) or funds_cents <= 0:
            ctx.refuse("dp_accepts", f"funds_cents: must be a positive integer, not {funds_cents!r}", by)
            return
        if funds_cents < ctx.config.min_bank_cents:
            minimum = money(ctx.config.min_bank_cents)
            why = f"a bank of {money(funds_cents)} is below the table's minimum bank {minimum}"
            ctx.refuse("dp_accepts", why, by)
            ctx.out.append(ShowText(ctx.config.display_device, f"Refused: {why}"))
            return
        self.dp_seat = offered
        self.dp_funds_cents = funds_cents
        self.bank_on_spot = self.bank_spots.get(offered, 0) >= funds_cents
        self.offer_deadline_s = None
        self.house_banks = False
        previous = self.button_seat
        self.button_seat = offered
        ctx.journal(
            e.ButtonMoved(
                from_seat=previous, to_seat=offered, reason=f"accepted, funds {money(funds_cents)}", by=by
            ),
            source=operator(by),
        )
        ctx.out.append(ShowButton(ctx.config.display_device, offered))

    def dp_waives(self, by: str, *, timed_out: bool = False) -> None:
        """The offered player waives (the dealer's key, a supervisor), or the offer timed out."""
        ctx = self.ctx
        if ctx.config.banking_mode != DESIGNATED_PLAYER:
            ctx.refuse("dp_waives", "this table is house-banked", by)
            return
        if ctx.state not in (m.IDLE, m.BETTING) or self.dp_seat is not None:
            ctx.refuse("dp_waives", "the button is not on offer", by)
            return
        offered = self.dp_offer_seat
        if offered is None:
            ctx.refuse("dp_waives", "nobody is offered the button", by)
            return
        self.dp_waived.add(offered)
        self.offer_deadline_s = None  # the next offer gets its own time
        ctx.journal(e.DpWaived(seat=offered), source=ENGINE if timed_out else operator(by))
        if timed_out:
            ctx.out.append(
                ShowText(ctx.config.display_device, f"Seat {offered}: no answer, the button is waived")
            )
        candidates = [
            seat
            for seat in clockwise_from(offered, ctx.config.seats)
            if seat not in self.dp_waived and self.is_occupied(seat)
        ]
        if not candidates:
            self.dp_offer_seat = None
            if ctx.config.house_may_bank:
                self.house_banks = True
                message = "nobody accepted the button: the house banks this round"
            else:
                message = "nobody accepted the button: the round cannot start"
            ctx.alert("info", "designated_player", message)
            ctx.out.append(ShowText(ctx.config.display_device, message))
            return
        following = candidates[0]
        self.dp_offer_seat = following
        ctx.out.append(ShowText(ctx.config.display_device, f"Button offered to seat {following}"))

    def _move_button(self, seat: int, by: str) -> None:
        ctx = self.ctx
        if seat not in ctx.config.seats:
            ctx.refuse("move_button", f"seat {seat} is not a seat of this table", by)
            return
        if ctx.state not in (m.IDLE, m.HELD) or (ctx.state == m.HELD and ctx.where != m.IDLE):
            ctx.refuse("move_button", f"the button moves only between rounds ({ctx.state})", by)
            return
        previous = self.button_seat
        self.button_seat = seat
        if ctx.config.banking_mode == DESIGNATED_PLAYER:
            self._offer_anew(seat)
        ctx.journal(
            e.ButtonMoved(from_seat=previous, to_seat=seat, reason="moved by a supervisor", by=by),
            source=operator(by),
        )
        ctx.out.append(ShowButton(ctx.config.display_device, seat))
