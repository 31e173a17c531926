"""The progressive's meter model: pure (no I/O, no clock), integer cents.

The events the model folds are the progressive's typed journal entries (controller/journal/entries/,
``progressive_*``): the stand-alone store writes them to the table's journal, the linked store keeps the
same entries in its own store, and both rebuild :class:`MeterState` by folding them in order, so a
restart restores every meter to the cent. The functions ``*_events`` decide what a request makes (one
clear line, :class:`~controller.errors.UserError`, when it is refused) without changing the state; the
caller commits the events to its store and only then folds them (answered only after the commit).

The round's arithmetic is controller/rules/progressive.py's ``settle_progressive`` (never forked):
a contribution is that function with no hits, a claim that function with the hits and no new wagers.

Conservation, checked by :meth:`MeterState.equations_hold` (and the tests, over random event sequences)::

    base + Σ increments to the meter + Σ resets − Σ meter awards                == meter
    Σ hidden + Σ overflow − Σ resets funded by the reserve + Σ reserve movements == reserve
    Σ resets == Σ funded by the reserve + Σ added by the house
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.errors import UserError, shown
from controller.journal import entries as e
from controller.names import round_number
from controller.rules.amounts import check_cents, type_name
from controller.rules.progressive import (
    PROGRESSIVE_PRESETS,
    Award,
    ProgressiveEntry,
    ProgressiveSettings,
    Reset,
    check_progressive_settings,
    parse_progressive_settings,
    settle_progressive,
)

MAX_SEATS = 7  # a table's seats: the default bound on one round's wagers
# What a meter remembers of each round and award, for idempotent answers and the panels: the most recent
# ones only (a table runs for months; the totals are counters). A replay of a round forgotten is refused
# ("no contribution"), never counted or paid again; a pending award is never forgotten.
RECENT_ROUNDS = 20_000
RECENT_PAID_AWARDS = 2_000
PARAMETER_KEYS: tuple[str, ...] = ("signoff_cents", "max_round_wagers")
"""The controller's own parameters, beside the rules' (``SETTINGS_KEYS``)."""


# --- parameters --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProgressiveParameters:
    """Every N.J.A.C. 13:69E-1.39A parameter of the meter: the rules' settings (unit, base, reset,
    increment and hidden rates, limit, the paytable's levels) and the controller's own:

    - ``signoff_cents``: a fixed award of at least this amount waits for a supervisor like a meter award
      (None: only meter awards wait);
    - ``max_round_wagers``: the unreasonable-contribution bound: one round at one table contributes at
      most this many wagers (a table has 7 seats); more is refused, never counted."""

    settings: ProgressiveSettings
    signoff_cents: int | None = None
    max_round_wagers: int = MAX_SEATS

    def to_json(self) -> dict[str, Any]:
        return {
            **self.settings.to_json(),
            "signoff_cents": self.signoff_cents,
            "max_round_wagers": self.max_round_wagers,
        }


def check_parameters(parameters: ProgressiveParameters, *, field: str = "progressive") -> None:
    """One clear line per refusal: the rules' own (a unit of 0, a reset below the base, a rate over 100%,
    a limit below the reset, a contribution that is not whole cents) and the controller's."""
    check_progressive_settings(parameters.settings, field=field)
    if parameters.signoff_cents is not None:
        check_cents(parameters.signoff_cents, f"{field}.signoff_cents")
        if parameters.signoff_cents == 0:
            raise UserError(
                f"{field}.signoff_cents: 0 would make every award wait; leave it out to sign off meter "
                f"awards only"
            )
    bound = parameters.max_round_wagers
    if isinstance(bound, bool) or not isinstance(bound, int) or not 1 <= bound <= MAX_SEATS:
        raise UserError(
            f"{field}.max_round_wagers: a round's wagers at one table are from 1 to {MAX_SEATS}, "
            f"not {shown(bound)}"
        )


def parse_parameters(obj: object, *, field: str = "progressive") -> ProgressiveParameters:
    """The parameters from a JSON or TOML object (the ``[progressive]`` section, a manager's change, or a
    journaled ``after``): the rules' keys plus ``signoff_cents`` and ``max_round_wagers``."""
    settings = parse_progressive_settings(obj, field=field, extra_keys=(*PARAMETER_KEYS, "paytable_name"))
    assert isinstance(obj, Mapping)
    name = obj.get("paytable_name")
    preset = PROGRESSIVE_PRESETS.get(name) if isinstance(name, str) else None
    if preset is not None and preset.lines == settings.paytable.lines:
        settings = dataclasses.replace(settings, paytable=preset)  # a preset's lines read back: its name
    signoff = obj.get("signoff_cents")
    bound = obj.get("max_round_wagers", MAX_SEATS)
    parameters = ProgressiveParameters(
        settings,
        None if signoff is None else check_cents(signoff, f"{field}.signoff_cents"),
        bound,
    )
    check_parameters(parameters, field=field)
    return parameters


# --- the state ---------------------------------------------------------------------------------------
@dataclass(slots=True)
class AwardState:
    """One award: recorded (claimed, its amount frozen), and paid once."""

    claimed: e.ProgressiveAwardClaimed
    paid: e.ProgressiveAwardPaid | None = None

    @property
    def pending(self) -> bool:
        return self.paid is None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = e.public_dict(self.claimed)
        out["status"] = "pending" if self.paid is None else "paid"
        out["paid_by"] = None if self.paid is None else self.paid.by
        return out


@dataclass(slots=True)
class MeterState:
    """One meter as its events leave it: every 1.39A meter (in-meter, display meter, hits and wins per
    level, overflow, reserve), the awards in the order recorded, and what each (table, round) did."""

    meter_id: str = ""
    parameters: ProgressiveParameters | None = None
    # The parameters the configuration file last set (the opening, or a change ``by`` "config"): a table
    # records a new file's parameters as a change, and keeps a manager's change while the file is the same.
    config_parameters: ProgressiveParameters | None = None
    opened_base_cents: int = 0  # the base the meter opened at (a later change of base moves nothing)
    meter_cents: int = 0  # the display meter
    reserve_cents: int = 0
    wagers: int = 0
    in_meter_cents: int = 0  # coin-in: the settled wagers' units
    increments_cents: int = 0  # Σ to the meter
    hidden_cents: int = 0
    overflow_cents: int = 0
    resets: int = 0
    resets_cents: int = 0
    resets_from_reserve_cents: int = 0
    resets_house_added_cents: int = 0
    reserve_moved_cents: int = 0
    meter_awards_cents: int = 0
    fixed_awards_cents: int = 0
    paid_cents: int = 0
    hits_by_line: dict[int, int] = field(default_factory=dict)
    wins_by_line_cents: dict[int, int] = field(default_factory=dict)
    awards: dict[str, AwardState] = field(default_factory=dict)  # by award_id, in the order recorded
    contributions: dict[tuple[str, str], e.ProgressiveContribution] = field(default_factory=dict)
    overflow_by_round: dict[tuple[str, str], int] = field(default_factory=dict)
    claims: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (table, round) -> award ids
    in_meter_by_table_cents: dict[str, int] = field(default_factory=dict)
    changes: int = 0  # parameter changes after the opening
    claims_recorded: int = 0  # every award ever recorded: the next claim_number follows it
    # Per table, the highest round number whose contribution was forgotten (RECENT_ROUNDS): a
    # contribution for a round up to it is refused, so a very late replay is never counted twice.
    forgotten_through: dict[str, int] = field(default_factory=dict)

    @property
    def opened(self) -> bool:
        return self.parameters is not None

    @property
    def claim_count(self) -> int:
        return self.claims_recorded

    def pending(self) -> list[AwardState]:
        return [award for award in self.awards.values() if award.paid is None]

    def award(self, award_id: str) -> AwardState | None:
        return self.awards.get(award_id)

    def awards_of(self, table_id: str, round_id: str) -> list[AwardState]:
        ids = self.claims.get((table_id, round_id), [])
        return [self.awards[award_id] for award_id in ids if award_id in self.awards]

    # --- the equations ---------------------------------------------------------------------------
    def meter_equation(self) -> tuple[int, int]:
        """(base + Σ increments + Σ resets − Σ meter awards, the meter): equal when the books balance."""
        expected = (
            self.opened_base_cents + self.increments_cents + self.resets_cents - self.meter_awards_cents
        )
        return expected, self.meter_cents

    def reserve_equation(self) -> tuple[int, int]:
        """(Σ hidden + Σ overflow − Σ resets funded + Σ movements, the reserve)."""
        expected = (
            self.hidden_cents
            + self.overflow_cents
            - self.resets_from_reserve_cents
            + self.reserve_moved_cents
        )
        return expected, self.reserve_cents

    def equations_hold(self) -> bool:
        meter = self.meter_equation()
        reserve = self.reserve_equation()
        resets = self.resets_from_reserve_cents + self.resets_house_added_cents
        return meter[0] == meter[1] and reserve[0] == reserve[1] and resets == self.resets_cents

    # --- folding ---------------------------------------------------------------------------------
    def apply(self, entry: e.Entry) -> None:  # noqa: PLR0912, PLR0915 - one branch per progressive entry kind: the meters' fold in one place
        """Fold one progressive entry (any other kind is ignored). Its writer (this module's
        ``*_events``) checked it; a reader of foreign entries checks them first (``check_shapes``), and
        this fold still never raises on one: parameters that do not parse change nothing."""
        if isinstance(entry, e.ProgressiveParametersChanged):
            try:
                parameters = parse_parameters(entry.after, field="progressive_parameters_changed.after")
            except UserError:
                return  # never written by this module: a foreign entry the fold leaves out
            if self.parameters is None:
                self.meter_id = entry.meter_id
                self.opened_base_cents = parameters.settings.base_cents
                self.meter_cents = parameters.settings.base_cents
            else:
                self.changes += 1
            if entry.before is None or entry.by == "config":
                self.config_parameters = parameters
            self.parameters = parameters
        elif isinstance(entry, e.ProgressiveContribution):
            self.contributions[(entry.table_id, entry.round_id)] = entry
            while len(self.contributions) > RECENT_ROUNDS:
                table_id, round_id = next(iter(self.contributions))
                del self.contributions[(table_id, round_id)]
                number = round_number(round_id)
                if number is not None and number > self.forgotten_through.get(table_id, 0):
                    # A round this old may have contributed: never counted again (refused).
                    self.forgotten_through[table_id] = number
            self.wagers += entry.wagers
            self.in_meter_cents += entry.in_meter_cents
            self.in_meter_by_table_cents[entry.table_id] = (
                self.in_meter_by_table_cents.get(entry.table_id, 0) + entry.in_meter_cents
            )
            self.increments_cents += entry.to_meter_cents
            self.hidden_cents += entry.hidden_cents
            self.meter_cents = entry.meter_after_cents
            self.reserve_cents = entry.reserve_after_cents
        elif isinstance(entry, e.ProgressiveOverflow):
            self.overflow_cents += entry.overflow_cents
            self.overflow_by_round[(entry.table_id, entry.round_id)] = entry.overflow_cents
            _keep_recent(self.overflow_by_round, RECENT_ROUNDS)
            self.reserve_cents = entry.reserve_after_cents
        elif isinstance(entry, e.ProgressiveAwardClaimed):
            self.awards[entry.award_id] = AwardState(entry)
            self.claims_recorded += 1
            self.claims.setdefault((entry.table_id, entry.round_id), []).append(entry.award_id)
            _keep_recent(self.claims, RECENT_ROUNDS)
            self.hits_by_line[entry.line] = self.hits_by_line.get(entry.line, 0) + 1
            self.wins_by_line_cents[entry.line] = (
                self.wins_by_line_cents.get(entry.line, 0) + entry.amount_cents
            )
            if entry.paid_from == "meter":
                self.meter_awards_cents += entry.amount_cents
                if entry.meter_after_cents is not None:  # always, as this module writes it
                    self.meter_cents = entry.meter_after_cents
            else:
                self.fixed_awards_cents += entry.amount_cents
        elif isinstance(entry, e.ProgressiveReset):
            self.resets += 1
            self.resets_cents += entry.amount_cents
            self.resets_from_reserve_cents += entry.from_reserve_cents
            self.resets_house_added_cents += entry.house_added_cents
            self.reserve_cents = entry.reserve_after_cents
        elif isinstance(entry, e.ProgressiveAwardPaid):
            award = self.awards.get(entry.award_id)
            if award is not None and award.paid is None:
                award.paid = entry
                self.paid_cents += entry.amount_cents
                self._forget_old_paid_awards()
        elif isinstance(entry, e.ProgressiveReserve):
            self.reserve_moved_cents += entry.amount_cents
            self.reserve_cents = entry.reserve_after_cents

    def _forget_old_paid_awards(self) -> None:
        paid = [award_id for award_id, award in self.awards.items() if award.paid is not None]
        for award_id in paid[: max(0, len(paid) - RECENT_PAID_AWARDS)]:
            del self.awards[award_id]

    def apply_all(self, entries: Sequence[e.Entry]) -> MeterState:
        for entry in entries:
            self.apply(entry)
        return self

    def to_json(self) -> dict[str, Any]:
        """Every meter, for the panels, the sign and `flushtable` reports."""
        return {
            "meter_id": self.meter_id,
            "parameters": None if self.parameters is None else self.parameters.to_json(),
            "meter_cents": self.meter_cents,
            "reserve_cents": self.reserve_cents,
            "opened_base_cents": self.opened_base_cents,
            "wagers": self.wagers,
            "in_meter_cents": self.in_meter_cents,
            "in_meter_by_table_cents": dict(sorted(self.in_meter_by_table_cents.items())),
            "increments_cents": self.increments_cents,
            "hidden_cents": self.hidden_cents,
            "overflow_cents": self.overflow_cents,
            "resets": self.resets,
            "resets_cents": self.resets_cents,
            "resets_from_reserve_cents": self.resets_from_reserve_cents,
            "resets_house_added_cents": self.resets_house_added_cents,
            "reserve_moved_cents": self.reserve_moved_cents,
            "meter_awards_cents": self.meter_awards_cents,
            "fixed_awards_cents": self.fixed_awards_cents,
            "paid_cents": self.paid_cents,
            "hits_by_line": {
                str(line): count for line, count in sorted(self.hits_by_line.items(), reverse=True)
            },
            "wins_by_line_cents": {
                str(line): cents for line, cents in sorted(self.wins_by_line_cents.items(), reverse=True)
            },
            "pending": [award.to_json() for award in self.pending()],
            "equations_hold": self.equations_hold(),
        }


# --- requests: what each makes, without changing the state ----------------------------------------
@dataclass(frozen=True, slots=True)
class Hit:
    """A seat's Progressive wager that reached a paytable line: its longest straight-flush run."""

    seat: int
    run_length: int


def _keep_recent(remembered: dict[Any, Any], limit: int) -> None:
    """Forget the oldest keys past ``limit`` (a dict keeps its insertion order)."""
    while len(remembered) > limit:
        del remembered[next(iter(remembered))]


def award_id_of(table_id: str, round_id: str, seat: int) -> str:
    return f"{table_id}/{round_id}/{seat}"


def _require_open(state: MeterState) -> ProgressiveParameters:
    if state.parameters is None:
        raise UserError("progressive: the meter is not open (no parameters were ever set)")
    return state.parameters


def _check_key(table_id: object, round_id: object) -> None:
    for name, value in (("table", table_id), ("round", round_id)):
        if not isinstance(value, str) or not value or len(value) > 100:
            raise UserError(
                f"progressive: the {name} must be a name of 1 to 100 characters, not {shown(value)}"
            )


def open_events(meter_id: str, parameters: ProgressiveParameters, *, by: str) -> list[e.Entry]:
    """The first parameters: the meter opens at the base."""
    check_parameters(parameters)
    return [
        e.ProgressiveParametersChanged(meter_id=meter_id, by=by, after=parameters.to_json(), reason="opened")
    ]


def parameter_change_events(
    state: MeterState, parameters: ProgressiveParameters, *, by: str, reason: str
) -> list[e.Entry]:
    """A change of parameters (the caller checks the manager and that no round is in play). Refused:
    what ``check_parameters`` refuses, and a limit below the meter as it stands."""
    before = _require_open(state)
    check_parameters(parameters)
    limit = parameters.settings.limit_cents
    if limit is not None and state.meter_cents > limit:
        raise UserError(
            f"progressive.limit_cents: {limit} is below the meter as it stands ({state.meter_cents}); "
            f"a meter never passes its limit"
        )
    if parameters == before:
        raise UserError("progressive: the parameters are unchanged; nothing to record")
    return [
        e.ProgressiveParametersChanged(
            meter_id=state.meter_id, by=by, before=before.to_json(), after=parameters.to_json(), reason=reason
        )
    ]


def contribution_events(state: MeterState, table_id: str, round_id: str, wagers: int) -> list[e.Entry]:
    """One round's settled Progressive wagers at one table (0 is allowed and records nothing). Refused:
    a count that is no count, or past the unreasonable-contribution bound. A replay is the caller's
    to answer (``state.contributions``): this is only asked for a new (table, round)."""
    parameters = _require_open(state)
    _check_key(table_id, round_id)
    if isinstance(wagers, bool) or not isinstance(wagers, int) or wagers < 0:
        raise UserError(
            f"progressive: a round's wagers must be a whole number, not {type_name(wagers)} {shown(wagers)}"
        )
    if wagers > parameters.max_round_wagers:
        raise UserError(
            f"progressive: {wagers} wagers in round {round_id} at table {table_id} is an unreasonable "
            f"contribution (at most {parameters.max_round_wagers}); nothing was counted"
        )
    number = round_number(round_id)
    if number is not None and number <= state.forgotten_through.get(table_id, 0):
        raise UserError(
            f"progressive: round {round_id} at table {table_id} is older than the rounds the meter "
            f"remembers; refused (it may have contributed already)"
        )
    settings = parameters.settings
    result = settle_progressive(
        settings,
        state.meter_cents,
        state.reserve_cents,
        [ProgressiveEntry(seat, run_length=0) for seat in range(wagers)],
    )
    reserve_after_hidden = state.reserve_cents + result.hidden_cents
    events: list[e.Entry] = [
        e.ProgressiveContribution(
            meter_id=state.meter_id,
            table_id=table_id,
            round_id=round_id,
            wagers=wagers,
            unit_cents=settings.unit_cents,
            in_meter_cents=result.collected_cents,
            increment_cents=result.increment_cents,
            to_meter_cents=result.to_meter_cents,
            hidden_cents=result.hidden_cents,
            meter_after_cents=result.meter_after_cents,
            reserve_after_cents=reserve_after_hidden,
        )
    ]
    if result.overflow_cents:
        events.append(
            e.ProgressiveOverflow(
                meter_id=state.meter_id,
                table_id=table_id,
                round_id=round_id,
                overflow_cents=result.overflow_cents,
                reserve_after_cents=result.reserve_after_cents,
            )
        )
    return events


def claim_events(
    state: MeterState, table_id: str, round_id: str, hits: Sequence[Hit], *, by: str = "engine"
) -> list[e.Entry]:
    """A round's hits at one table, in its settlement order: every award recorded at once with its
    amount frozen (the jackpot lock: a meter award takes the meter as it stands now and the meter
    re-seeds at once), a fixed award under the sign-off paid at once. Refused: a round the controller
    saw no contribution for, more hits than its wagers, a seat twice, a run that reaches no line. A
    replay is the caller's to answer (``state.claims``)."""
    parameters = _require_open(state)
    _check_claim(state, parameters.settings, table_id, round_id, hits)
    settings = parameters.settings
    # The awards alone: the same function with no new wagers' contributions (rates of 0).
    awards_only = dataclasses.replace(settings, increment_bp=0, hidden_bp=0)
    result = settle_progressive(
        awards_only,
        state.meter_cents,
        state.reserve_cents,
        [ProgressiveEntry(hit.seat, hit.run_length) for hit in hits],
    )
    events: list[e.Entry] = []
    number = state.claim_count
    meter = state.meter_cents  # the meter as each award leaves it (every event carries it, for the fold)
    locked = False
    for paid in result.awards:
        number += 1
        meter_before, meter_after = paid.meter_before_cents, paid.meter_after_cents
        if paid.from_meter and paid.award.is_jackpot:
            # The jackpot lock: the first 100% winner froze the meter (``meter_before``, what the
            # winners share) and re-seeded it; a later sharer's share left with the first's, so the
            # meter it leaves is the meter as it then stands (a 10% between them took from the reset).
            meter_after = settings.reset_cents if not locked else meter
            locked = True
            meter = meter_after
        elif paid.from_meter:
            meter_before, meter_after = meter, meter - paid.amount_cents
            meter = meter_after
        award_id = award_id_of(table_id, round_id, paid.seat)
        wait = paid.from_meter or (
            parameters.signoff_cents is not None and paid.amount_cents >= parameters.signoff_cents
        )
        events.append(
            e.ProgressiveAwardClaimed(
                meter_id=state.meter_id,
                award_id=award_id,
                claim_number=number,
                table_id=table_id,
                round_id=round_id,
                seat=paid.seat,
                line=paid.line,
                award=_award_json(paid.award),
                amount_cents=paid.amount_cents,
                paid_from="meter" if paid.from_meter else "house",
                needs_confirmation=wait,
                meter_before_cents=meter_before,
                meter_after_cents=meter_after,
                shared_by=paid.shared_by,
            )
        )
        if (
            paid.award.is_jackpot
            and result.reset is not None
            and not any(isinstance(event, e.ProgressiveReset) for event in events)
        ):
            events.append(_reset_event(state, table_id, round_id, result.reset))
        if not wait:
            events.append(
                e.ProgressiveAwardPaid(
                    meter_id=state.meter_id,
                    award_id=award_id,
                    table_id=table_id,
                    round_id=round_id,
                    seat=paid.seat,
                    amount_cents=paid.amount_cents,
                    by=by,
                )
            )
    assert meter == result.meter_after_cents, "the fold's meter is the rules' meter"
    return events


def _check_claim(
    state: MeterState, settings: ProgressiveSettings, table_id: str, round_id: str, hits: Sequence[Hit]
) -> None:
    """Refuse a claim for a round with no contribution, more hits than its wagers, a seat twice, or a
    run that reaches no line (``claim_events``)."""
    _check_key(table_id, round_id)
    contribution = state.contributions.get((table_id, round_id))
    if contribution is None:
        raise UserError(
            f"progressive: claim for round {round_id} at table {table_id} refused: the controller saw no "
            f"Progressive wagers contributed for that round"
        )
    if not hits:
        raise UserError(f"progressive: claim for round {round_id} at table {table_id} names no hit")
    if len(hits) > contribution.wagers:
        raise UserError(
            f"progressive: claim for round {round_id} at table {table_id} names {len(hits)} hits for "
            f"{contribution.wagers} wagers contributed"
        )
    seats = [hit.seat for hit in hits]
    if len(set(seats)) != len(seats):
        raise UserError(f"progressive: claim for round {round_id} at table {table_id} names a seat twice")
    for hit in hits:
        if settings.paytable.award_for(hit.run_length) is None:
            raise UserError(
                f"progressive: seat {hit.seat}'s {shown(hit.run_length)}-card run reaches no line of the "
                f"paytable; nothing to claim"
            )


def _reset_event(state: MeterState, table_id: str, round_id: str, reset: Reset) -> e.ProgressiveReset:
    """The meter re-seeded after a jackpot, as the claim that hit it records it."""
    return e.ProgressiveReset(
        meter_id=state.meter_id,
        table_id=table_id,
        round_id=round_id,
        amount_cents=reset.amount_cents,
        from_reserve_cents=reset.from_reserve_cents,
        house_added_cents=reset.house_added_cents,
        reserve_after_cents=state.reserve_cents - reset.from_reserve_cents,
    )


def _award_json(award: Award) -> int | dict[str, int | float]:
    return award.to_json()


def paid_events(state: MeterState, award_id: str, *, by: str) -> list[e.Entry]:
    """A supervisor's confirmation that an award was paid. Refused: an award never recorded. An award
    already paid is the caller's to answer (nothing is paid twice)."""
    award = state.awards.get(award_id)
    if award is None:
        raise UserError(f"progressive: no award {shown(award_id, 80)} was ever recorded; nothing to confirm")
    claimed = award.claimed
    return [
        e.ProgressiveAwardPaid(
            meter_id=state.meter_id,
            award_id=award_id,
            table_id=claimed.table_id,
            round_id=claimed.round_id,
            seat=claimed.seat,
            amount_cents=claimed.amount_cents,
            by=by,
        )
    ]


def reserve_events(state: MeterState, amount_cents: int, *, reason: str, by: str) -> list[e.Entry]:
    """A manager's movement of the reserve: added by the house (positive) or taken back (negative, never
    below 0), with a reason."""
    _require_open(state)
    if isinstance(amount_cents, bool) or not isinstance(amount_cents, int) or amount_cents == 0:
        raise UserError(
            f"progressive: a reserve movement is a non-zero whole number of cents, not {shown(amount_cents)}"
        )
    check_cents(abs(amount_cents), "progressive.reserve.amount_cents")
    if state.reserve_cents + amount_cents < 0:
        raise UserError(
            f"progressive: the reserve holds {state.reserve_cents}; {-amount_cents} cannot be taken from it"
        )
    if not reason.strip():
        raise UserError("progressive: a reserve movement needs a reason")
    return [
        e.ProgressiveReserve(
            meter_id=state.meter_id,
            amount_cents=amount_cents,
            reason=reason.strip(),
            by=by,
            reserve_after_cents=state.reserve_cents + amount_cents,
        )
    ]


def fold(entries: Sequence[e.Entry]) -> MeterState:
    return MeterState().apply_all(entries)
