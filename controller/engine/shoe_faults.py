"""The shuffler's faults, judged by where the round stands (docs/engine.md "Dead hands" and "Who checks
the deal"): the shoe's own reports (a red light, a jam, a misread, a card count, through the driver as
``ShufflerFault``) and the deal's ledger's refusals, which the deal passes on as the shoe fault they
amount to. A count while the deal is incomplete is that position's wrong count; a fault that stops the
deal is a misdeal (the round is dead); after the deal, an alert; before it, a latched fault and a hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.engine.context import TableContext
from controller.engine.doors import RaisesFaults, ShoeFaultsDeal, StopsRound
from controller.journal import entries as e
from drivers.events import COMMUNITY_POSITION, DEALER_POSITION, ShufflerFault

# What the shoe's faults are called in public text, and their reason codes (drivers' ShufflerFaultKind).
_SHOE_FAULT_WORDS: dict[str, str] = {
    "card_count": "a card count fault",
    "misread": "a misread",
    "red_light": "a red light",
    "jam": "a jam",
    "door_open": "the door open",
}
_SHOE_FAULT_CODES: dict[str, e.ReasonCode] = {
    "card_count": "card_count",
    "misread": "card_misread",
    "red_light": "red_light",
}


class ShoeFaults:
    """What each of the shuffler's faults means for the round."""

    def __init__(
        self, ctx: TableContext, *, faults: RaisesFaults, flow: StopsRound, deal: ShoeFaultsDeal
    ) -> None:
        """Its doors: ``faults`` (raise one), ``flow`` (kill the round, hold the table), ``deal`` (every
        card dealt?, a position's wrong count, forget the verified deck)."""
        self.ctx = ctx
        self._faults = faults
        self._flow = flow
        self._deal = deal

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {ShufflerFault: self.judge}

    def judge(self, event: ShufflerFault) -> None:
        """The shuffler's faults, judged by where the round stands (docs/engine.md "Dead hands").

        The shoe's own reports (through the driver) and the ledger's refusals (``DealLedger``):
        ``card_count`` at a position (an extra card, a gap in the indexes, a HandComplete count that
        differs from the request), ``misread`` (a card read twice or read differently; the card is
        withheld), and a jam, a door or a red light that stops the shoe's deal. What that means for the
        round is decided here, case by case: a count while the deal is incomplete
        (``_judge_count_fault``), a fault that stops the deal (``_stops_the_deal``), one after the deal
        or between rounds (``_outside_the_deal``).
        """
        fault = _ShoeFaultWords.of_event(event, self.ctx.position_name)
        live = self.ctx.round
        open_round = live is not None and not live.closed
        where = self.ctx.where
        definition = self.ctx.definition
        deal_active = (
            open_round and live is not None and live.deal is not None and where in definition.dealing_states
        )
        deal_incomplete = (
            open_round
            and not self._deal.finished
            and where in (*definition.dealing_states, *definition.decision_states)
        )
        if (
            event.fault == "card_count"
            and open_round
            and self._judge_count_fault(event, fault, in_deal=deal_active or deal_incomplete)
        ):
            return
        if self._stops_the_deal(event, fault, deal_active=deal_active, deal_incomplete=deal_incomplete):
            return
        self._outside_the_deal(event, fault, after_the_deal=open_round and self._deal.finished)

    def _judge_count_fault(self, event: ShufflerFault, fault: _ShoeFaultWords, *, in_deal: bool) -> bool:
        """``card_count`` at a position of the open round: an alert when the position is already judged,
        its wrong count while the deal is incomplete. True when judged here."""
        live = self.ctx.round
        position = event.position
        if position is None or live is None:
            return False
        if position in live.wrong_positions:
            self._faults.raise_fault(
                "shuffler_fault",
                fault.detail,
                latching=False,
                device=event.device,
                code=fault.code,
                private=fault.private,
            )
            return True
        round_position = position in (DEALER_POSITION, COMMUNITY_POSITION) or position in live.seats
        if in_deal and round_position:
            self._deal.wrong_count(
                position,
                f"the shoe reported a card count fault ({fault.detail})",
                code=fault.code,
                private=fault.private,
            )
            return True
        return False

    def _stops_the_deal(
        self, event: ShufflerFault, fault: _ShoeFaultWords, *, deal_active: bool, deal_incomplete: bool
    ) -> bool:
        """A red light before the round's last card, a misread or any stop while a deal is in flight: a
        misdeal, the round is dead (docs/rules.md). True when the round was killed."""
        kill = self._flow.kill_round
        if deal_incomplete and event.fault == "red_light":
            kill("shuffler red light during the deal", code="red_light", private=fault.private)
        elif deal_active and event.fault == "misread":
            kill("a card seen twice or misread during the deal", code=fault.code, private=fault.private)
        elif deal_active:
            kill(
                f"the shoe stopped mid-deal, a misdeal ({fault.detail})",
                code=fault.code,
                private=fault.private,
            )
        else:
            return False
        return True

    def _outside_the_deal(
        self, event: ShufflerFault, fault: _ShoeFaultWords, *, after_the_deal: bool
    ) -> None:
        """After the deal is complete a fault is an alert; before it (betting, waiting for the deck) it
        latches and holds the table."""
        if after_the_deal:
            self._faults.raise_fault(
                "shuffler_fault",
                f"after the deal: {fault.detail}",
                latching=False,
                device=event.device,
                code=fault.code,
                private=fault.private,
            )
            return
        kind = "red_light" if event.fault == "red_light" else "shuffler_fault"
        self._faults.raise_fault(
            kind,
            fault.detail,
            latching=True,
            device=event.device,
            source=event.device,
            code=fault.code,
            private=fault.private,
        )
        self._deal.forget_verified_deck()
        self._flow.hold_table()


@dataclass(frozen=True, slots=True)
class _ShoeFaultWords:
    """A shoe fault in words. Public (``detail``): the fault's kind, and the position only for a count (a
    seat dealt the wrong number is no card). Private: everything the shoe said (its words may name a
    card), with the position."""

    detail: str
    code: e.ReasonCode
    private: e.ReasonDetail

    @classmethod
    def of_event(cls, event: ShufflerFault, position_name: Callable[[int], str]) -> _ShoeFaultWords:
        where = f" at {position_name(event.position)}" if event.position is not None else ""
        detail = f"{_SHOE_FAULT_WORDS.get(event.fault, event.fault)}" + (
            where if event.fault == "card_count" else ""
        )
        code = _SHOE_FAULT_CODES.get(event.fault, "shoe_fault")
        if event.fault == "misread" and event.first_position is not None:
            code = "card_repeated"  # the ledger saw this card dealt before, where it says
        # Its unset fields (None) are left out of the stored part (ReasonDetail omits defaults).
        private = e.ReasonDetail(
            message=f"{event.fault}"
            + (f" at position {event.position}" if event.position is not None else "")
            + (f": {event.detail}" if event.detail else ""),
            position=event.position,
            device_detail=event.detail or None,
            card=event.card,
            index=event.index,
            first_position=event.first_position,
            first_index=event.first_index,
        )
        return cls(detail, code, private)
