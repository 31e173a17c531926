"""The settle input's reader as it was before issue 28: typed models (RoundInput, BankingInput,
SeatInput and controller.settings' SettleRake) and controller.settings' ``one_line``. Kept here, in the
tests only, as the oracle the plain reader of controller/rules/settle.py is compared with
(tests/rules/test_settle_input_oracle.py): every input is refused in the same words or read the same.
The rules engine itself no longer imports pydantic (issue 28: ``flushtable settle`` starts at once).

The models were pydantic's; they are now controller/checked.py's (the configuration's models, which
replaced pydantic's declaration for declaration so that `flushtable config` loads no pydantic either),
so the oracle also holds the checked models to the words the pydantic ones gave: the plain reader was
proven equal to the pydantic models here before the switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from controller.checked import BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from controller.errors import CardError, UserError, shown
from controller.names import MAX_SEAT, MIN_SEAT
from controller.rules.amounts import type_name
from controller.rules.cards import Card, parse_card
from controller.rules.games import DESIGNATED_PLAYER, HOUSE, STREETS, game_spec
from controller.rules.paytables import Paytable, parse_paytable
from controller.rules.round_input import Banking, Rake, Round, _field, _seat, check_round
from controller.settings import (
    KeyRefusal,
    SettleRake,
    Strict,
    cents_input,
    one_line,
    positive_cents_input,
    refusal,
)


def _seat_number_input(value: object) -> int:
    try:
        return _seat_number(value, "seat")
    except UserError as error:
        raise refusal(str(error).partition(": ")[2]) from None


def _seat_number(value: object, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{field_name}: must be a seat number {MIN_SEAT}..{MAX_SEAT}, not {type_name(value)}")
    if not MIN_SEAT <= value <= MAX_SEAT:
        raise UserError(f"{field_name}: must be a seat number {MIN_SEAT}..{MAX_SEAT}, not {shown(value)}")
    return value


def _bool_input(value: object) -> bool:
    if not isinstance(value, bool):
        raise refusal(f"must be true or false, not {type_name(value)} {shown(value)}")
    return value


def _card_input(value: object) -> Card:
    try:
        return parse_card(value)
    except CardError as error:
        raise refusal(str(error)) from None


def _object_input(value: object) -> object:
    if not isinstance(value, Mapping):
        raise refusal(f"must be an object, not {type_name(value)}")
    for key in value:
        if not isinstance(key, str):
            raise refusal(f"keys must be strings, not {shown(key)}")
    return dict(value)


def _street_input(value: object) -> object:
    if value is not None and not isinstance(value, str):
        raise refusal(f"must be one of {', '.join(STREETS)}, not {type_name(value)}")
    return value


def _game_input(value: object) -> object:
    try:
        return game_spec(value).name
    except UserError as error:
        raise refusal(str(error).partition(": ")[2]) from None


def _banking_mode_input(value: object) -> object:
    if value not in (HOUSE, DESIGNATED_PLAYER):
        raise refusal(f"must be {HOUSE!r} or {DESIGNATED_PLAYER!r}, not {shown(value)}")
    return value


_Cards = list[Annotated[Card, BeforeValidator(_card_input)]]
_SeatNumber = Annotated[int, BeforeValidator(_seat_number_input)]
_Cents = Annotated[int, BeforeValidator(cents_input)]
_Flag = Annotated[bool, BeforeValidator(_bool_input)]
_Object = Annotated[dict[str, Any], BeforeValidator(_object_input)]


class _Input(Strict):
    # Lists may come as tuples from code; every scalar is checked by its own validator, in our words.
    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)


class BankingInput(_Input):
    """The input's ``banking``: who banks the round (docs/settle.md)."""

    mode: Annotated[str, BeforeValidator(_banking_mode_input)] = HOUSE
    # A null seat or funds is refused as a wrong value, an absent one as missing (below).
    seat: Annotated[int | None, BeforeValidator(_seat_number_input)] = None
    funds: Annotated[int | None, BeforeValidator(cents_input)] = None
    bonus_cap: Annotated[int, BeforeValidator(positive_cents_input)] | None = None

    @model_validator(mode="after")
    def _by_mode(self) -> BankingInput:
        if self.mode == HOUSE:
            extra = sorted(set(self.model_fields_set) - {"mode"})
            if extra:
                raise KeyRefusal(f"banking.{extra[0]}", f"only the designated-player mode takes {extra[0]!r}")
        elif self.seat is None:
            raise KeyRefusal("banking.seat", "missing (the designated player's seat)")
        elif self.funds is None:
            raise KeyRefusal(
                "banking.funds", "missing (the cents the designated player posted before the deal)"
            )
        return self

    def banking(self) -> Banking:
        if self.mode == HOUSE:
            return Banking()
        assert self.funds is not None  # checked above
        return Banking(DESIGNATED_PLAYER, self.seat, self.funds, self.bonus_cap)


class SeatInput(_Input):
    """One seat of the input: its number, cards, wagers (named by the game: checked after) and decision."""

    seat: _SeatNumber
    cards: _Cards
    wagers: _Object = Field(default=None, validate_default=True)  # absent: "must be an object, not null"
    folded: _Flag = False
    street: Annotated[str | None, BeforeValidator(_street_input)] = None


class RoundInput(_Input):
    """One round as ``flushtable settle`` reads it (docs/settle.md), fields in the order they are checked."""

    game: Annotated[str, BeforeValidator(_game_input)]
    banking: BankingInput = BankingInput()
    paytables: _Object = Field(default_factory=dict)
    rake: SettleRake | None = None
    dealer: _Cards
    community: _Cards = Field(default_factory=list)
    seats: list[SeatInput]
    dead: _Flag = False

    missing_hints: ClassVar[dict[str, str]] = {
        "game": "high-card-flush, top-flush or chase-the-flush",
        "dealer": "the banker's cards",
    }


def reference_parse_round(obj: Mapping[str, object]) -> Round:
    """parse_round as it was: the typed models, then the same checks."""
    try:
        given = RoundInput.model_validate(obj)
    except ValidationError as error:
        key, reason = one_line(error, RoundInput, json_input=True)
        raise UserError(f"{key}: {reason}") from None
    except KeyRefusal as refused:
        raise UserError(f"{refused.key}: {refused.reason}") from None
    spec = game_spec(given.game)
    banking = given.banking.banking()
    if banking.mode not in spec.banking_modes:
        raise UserError(f"banking.mode: {spec.name} is house-banked only")
    paytables: dict[str, Paytable] = {}
    for wager, table in given.paytables.items():
        if wager not in spec.bonus_wagers:
            raise UserError(
                f"{_field('paytables', wager)}: not a bonus wager of {spec.name} "
                f"(bonus wagers: {', '.join(spec.bonus_wagers)})"
            )
        paytables[wager] = parse_paytable(table, field=f"paytables.{wager}")
    rake = None if given.rake is None else Rake(given.rake.method.value, given.rake.amount)
    round_ = Round(
        game=spec.name,
        dealer=tuple(given.dealer),
        seats=tuple(_seat(seat, index, spec) for index, seat in enumerate(given.seats)),  # type: ignore[arg-type]
        banking=banking,
        community=tuple(given.community),
        paytables=paytables,
        rake=rake,
        dead=given.dead,
    )
    check_round(round_)
    return round_
