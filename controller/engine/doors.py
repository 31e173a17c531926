"""The doors between the engine's parts: each a small Protocol naming the few methods one part asks of
another (docs/engine.md "The parts and their doors").

A part is built with the doors it needs, typed by these, never with the whole table: the bets are given
something that ``RaisesFaults``, not the faults part. No part module imports another part module (the
round flow, which runs the round's course through every part, and the engine, which builds them, are
the two above them): the import contract ``engine`` in pyproject.toml holds the layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from controller.engine.round import SeatPlay
from controller.journal import entries as e
from drivers.events import ShufflerFault


class RoundPosition(Protocol):
    """Where the round stands (the round flow's machine): what every part reads through the context."""

    @property
    def state(self) -> str:
        """The machine's own state (``held/betting`` while held from betting)."""
        ...

    @property
    def shown_state(self) -> str: ...

    @property
    def where(self) -> str: ...


# ---------------------------------------------------------------------- the faults
class RaisesFaults(Protocol):
    """Raise a fault (journaled, an alert; latching: it holds until a supervisor clears it)."""

    def raise_fault(  # noqa: PLR0913 - the keyword-only facts of one fault entry (Faults.raise_fault)
        self,
        kind: str,
        detail: str,
        *,
        latching: bool,
        device: str | None = ...,
        source: str = ...,
        code: e.ReasonCode | None = ...,
        private: e.ReasonDetail | None = ...,
    ) -> str: ...


# ---------------------------------------------------------------------- the round flow
class HoldsTable(Protocol):
    def hold_table(self) -> None: ...


class KillsRound(Protocol):
    def kill_round(
        self, reason: str, *, code: e.ReasonCode = ..., private: e.ReasonDetail | None = ...
    ) -> None: ...


class DealsCourse(HoldsTable, KillsRound, Protocol):
    """What the deal asks of the round flow: where the round stands, move the machine on (the deal
    started, a step complete), hold the table, kill the round."""

    @property
    def where(self) -> str: ...

    def deal_started(self) -> None: ...

    def deal_step_complete(self) -> None: ...


class StopsRound(HoldsTable, KillsRound, Protocol):
    """What the shoe's faults ask of the round flow: hold the table, kill the round."""


class LocksRound(HoldsTable, Protocol):
    """What the bets ask of the round flow: lock the round with the wagers on the felt; hold the table
    (past-posting)."""

    def lock(self, wagers_by_seat: Mapping[int, Mapping[str, int]], by: str) -> None: ...


class ResumesRound(HoldsTable, Protocol):
    """What the faults ask of the round flow: hold the table; resume where it was held."""

    def resume_round(self) -> None: ...


class ClosesDecisions(Protocol):
    """What the decisions ask of the round flow: the phase closed, deal the next street or reveal."""

    def decisions_closed(self) -> None: ...


# ---------------------------------------------------------------------- the other parts
class JudgesShoeFaults(Protocol):
    """What the deal asks of the shoe's faults: judge a report its ledger refused, as the shoe fault."""

    def judge(self, event: ShufflerFault) -> None: ...


class ShoeFaultsDeal(Protocol):
    """What the shoe's faults ask of the deal."""

    @property
    def finished(self) -> bool: ...

    def wrong_count(
        self,
        position: int,
        detail: str,
        *,
        code: e.ReasonCode = ...,
        private: e.ReasonDetail | None = ...,
    ) -> None: ...

    def forget_verified_deck(self) -> None: ...


class OpensDecisions(Protocol):
    def open(self) -> None: ...


class TakesDecisionChips(Protocol):
    def decision_chips(self, play: SeatPlay, amount_cents: int) -> None: ...


class ExcludesSeats(Protocol):
    """What a supervisor's kill while betting is open asks of the bets: leave the seat out at the lock."""

    def excluded_from_round(self, seat: int) -> bool: ...

    def exclude(self, seat: int, reason: str) -> None: ...


class PastPostingLedger(Protocol):
    """What the faults ask of the bets about a past-posting fault."""

    def spot_still_off(self, fault_id: str) -> str | None: ...

    def forget_past_posting(self, fault_id: str) -> None: ...


class Shoe(Protocol):
    """What the faults ask of the deal: the shoe was reset; is every card of the round dealt."""

    def shoe_restarted(self) -> None: ...

    @property
    def finished(self) -> bool: ...


class BankingMode(Protocol):
    def banking_mode(self) -> str: ...


class BankSpot(BankingMode, Protocol):
    """What the bets ask of the bank: the designated player's seat and bank, and the chips on the bank
    spots (the bank keeps the readings the bets pass on)."""

    @property
    def dp_seat(self) -> int | None: ...

    @property
    def dp_funds_cents(self) -> int: ...

    def bank_short_on_spot(self) -> int | None: ...

    def bank_spot(self, seat: int) -> int: ...

    def bank_spot_read(self, seat: int, amount_cents: int, *, before_lock: bool) -> None: ...


class SettlesProgressive(Protocol):
    """What the round to settle asks of the Progressive: its part of the settle input, if offered."""

    def settle_object(self) -> dict[str, Any] | None: ...


class ProgressiveAtLock(Protocol):
    """What the bets ask of the Progressive at the lock."""

    @property
    def refused_at_lock(self) -> str | None: ...

    def at_lock(self, wagers_by_seat: dict[int, dict[str, int]]) -> str | None: ...
