"""The progressive controller: one component, one API, one store interface (docs/rules.md "Progressive:
the controller").

- :class:`Progressive` is the API a table codes against (async: a linked controller answers over the
  network). :class:`ProgressiveController` implements it over any :class:`ProgressiveStore`; the
  stand-alone deployment is ``ProgressiveController(JournalStore(journal, meter_id))``, the linked one
  runs the same controller on the floor over its PostgreSQL store, and the table's link client
  implements :class:`Progressive` by asking it.
- Every request is decided by the pure model (controller/progressive/model.py), committed to the store,
  and only then folded and answered: an answer is never given for what is not durable.
- Idempotent: ``contribute`` keyed by (table, round), ``claim`` by (table, round), ``confirm_paid`` by
  the award: a replay gets the first answer and changes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from controller.errors import UserError
from controller.journal import entries as e
from controller.progressive import model
from controller.progressive.model import AwardState, Hit, MeterState, ProgressiveParameters
from table_names.records import fields_dict


# --- answers -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LinkState:
    """Whether the table may take Progressive wagers: ``up`` False (a linked table whose link is lost)
    refuses them at the next lock with ``reason`` on the display. Stand-alone: always up."""

    up: bool
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"up": self.up, "reason": self.reason}


LINK_UP = LinkState(True)


@dataclass(frozen=True, slots=True)
class MeterView:
    """The meter as the table shows it (display, panel, sign): the state's figures at one moment."""

    meter_id: str
    meter_cents: int
    reserve_cents: int
    unit_cents: int
    pending: tuple[AwardState, ...]
    meters: dict[str, Any] = field(default_factory=dict)  # every meter (MeterState.to_json)

    def to_json(self) -> dict[str, Any]:
        return fields_dict(self, pending=[award.to_json() for award in self.pending])


@dataclass(frozen=True, slots=True)
class ContributionAnswer:
    contribution: e.ProgressiveContribution
    overflow_cents: int
    meter_after_cents: int
    replayed: bool = False


@dataclass(frozen=True, slots=True)
class ClaimAnswer:
    """The awards recorded for a round's claim, in the order recorded (their amounts frozen). A replay
    (the same (table, round) again) gets the first answer with ``replayed`` True."""

    table_id: str
    round_id: str
    awards: tuple[AwardState, ...]
    replayed: bool = False

    @property
    def pending(self) -> tuple[AwardState, ...]:
        return tuple(award for award in self.awards if award.pending)

    def to_json(self) -> dict[str, Any]:
        return fields_dict(self, awards=[award.to_json() for award in self.awards])


@dataclass(frozen=True, slots=True)
class PaidAnswer:
    award: AwardState
    replayed: bool = False  # already paid: nothing paid twice


class ConfirmationSent(UserError):
    """A supervisor's confirmation of a linked meter's award, sent to the floor (which records it): not a
    refusal at the table. Its text is the one line said to the supervisor."""


class ProgressiveUnavailable(Exception):
    """The controller cannot answer now (a linked table's link is down): the table asks again later,
    with the same key, so nothing is counted or paid twice."""


# --- the API -----------------------------------------------------------------------------------------
class Progressive(Protocol):
    """What a table asks of its progressive (stand-alone or linked)."""

    async def meter(self) -> MeterView: ...

    async def contribute(self, table_id: str, round_id: str, wagers: int) -> ContributionAnswer: ...

    async def claim(
        self, table_id: str, round_id: str, hits: Sequence[Hit], *, by: str = "engine"
    ) -> ClaimAnswer: ...

    async def confirm_paid(self, award_id: str, *, by: str) -> PaidAnswer: ...

    def link_state(self) -> LinkState: ...


class TableSideProgressive(Protocol):
    """What the table's engine (controller/engine/progressive.py) uses of its progressive, synchronously
    on its one thread: ``ProgressiveController`` stand-alone; a linked table's client implements the
    same, answering from its mirror of the controller's broadcasts (``state``) and raising
    ``ProgressiveUnavailable`` from a request it cannot get answered (the engine asks again on every
    tick). Installed with ``TableEngine.set_progressive_controller``."""

    @property
    def state(self) -> MeterState: ...

    def open_now(self, meter_id: str, parameters: ProgressiveParameters, *, by: str) -> bool: ...

    def change_parameters_now(self, parameters: ProgressiveParameters, *, by: str, reason: str) -> None: ...

    # The engine reads no answer: a linked table's client sends nothing (the floor counts the round from
    # the table's journal) and answers None; the stand-alone controller's answer is for its own tests.
    def contribute_now(self, table_id: str, round_id: str, wagers: int) -> ContributionAnswer | None: ...

    def claim_now(
        self, table_id: str, round_id: str, hits: Sequence[Hit], *, by: str = "engine"
    ) -> ClaimAnswer: ...

    def confirm_paid_now(self, award_id: str, *, by: str) -> PaidAnswer: ...

    def link_state(self) -> LinkState: ...


class ProgressiveStore(Protocol):
    """Where a meter's events are kept. ``load`` returns every progressive entry in order (the fold
    restores the meter); ``commit`` makes entries durable all together or not at all (raising)."""

    def load(self) -> list[e.Entry]: ...

    def commit(self, entries: Sequence[e.Entry]) -> None: ...


# --- the controller ----------------------------------------------------------------------------------
class ProgressiveController:
    """The one implementation of :class:`Progressive` over a store. Sync methods (``*_now``) for callers
    on a thread (the engine's commit path); the async API wraps them. One lock: requests are decided and
    committed one at a time, so the order the store records is the order of the claims."""

    def __init__(self, store: ProgressiveStore, *, state: MeterState | None = None) -> None:
        """``state``: the meter already folded from the store's entries (the table's reducer did it at
        start); else the store's entries are loaded and folded here."""
        self.store = store
        self._lock = threading.Lock()
        self.state: MeterState = state if state is not None else model.fold(store.load())

    # --- opening and parameters (the manager's, between rounds: controller/progressive/parameters.py)
    def open_now(self, meter_id: str, parameters: ProgressiveParameters, *, by: str) -> bool:
        """Open the meter at its base with these parameters, when it never was (False: already open)."""
        with self._lock:
            if self.state.opened:
                return False
            self._commit(model.open_events(meter_id, parameters, by=by))
            return True

    def change_parameters_now(self, parameters: ProgressiveParameters, *, by: str, reason: str) -> None:
        with self._lock:
            self._commit(model.parameter_change_events(self.state, parameters, by=by, reason=reason))

    def move_reserve_now(self, amount_cents: int, *, reason: str, by: str) -> None:
        with self._lock:
            self._commit(model.reserve_events(self.state, amount_cents, reason=reason, by=by))

    # --- the table's requests ---------------------------------------------------------------------
    def meter_now(self) -> MeterView:
        with self._lock:
            state = self.state
            unit = 0 if state.parameters is None else state.parameters.settings.unit_cents
            return MeterView(
                state.meter_id,
                state.meter_cents,
                state.reserve_cents,
                unit,
                tuple(state.pending()),
                state.to_json(),
            )

    def contribute_now(self, table_id: str, round_id: str, wagers: int) -> ContributionAnswer:
        with self._lock:
            first = self.state.contributions.get((table_id, round_id))
            if first is None:
                self._commit(model.contribution_events(self.state, table_id, round_id, wagers))
                first = self.state.contributions[(table_id, round_id)]
                replayed = False
            else:
                replayed = True
            overflow = self.state.overflow_by_round.get((table_id, round_id), 0)
            return ContributionAnswer(first, overflow, first.meter_after_cents, replayed)

    def claim_now(
        self, table_id: str, round_id: str, hits: Sequence[Hit], *, by: str = "engine"
    ) -> ClaimAnswer:
        with self._lock:
            replayed = (table_id, round_id) in self.state.claims
            if not replayed:
                self._commit(model.claim_events(self.state, table_id, round_id, hits, by=by))
            return ClaimAnswer(table_id, round_id, tuple(self.state.awards_of(table_id, round_id)), replayed)

    def confirm_paid_now(self, award_id: str, *, by: str) -> PaidAnswer:
        with self._lock:
            award = self.state.award(award_id)
            if award is not None and award.paid is not None:
                return PaidAnswer(award, replayed=True)
            self._commit(model.paid_events(self.state, award_id, by=by))
            paid = self.state.award(award_id)
            assert paid is not None
            return PaidAnswer(paid)

    # --- the async API ----------------------------------------------------------------------------
    async def meter(self) -> MeterView:
        return self.meter_now()

    async def contribute(self, table_id: str, round_id: str, wagers: int) -> ContributionAnswer:
        return self.contribute_now(table_id, round_id, wagers)

    async def claim(
        self, table_id: str, round_id: str, hits: Sequence[Hit], *, by: str = "engine"
    ) -> ClaimAnswer:
        return self.claim_now(table_id, round_id, hits, by=by)

    async def confirm_paid(self, award_id: str, *, by: str) -> PaidAnswer:
        return self.confirm_paid_now(award_id, by=by)

    def link_state(self) -> LinkState:
        return LINK_UP  # stand-alone or on the floor itself: the controller is its own link

    # ------------------------------------------------------------------------------------------------
    def _commit(self, events: Sequence[e.Entry]) -> None:
        """Durable first, then folded: a failed commit leaves the state as it was."""
        if not events:
            return
        self.store.commit(events)
        for event in events:
            self.state.apply(event)


class MemoryStore:
    """A store that keeps nothing across a restart: for the pure model's tests only (never a table)."""

    def __init__(self) -> None:
        self.entries: list[e.Entry] = []

    def load(self) -> list[e.Entry]:
        return list(self.entries)

    def commit(self, entries: Sequence[e.Entry]) -> None:
        self.entries.extend(entries)


def refused_line(error: UserError) -> str:
    """A refusal as the display and the panel show it: one line."""
    return str(error).splitlines()[0] if str(error) else "refused"
