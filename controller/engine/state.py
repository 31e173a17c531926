"""What the engine needs to know about the table: its configuration and the state recovered from the
journal at start (latched faults, the button, the round counter).

``RecoveredState`` is the contract with the journal's recovery (controller/journal/): recovery reads
the journal and fills one in; ``TableEngine(config, recovered=...)`` starts from it. Everything in it is
derivable from journal entries (docs/journal.md):

- ``latched_faults``: every ``fault_raised`` with ``severity == "latching"`` and no later
  ``fault_cleared`` of the same ``fault_id``;
- ``button_seat``: the ``to_seat`` of the last ``button_moved``, else ``button_seat`` of the last
  ``round_started``; None when neither exists;
- ``rounds_started``: the number of ``round_started`` entries (round ids are numbered from it);
- ``faults_raised``: fault ids are numbered from it: the journal's last sequence number (never less
  than the number of ``fault_raised`` entries, so never an id the journal holds);
- ``button_moves_on``: the last ``round_started`` of a designated-player table closed ``round_settled``;
- ``table_closed`` / ``closed_reason``: the last ``table_closed`` written by an operator (source
  ``operator:NAME``) with no later ``table_opened`` by an operator;
- ``min_ante_cents`` / ``max_ante_cents`` / ``max_bonus_cents`` / ``paytables``: the ``after`` of the
  last ``limits_set`` and of each wager's last ``paytable_set`` (the engine's
  entries; refusals carry no ``after``), made against the configuration whose digest is
  ``settings_config_digest``. The engine applies them only when its configuration has that same
  digest: a new configuration file is a deliberate change and wins over changes made against the old
  one. ``max_bonus_cents`` is the bonus wagers' own maxima (``after.own_max_bonus_cents``; an older
  entry's ``after.max_bonus_cents``, every maximum then in effect): a wager not named follows the ante's.

``RecoveredState.from_table_state(table_state)`` adapts the journal's ``TableState``
(controller/journal/state.py) to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from controller.locale import DEFAULT_PROPERTY, PropertySettings
from controller.names import DESIGNATED_PLAYER as DESIGNATED_PLAYER  # noqa: PLC0414  (re-exported)
from controller.names import HIGH_CARD_FLUSH
from controller.names import HOUSE as HOUSE  # noqa: PLC0414  (re-exported)
from controller.settings import check_engine_table


@dataclass(frozen=True, slots=True)
class LatchedFault:
    """A fault that holds the table until a supervisor clears it."""

    fault_id: str
    kind: str
    detail: str
    device: str | None = None
    round_id: str | None = None


@dataclass(frozen=True, slots=True)
class RecoveredState:
    """The table's state as the journal left it (see the module docstring for how each is derived).

    ``button_moves_on``: the last designated-player round was settled, so the button is offered to the
    next seat clockwise; otherwise (dead, voided or interrupted) it is offered to ``button_seat`` again.
    """

    latched_faults: tuple[LatchedFault, ...] = ()
    button_seat: int | None = None
    rounds_started: int = 0
    faults_raised: int = 0
    button_moves_on: bool = False
    table_closed: bool = False
    closed_reason: str | None = None
    min_ante_cents: int | None = None
    max_ante_cents: int | None = None
    max_bonus_cents: Mapping[str, int] | None = None
    paytables: Mapping[str, object] = field(default_factory=dict)
    settings_config_digest: str | None = None
    # The stand-alone progressive's meter as the journal's reducer folded it
    # (controller.progressive.model.MeterState; duck-typed: the engine's state does not import it).
    progressive: object | None = None

    @classmethod
    def from_table_state(cls, state: ReducedState) -> RecoveredState:
        """Adapt the journal's reducer state (``controller.journal.state.TableState``, typed by the
        ``ReducedState`` protocol: the journal's reader imports the engine's machine, so the engine names
        only what it reads) to what the engine needs.

        Fault ids are numbered after the journal's ``last_seq`` (its last sequence number): every fault
        raised took one sequence number, so numbering new faults after it can never repeat an id from
        before the restart (ids stay unique, not contiguous). TableState's own count of faults raised
        (its meters) is never more than that, and is not enough alone: ids numbered after ``last_seq``
        by an earlier start are above it.
        """
        latched = tuple(
            LatchedFault(
                fault_id=str(fault_id),
                kind=alert.kind,
                detail=alert.detail,
                device=alert.device,
                round_id=alert.round_id,
            )
            for fault_id, alert in state.latched_faults.items()
        )
        limits = state.limits or {}
        min_ante, max_ante = limits.get("min_ante_cents"), limits.get("max_ante_cents")
        max_bonus = limits.get("max_bonus_cents")
        closed_by = state.closed_by_operator
        last_round = state.last_round_id
        meter = state.progressive
        return cls(
            latched_faults=latched,
            button_seat=state.button_seat,
            rounds_started=max(state.rounds_started, state.last_round_number),
            faults_raised=max(state.faults_raised, state.last_seq),
            button_moves_on=last_round is not None and state.closed_rounds.get(last_round) == "round_settled",
            table_closed=closed_by is not None,
            closed_reason=closed_by.reason if closed_by is not None else None,
            min_ante_cents=min_ante if isinstance(min_ante, int) else None,
            max_ante_cents=max_ante if isinstance(max_ante, int) else None,
            # No own bonus maximum ({}) restores nothing, as the engine's own RecoveredState says: every
            # bonus wager follows the ante's maximum, as the same configuration file has them.
            max_bonus_cents=dict(max_bonus) if isinstance(max_bonus, Mapping) and max_bonus else None,
            paytables=dict(state.paytables),
            settings_config_digest=state.settings_config_digest,
            # A meter never opened is no meter: as a table without a Progressive wager recovers.
            progressive=meter if meter.opened else None,
        )


class _AlertView(Protocol):
    """A latched fault as the reducer holds it (``controller.journal.state.AlertState``)."""

    @property
    def kind(self) -> str: ...
    @property
    def detail(self) -> str: ...  # the public message (never a card)
    @property
    def device(self) -> str | None: ...
    @property
    def round_id(self) -> str | None: ...


class _ClosedView(Protocol):
    @property
    def reason(self) -> str: ...


class _MeterView(Protocol):
    @property
    def opened(self) -> bool: ...


class ReducedState(Protocol):
    """What the engine reads of the journal's one reducer at a start (``controller.journal.state.
    TableState``; the type checker holds the reducer to it: tests/journal/test_recovery.py)."""

    @property
    def latched_faults(self) -> Mapping[str, _AlertView]: ...
    @property
    def faults_raised(self) -> int: ...
    @property
    def last_seq(self) -> int: ...
    @property
    def button_seat(self) -> int | None: ...
    @property
    def last_round_id(self) -> str | None: ...
    @property
    def closed_rounds(self) -> Mapping[str, str]: ...
    @property
    def rounds_started(self) -> int: ...
    @property
    def last_round_number(self) -> int: ...
    @property
    def closed_by_operator(self) -> _ClosedView | None: ...
    @property
    def limits(self) -> Mapping[str, Any] | None: ...
    @property
    def paytables(self) -> Mapping[str, object]: ...
    @property
    def settings_config_digest(self) -> str | None: ...
    @property
    def progressive(self) -> _MeterView: ...


@dataclass(frozen=True, slots=True)
class TableConfig:
    """The table as the engine needs it. The daemon builds it from the TOML configuration.

    ``seats``: the seat numbers (1..7) that have a betting station, no more than the deck serves
    (controller.settings.check_seat_count: the configuration file's rule). ``rake`` is the settle
    input's ``{"method": "i"|"ii"|"iii", "amount": CENTS}`` (designated-player mode only); ``paytables`` the
    settle input's per-wager overrides. ``house_may_bank``: in designated-player mode, when nobody
    accepts the button the house banks the round instead of refusing to start it.
    ``decision_timeout_s``: a seat that has not acted this long after its decision phase opened has
    walked away (a fold; in Chase the Flush before the river, a check).
    ``deal_timeout_s``: a deal in flight whose shoe has reported nothing (no card, no hand complete) this
    long is incomplete: a misdeal, the round is dead (the banker is short of cards) and the table held.
    ``config_digest``: the digest of the configuration file this was built from (journaled with the
    manager's changes, so that a restart applies them only on top of the same file).
    """

    table_id: str = "T1"
    game: str = HIGH_CARD_FLUSH
    banking_mode: str = HOUSE
    seats: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
    min_ante_cents: int = 100
    max_ante_cents: int = 100_000
    paytables: Mapping[str, object] = field(default_factory=dict)
    rake: Mapping[str, object] | None = None
    bonus_cap_cents: int | None = None
    # The posted maximum of each bonus wager (docs/rules.md "Paytables and limits"); a bonus wager not named
    # here is limited by max_ante_cents (docs/configuration.md "[limits]").
    max_bonus_cents: Mapping[str, int] = field(default_factory=dict)
    # Designated player: the least bank the button's player may post (docs/configuration.md).
    min_bank_cents: int = 1
    house_may_bank: bool = False
    decision_timeout_s: float = 30.0
    deal_timeout_s: float = 30.0
    # Designated player: the offered player's time to accept the button; then it is a waive.
    dp_offer_timeout_s: float = 15.0
    config_digest: str = ""
    # The Progressive wager's parameters (controller.progressive.model.ProgressiveParameters), None: the
    # table offers none. Its spot is the one after the game's wagers (TableContext.spot_wagers).
    progressive: object | None = None
    shuffler_device: str = "shuffler"
    sensors_device: str = "sensors"
    display_device: str = "display"
    # The property's zone and gaming day ([property], controller/locale.py): a round id is dated by the
    # gaming day it starts in (docs/journal.md "Round ids").
    property_settings: PropertySettings = DEFAULT_PROPERTY

    def __post_init__(self) -> None:
        # The same rules as the configuration file (controller/settings.py): one seat rule, one rake.
        check_engine_table(
            {
                "table_id": self.table_id,
                "game": self.game,
                "banking_mode": self.banking_mode,
                "seats": self.seats,
                "min_ante_cents": self.min_ante_cents,
                "max_ante_cents": self.max_ante_cents,
                "rake": dict(self.rake) if isinstance(self.rake, Mapping) else self.rake,
                "bonus_cap_cents": self.bonus_cap_cents,
                "max_bonus_cents": dict(self.max_bonus_cents),
                "min_bank_cents": self.min_bank_cents,
                "house_may_bank": self.house_may_bank,
                "decision_timeout_s": self.decision_timeout_s,
                "deal_timeout_s": self.deal_timeout_s,
                "dp_offer_timeout_s": self.dp_offer_timeout_s,
            }
        )

    def max_bonus_for(self, wager: str) -> int:
        """The posted maximum of a bonus wager: its own, else the ante's maximum."""
        return self.max_bonus_cents.get(wager, self.max_ante_cents)
