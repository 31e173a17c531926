"""The deal, and the one owner of its integrity: what each position was due and got, every card seen
once in the round, each position's cards in order and complete, the shoe's silence, and what the shoe's
own faults mean for the round (docs/engine.md "Dead hands" and "Who checks the deal").

The shuffler driver (drivers/shuffler.py) reads the shoe's protocol and reports what it saw as domain
events (``CardDealt``, ``HandComplete``, ``ShufflerFault``), unjudged; this part judges them against the
deal the engine asked for (``DealLedger`` binds each place of it once). docs/rules.md: a seat dealt the
wrong number is dead and the round goes on; the banker's or the community's wrong count, a card seen
twice, or the shoe stopping mid-deal kills the round.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.engine import machine as m
from controller.engine.context import TableContext
from controller.engine.doors import DealsCourse, JudgesShoeFaults, OpensDecisions, RaisesFaults
from controller.engine.ledger import DealLedger
from controller.engine.round import DEAD, LiveRound
from controller.engine.state import DESIGNATED_PLAYER
from controller.journal import entries as e
from controller.rules.cards import CARD_TEXTS, DECK_SIZE, card_text
from controller.rules.games import clockwise_from
from drivers.events import (
    COMMUNITY_POSITION,
    DEALER_POSITION,
    CardDealt,
    Deal,
    DealStateReported,
    DeckVerified,
    HandComplete,
    ShowSeatResult,
    Shuffle,
)


class DealPart:
    """The deck, the deal steps in flight and their integrity."""

    # The door built after the deal (it asks the deal for a position's wrong count): by ``connect``.
    _shoe_faults: JudgesShoeFaults

    def __init__(
        self, ctx: TableContext, *, faults: RaisesFaults, flow: DealsCourse, decisions: OpensDecisions
    ) -> None:
        """Its doors: ``faults`` (raise one), ``flow`` (the deal started, a step complete, hold the table,
        kill the round), ``decisions`` (open the phase a complete step leads to)."""
        self.ctx = ctx
        self._faults = faults
        self._flow = flow
        self._decisions = decisions
        self.deck_verified = False  # a verified deck waits for the next round (one deck, one round)
        self.ledger = DealLedger()  # the shoe's reports for the deal last asked of it

    def connect(self, *, shoe_faults: JudgesShoeFaults) -> None:
        """``shoe_faults``: a report the ledger refuses is judged as the shoe fault it amounts to."""
        self._shoe_faults = shoe_faults

    def forget_verified_deck(self) -> None:
        """The shoe faulted before the deal: the deck it verified is not dealt from."""
        self.deck_verified = False

    def shoe_restarted(self) -> None:
        """A Shuffle or a reset went to the shoe: the last deal's places and cards are forgotten."""
        self.ledger.start({})

    def shuffle_fresh_deck(self) -> None:
        """Ask the shoe to shuffle a fresh deck (a new round's; or after a hold before the deal, when the
        shoe's state is unknown): nothing is dealt until that deck is verified (DeckVerified), and the
        last deal's places and cards are forgotten."""
        self.deck_verified = False
        self.ctx.out.append(Shuffle(self.ctx.config.shuffler_device))
        self.shoe_restarted()

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            DeckVerified: self._on_deck_verified,
            CardDealt: self._on_card_dealt,
            HandComplete: self._on_hand_complete,
            DealStateReported: self._on_deal_state_reported,
        }

    @property
    def finished(self) -> bool:
        """Every card of the round is dealt: the round stands (or is held) past its last deal step."""
        return self.ctx.where in self.ctx.definition.dealt_states

    def _dealing_now(self) -> bool:
        """A Deal is in flight: in a dealing state, or held from one (the shoe does not stop)."""
        live = self.ctx.round
        if live is None or live.deal is None or live.closed:
            return False
        return self.ctx.where in self.ctx.definition.dealing_states

    # ------------------------------------------------------------------ starting a deal
    def _on_deck_verified(self, event: DeckVerified) -> None:
        ctx = self.ctx
        ctx.journal(
            e.DeckVerified(
                card_count=event.card_count,
                missing_count=len(event.missing_cards),
                extra_count=len(event.extra_cards),
                private=e.DeckVerifiedPrivate(
                    missing=[card_text(c) for c in event.missing_cards if 0 <= c < DECK_SIZE],
                    extra=[card_text(c) for c in event.extra_cards if 0 <= c < DECK_SIZE],
                ),
            ),
            source=event.device,
        )
        if not event.complete:
            self.deck_verified = False
            self._faults.raise_fault(
                "deck_verification",
                f"the shoe read {event.card_count} cards, {len(event.missing_cards)} missing, "
                f"{len(event.extra_cards)} read twice",
                latching=True,
                device=event.device,
                source=event.device,
            )
            if ctx.state in (m.BETTING, m.BETS_LOCKED):
                self._flow.hold_table()
            return
        if ctx.state in (m.IDLE, m.BETTING, m.BETS_LOCKED):
            self.deck_verified = True
        self.maybe_start()

    def maybe_start(self) -> None:
        """Deal the hole cards once the bets are locked and the deck is verified."""
        ctx = self.ctx
        if ctx.state != m.BETS_LOCKED or not self.deck_verified or ctx.round is None:
            return
        live = ctx.round
        # An uncovered seat is dead from the lock: it is not dealt (as a dealer deals no dead seat).
        positions: list[tuple[int, int]] = [
            (number, ctx.spec.hole_cards) for number in self.deal_order() if live.seats[number].covered
        ]
        positions.append((DEALER_POSITION, ctx.spec.hole_cards))
        self.deck_verified = False  # one deck, one round
        self._flow.deal_started()
        self.send(positions)

    def deal_order(self) -> tuple[int, ...]:
        """The round's seats in the order they are dealt, the banker after them (docs/rules.md "The button
        and the deal"): at a designated-player round from the first seat to the left of the button
        (the DP's seat) clockwise, the DP's hand last as the banker's; at a house-banked table from the
        dealer's left, seat 1 first (seats are numbered clockwise from the dealer's left)."""
        live = self.ctx.round
        assert live is not None
        dp_seat = live.banking.get("seat") if live.banking.get("mode") == DESIGNATED_PLAYER else None
        if isinstance(dp_seat, int):
            return clockwise_from(dp_seat, list(live.seats))
        return tuple(sorted(live.seats))

    def send(self, positions: list[tuple[int, int]]) -> None:
        ctx = self.ctx
        assert ctx.round is not None
        ctx.round.ask_deal(dict(positions), ctx.now_s + ctx.config.deal_timeout_s)
        ctx.out.append(Deal(ctx.config.shuffler_device, tuple(positions)))
        self.ledger.start(dict(positions))

    # ------------------------------------------------------------------ cards and counts
    def _on_card_dealt(self, event: CardDealt) -> None:
        refused = self.ledger.card(event)
        if refused is not None:
            # Not bound to its place: the fault it is, judged as the shoe's own (never journaled as dealt).
            self._shoe_faults.judge(refused)
            return
        self._judge_card(event)

    def _judge_card(self, event: CardDealt) -> None:
        ctx = self.ctx
        position = event.position
        card_ok = 0 <= event.card < DECK_SIZE
        ctx.journal(
            e.CardDealt(
                private=e.CardDealtPrivate(
                    position=position,
                    index=event.index,
                    card=CARD_TEXTS[event.card] if card_ok else None,
                )
            ),
            source=event.device,
        )
        live = ctx.round
        step = live.deal if live is not None else None
        # (~50 cards a round: the round's properties read inline; the same tests as closed_dead,
        # _shoe_reported and _dealing_now)
        settlement = live.settlement if live is not None else None
        if step is not None and settlement is not None and settlement.dead:
            return  # the rest of a dead round's deal: journaled, never judged or shown
        if step is not None and settlement is None:
            assert live is not None
            live.shoe_alive(ctx.now_s + ctx.config.deal_timeout_s)

        if (
            live is None
            or step is None
            or settlement is not None
            or self._flow.where not in ctx.definition.dealing_states  # (the flow's door: ~50 cards a round)
        ):
            self._card_outside_deal(event, card_ok)
            return
        if not card_ok:
            self.wrong_count(
                event.position, "an unreadable card", code="card_misread", private=_card_private(event)
            )
            return
        if event.card in live.seen_cards:
            self._flow.kill_round(
                "a card seen twice during the deal", code="card_repeated", private=_card_private(event)
            )
            return
        live.see(event.card)
        if event.position not in step.expected:
            self._outside_step(
                live,
                event,
                "a card dealt to a position not in this deal",
                "a card dealt to a position not in the round",
                code="card_outside_round",
                private=_card_private(event),
            )
            return
        received = live.bind_card(step, position, event.card)
        if event.position in step.completed:
            self.wrong_count(event.position, "a card dealt after the position was complete")
        elif event.index != len(received) - 1:
            self.wrong_count(
                event.position,
                "a card out of order",
                code="card_out_of_order",
                private=e.ReasonDetail(
                    position=event.position,
                    index=event.index,
                    message=f"card index {event.index} where {len(received) - 1} was due",
                ),
            )
        elif len(received) > step.expected[event.position]:
            self.wrong_count(
                event.position, f"{len(received)} cards dealt, {step.expected[event.position]} due"
            )

    def _on_hand_complete(self, event: HandComplete) -> None:
        stands, fault = self.ledger.hand_complete(event)
        if stands:
            self._judge_hand_complete(event)
        if fault is not None:
            self._shoe_faults.judge(fault)

    def _judge_hand_complete(self, event: HandComplete) -> None:
        ctx = self.ctx
        ctx.journal(e.HandComplete(position=event.position, card_count=event.card_count), source=event.device)
        live = ctx.round
        if live is not None and live.closed_dead and live.deal is not None:
            return  # the rest of a dead round's deal
        self._shoe_reported()
        step = live.deal if live is not None else None
        if live is None or step is None or not self._dealing_now():
            self._faults.raise_fault(
                "integrity",
                f"hand complete for position {event.position} outside a deal",
                latching=False,
                device=event.device,
                source=event.device,
            )
            return
        if event.position not in step.expected:
            self._outside_step(
                live,
                event,
                "hand complete for a position not in this deal",
                f"hand complete for position {event.position}, which is not in the round",
            )
            return
        if event.position in step.completed:
            self.wrong_count(event.position, "hand complete reported twice")
            return
        step.complete(event.position)
        due = step.expected[event.position]
        got = len(step.received.get(event.position, ()))
        if event.card_count != due:
            self.wrong_count(event.position, f"the shoe counted {event.card_count} cards, {due} due")
        elif got != due:
            self.wrong_count(event.position, f"{got} cards read, {due} due")
        if step.done and ctx.state in ctx.definition.dealing_states:
            self.step_done()
        # Held mid-deal (past-posting, a lost sensor): the shoe finishes the step; the round moves on
        # from it when the supervisor clears the hold (RoundFlow.resume).

    def _outside_step(
        self,
        live: LiveRound,
        event: CardDealt | HandComplete,
        not_in_step: str,
        not_in_round: str,
        *,
        code: e.ReasonCode | None = None,
        private: e.ReasonDetail | None = None,
    ) -> None:
        """A card or a hand complete for a position this step of the deal does not include: a wrong count
        when the round deals to the position (at another step), else an integrity fault (no such place)."""
        if live.deals_to(event.position):
            self.wrong_count(event.position, not_in_step)
        else:
            self._faults.raise_fault(
                "integrity", not_in_round, latching=False, device=event.device, code=code, private=private
            )

    def wrong_count(
        self,
        position: int,
        detail: str,
        *,
        code: e.ReasonCode = "card_count",
        private: e.ReasonDetail | None = None,
    ) -> None:
        """docs/rules.md: a seat dealt the wrong number is dead; the banker or the community: the round is.
        ``detail`` is public (no card); ``private`` carries what the deal knew of the cards."""
        ctx = self.ctx
        live = ctx.round
        assert live is not None
        if not live.judge_wrong_count(position):
            return  # already judged (the shoe's count and the ledger's card_count fault say it twice)
        if position in (DEALER_POSITION, COMMUNITY_POSITION):
            self._flow.kill_round(
                f"wrong card count for {ctx.position_name(position)}: {detail}", code=code, private=private
            )
            return
        play = live.seats.get(position)
        if play is None or play.status == DEAD:
            return
        dead_reason = f"wrong card count: {detail}"
        play.kill(dead_reason)
        ctx.journal(
            e.DeadHand(
                seat=position,
                reason=e.Reason(code=code, message=dead_reason, seat=position),
                private=private,
            )
        )
        self._faults.raise_fault(
            "dead_hand", f"seat {position}: {dead_reason}", latching=False, code=code, private=private
        )
        ctx.out.append(ShowSeatResult(ctx.config.display_device, position, "dead", 0))

    def step_done(self) -> None:
        """The deal step in flight is complete: the next decision phase opens."""
        ctx = self.ctx
        live = ctx.round
        assert live is not None
        live.deal_step_done()
        self._flow.deal_step_complete()
        self._decisions.open()

    def _card_outside_deal(self, event: CardDealt, card_ok: bool) -> None:
        """A card with no deal in flight for it (between rounds, a closed round, not a dealing state)."""
        ctx = self.ctx
        live = ctx.round
        # Where the card went is the card's business: private, with the card.
        self._faults.raise_fault(
            "integrity",
            "a card dealt outside a deal",
            latching=False,
            device=event.device,
            source=event.device,
            code="card_outside_round",
            private=_card_private(event),
        )
        if live is not None and card_ok:
            if event.card in live.seen_cards and not live.closed:
                self._flow.kill_round(
                    "a card seen twice during the deal",
                    code="card_repeated",
                    private=_card_private(event),
                )
                return
            live.see(event.card)

    # ------------------------------------------------------------------ a shoe that stops
    def _shoe_reported(self) -> None:
        """The shoe is alive: the deal's silence deadline starts again from now."""
        ctx = self.ctx
        live = ctx.round
        if live is not None and live.deal is not None and not live.closed:
            live.shoe_alive(ctx.now_s + ctx.config.deal_timeout_s)

    def check_timeout(self) -> None:
        """A deal in flight whose shoe has gone silent cannot be completed: the banker (dealt last)
        and any seat still short are dealt the wrong number, so the round is dead (docs/rules.md "Dead
        hands and walk-aways": the banker's wrong count kills the round) and the table is held for a
        supervisor."""
        ctx = self.ctx
        live = ctx.round
        if (
            live is None
            or live.closed
            or live.deal is None
            or live.deal_deadline_s is None
            or not self._dealing_now()
            or ctx.now_s < live.deal_deadline_s
        ):
            return
        self._end_incomplete(
            f"the shoe stopped reporting mid-deal: nothing for {ctx.config.deal_timeout_s:g} s"
        )

    def _on_deal_state_reported(self, event: DealStateReported) -> None:
        """The shoe's answer to the driver's question after a reconnect. A deal in flight that the shoe
        holds goes on (its remaining cards follow, or all have arrived: they precede the answer). One it
        does not hold - it never got the request, or lost it with its power, or a fault stopped it -
        can never complete: it ends now, as a silent shoe's would at deal_timeout_s."""
        ctx = self.ctx
        live = ctx.round
        if event.device != ctx.config.shuffler_device or live is None or live.deal is None:
            return
        if not self._dealing_now():
            return
        if event.deal in ("dealing", "complete") and dict(event.positions) == live.deal.expected:
            return
        self._end_incomplete(
            f"the shoe came back without this deal (it reports {event.deal}, "
            f"{event.cards_reported} cards reported)"
        )

    def _end_incomplete(self, why: str) -> None:
        """The deal in flight cannot be completed: the banker or the community short kills the round,
        seats short are dead hands and the round goes on."""
        ctx = self.ctx
        live = ctx.round
        assert live is not None
        assert live.deal is not None
        step = live.deal
        short = [position for position in step.expected if position not in step.completed]
        names = ", ".join(ctx.position_name(position) for position in short)
        if any(position in (DEALER_POSITION, COMMUNITY_POSITION) for position in short):
            self._flow.kill_round(f"{why}, {names} not complete (a misdeal)")
            return
        # The banker (and the community) are complete: only seats are short. docs/rules.md: a seat dealt the
        # wrong number is dead, the round goes on without it.
        for position in short:
            self.wrong_count(position, f"{why}, its hand not complete")
            step.complete(position)
        if step.done and ctx.state in ctx.definition.dealing_states:
            self.step_done()


def _card_private(event: CardDealt) -> e.ReasonDetail:
    """Which card, where: the private detail of a fault about a dealt card (made for a fault only)."""
    return e.ReasonDetail(card=event.card, position=event.position, index=event.index)
