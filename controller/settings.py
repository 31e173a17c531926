"""The typed pieces the table's configuration and the engine's TableConfig share (checked models:
controller/checked.py, pydantic's model API without pydantic), and the one translation of a
ValidationError into a one-line UserError. (``flushtable settle``'s input is read by plain code in
controller/rules/settle.py, in the same words, so the rules load no validation library at all; and
`flushtable config` loads no pydantic: issue 28, docs/operations.md.)

Three readers used to check the same things three ways; now each is a checked model built of these:

- ``Rake``: docs/rules.md's rake, one spelling (``controller.names.RakeMethod`` and ``amount_cents``). The
  configuration file writes the method as a word (``all_players``: controller/config/sections.py reads it with
  ``rake_method_from_word``), the settle input as docs/rules.md's numeral (``"i"``) with ``amount``
  (``SettleRake``, which the engine's table is checked by too; ``Rake.to_settle`` writes it). The
  settlement's own ``controller.rules.settle.Rake`` is a plain value with the same two fields.
- ``EngineTable``: the engine's TableConfig's checks, in the same words and by the same rules.
- ``check_seat_count``: the one seat rule (controller.names.max_seats: the deck serves MAX_PLAYERS hands
  and the banker's; a designated-player table has one seat more unless the house may bank a round).
- ``refusal``: raise a field's refusal from inside a validator with exactly the words we choose;
  ``one_line`` turns a ValidationError into ``KEY: reason`` naming the first problem.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar

from controller.checked import (
    REFUSED,
    BeforeValidator,
    ConfigDict,
    Field,
    Model,
    Refusal,
    ValidationError,
    model_validator,
)
from controller.errors import UserError, shown
from controller.locale import PropertyRefused, PropertySettings, property_settings
from controller.names import (
    BANKING_MODES,
    DESIGNATED_PLAYER,
    GAME_NAMES,
    HOUSE,
    MAX_SEAT,
    MIN_SEAT,
    RakeMethod,
    max_seats,
)
from controller.rules.amounts import check_cents, check_positive_cents, type_name
from controller.rules.games import GAMES


def refusal(reason: str) -> Refusal:
    """A refusal raised inside a validator: the model records it at the field being validated."""
    return Refusal(reason)


class KeyRefusal(Exception):
    """A refusal found by a check across fields (after every field is valid): ``key`` names the field.
    Not a ValueError, so the model lets it through as it is."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


class Strict(Model):
    """Every model refuses unknown keys and never coerces: a typo or a float where cents go is refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    # What a refusal adds after "missing" for a field, by the field's name: "missing (a table like [limits])".
    missing_hints: ClassVar[dict[str, str]] = {}


def _did_you_mean(value: str, choices: Sequence[str]) -> str:
    import difflib  # noqa: PLC0415 - only for a refusal (heapq and difflib: ~1 ms a `config` start)

    close = difflib.get_close_matches(value, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key(name: str, known: Sequence[str]) -> str:
    """``unknown key (did you mean 'seats'?)`` or ``unknown key (known: a, b)``."""
    hint = _did_you_mean(name, known)
    return "unknown key" + (hint or (f" (known: {', '.join(known)})" if known else ""))


def toml_type(value: object) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def key_path(loc: Sequence[int | str]) -> str:
    """('panel', 'users', 0, 'role') -> 'panel.users[0].role'; a dict key's own check drops '[key]'."""
    text = ""
    for part in loc:
        if part == "[key]":
            continue
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _model_at(model: type[Model], loc: Sequence[int | str]) -> type[Model] | None:
    """The model class that holds the field at ``loc`` (walking fields, lists, dicts and optionals)."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        origin = typing.get_origin(current)
        if origin in (list, tuple, dict):  # this part is an index or a key: step into the items
            current = typing.get_args(current)[-1 if origin is dict else 0]
        elif isinstance(current, type) and issubclass(current, Model) and isinstance(part, str):
            if part not in current.model_fields:
                return None
            current = current.model_fields[part].annotation
        else:
            return None
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, Model) else None


def _unwrap(annotation: Any) -> Any:
    """``X`` from ``Annotated[X, ...]`` and ``X | None``."""
    for _ in range(4):
        origin = typing.get_origin(annotation)
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if origin is typing.Annotated or (origin in (typing.Union, types.UnionType) and len(args) == 1):
            annotation = args[0]
        else:
            break
    return annotation


def one_line(error: ValidationError, model: type[Model], *, json_input: bool = False) -> tuple[str, str]:
    """The first problem the model found, as (key, reason) in our words: a TOML file's (``table``,
    ``array``, ``unknown key``), or with ``json_input`` the settle input's (``object``, ``list``,
    ``unknown field``, named on the object that has it: docs/settle.md)."""
    errors = error.errors(include_url=False)
    first = errors[0]
    # An object's (a TOML table's) unknown keys are named before its keys' own problems (docs/settle.md,
    # docs/configuration.md): a typo'd `min_ante_cent` is the cause of `min_ante_cents: missing`.
    for other in errors:
        parent = tuple(other["loc"])[:-1]
        if other["type"] == "extra_forbidden" and tuple(first["loc"])[: len(parent)] == parent:
            first = other
            break
    loc = tuple(first["loc"])
    key = key_path(loc)
    kind = first["type"]
    value = first.get("input")
    what = type_name if json_input else toml_type
    if kind == REFUSED:
        return key, str(first["ctx"]["reason"])
    if kind == "missing":
        holder = _model_at(model, loc[:-1])
        name = str(loc[-1])
        hint = getattr(holder, "missing_hints", {}).get(name, "") if holder is not None else ""
        return key, "missing" + (f" ({hint})" if hint else "")
    if kind == "extra_forbidden":
        holder = _model_at(model, loc[:-1])
        known = list(holder.model_fields) if holder is not None else []
        if json_input:
            where = key_path(loc[:-1]) or "round"
            return where, f"unknown field {shown(loc[-1])} (known: {', '.join(sorted(known))})"
        return key, unknown_key(str(loc[-1]), known)
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return (key or "round"), f"must be {'an object' if json_input else 'a table'}, not {what(value)}"
    if kind in ("list_type", "tuple_type"):
        return key, f"must be {'a list' if json_input else 'an array'}, not {what(value)}"
    if kind == "string_type":
        return key, f"must be a string, not {what(value)}"
    if kind == "bool_type":
        return key, f"must be true or false, not {what(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return key, f"must be a whole number, not {what(value)} {shown(value)}"
    if kind in ("float_type", "float_parsing"):
        return key, f"must be a number, not {what(value)}"
    return key, str(first["msg"])


# --- the rake ---------------------------------------------------------------------------------------------
class Rake(Strict):
    """docs/rules.md's house rake: each payer pays ``amount_cents`` per hand by ``method``."""

    method: RakeMethod
    amount_cents: int

    def to_settle(self) -> dict[str, object]:
        """The settle input's form: ``{"method": "i", "amount": CENTS}`` (docs/settle.md)."""
        return {"method": self.method.value, "amount": self.amount_cents}


def rake_method_from_word(word: object) -> RakeMethod:
    """The configuration file's word for a method (``all_players``, ``players_not_dp``, ``dp_only``)."""
    for method in RakeMethod:
        if word == method.word:
            return method
    words = [method.word for method in RakeMethod]
    shown_word = repr(word) if isinstance(word, str) else toml_type(word)
    raise refusal(f"{shown_word} is not one of: {', '.join(words)}{_did_you_mean(str(word), words)}")


# --- seats -------------------------------------------------------------------------------------------
def check_seat_count(game: str, banking_mode: str, seats: int, *, house_may_bank: bool) -> str | None:
    """Why ``seats`` seats are too many or too few for the table, or None when they are right.

    The one seat rule: docs/rules.md "at most 6 players (7 cards each, plus the banker's 7, from one deck)".
    The deck serves MAX_PLAYERS hands and the banker's; at a designated-player table the banker sits at
    one of the seats, so it may have one seat more, unless the house may bank a round (then the house
    needs a hand of its own while every seat plays)."""
    limit = max_seats(game, banking_mode, house_may_bank=house_may_bank)
    if not 1 <= seats <= limit:
        return f"{seats} is out of range 1..{limit} (one deck serves that many hands and the banker's)"
    if banking_mode == DESIGNATED_PLAYER and seats < 2:
        return "a designated-player table needs at least 2 seats"
    return None


# --- the settle input's rake, and the engine's table ----------------------------------------------------
def _rake_method_from_numeral(value: object) -> RakeMethod:
    if isinstance(value, str):
        for method in RakeMethod:
            if value == method.value:
                return method
    raise refusal(
        "must be 'i' (every player), 'ii' (every player but the designated player) or "
        f"'iii' (the designated player only), not {shown(value)}"
    )


def cents_input(value: object) -> int:
    """Whole cents as the rules engine takes them (controller.rules.amounts.check_cents), as a refusal."""
    try:
        return check_cents(value, "amount")
    except UserError as error:
        raise refusal(str(error).partition(": ")[2]) from None


def positive_cents_input(value: object) -> int:
    """Whole cents of at least 1 (controller.rules.amounts.check_positive_cents), as a refusal: the
    configuration, the engine's table and ``flushtable settle`` refuse a 0 in the same words."""
    try:
        return check_positive_cents(value, "amount")
    except UserError as error:
        raise refusal(str(error).partition(": ")[2]) from None


class SettleRake(Strict):
    """The settle input's ``rake``: ``{"method": "i"|"ii"|"iii", "amount": CENTS}`` (docs/settle.md)."""

    # No method is refused as a wrong one (the contract's words), hence the default validated.
    method: Annotated[RakeMethod, BeforeValidator(_rake_method_from_numeral)] = Field(
        default=None, validate_default=True
    )
    amount: Annotated[int, BeforeValidator(cents_input)]

    missing_hints: ClassVar[dict[str, str]] = {
        "amount": "the fixed cents per hand each payer pays",
    }


def _seats(value: object) -> object:
    if not isinstance(value, tuple | list) or not value:
        raise refusal("give the seat numbers, e.g. (1, 2, 3, 4, 5, 6)")
    for seat in value:
        if isinstance(seat, bool) or not isinstance(seat, int) or not MIN_SEAT <= seat <= MAX_SEAT:
            raise refusal(f"seat numbers are {MIN_SEAT}..{MAX_SEAT}, not {shown(seat)}")
    if len(set(value)) != len(value):
        raise refusal("give each seat number once")
    return tuple(value)


def _positive_seconds(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise refusal("must be positive")
    return float(value)


def _game(value: object) -> object:
    if value not in GAME_NAMES:
        raise refusal(f"unknown game {shown(value)} (known: {', '.join(GAME_NAMES)})")
    return value


def _banking_mode(value: object) -> object:
    if value not in BANKING_MODES:
        raise refusal(f"must be {HOUSE!r} or {DESIGNATED_PLAYER!r}")
    return value


class EngineTable(Strict):
    """The checks of the engine's ``TableConfig`` (controller/engine/state.py), which the daemon builds
    from the configuration and tests build directly: the same rules as the configuration file."""

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True, arbitrary_types_allowed=True)

    table_id: str
    game: Annotated[str, BeforeValidator(_game)]
    banking_mode: Annotated[str, BeforeValidator(_banking_mode)]
    seats: Annotated[tuple[int, ...], BeforeValidator(_seats)]
    min_ante_cents: Annotated[int, BeforeValidator(cents_input)]
    max_ante_cents: Annotated[int, BeforeValidator(cents_input)]
    rake: SettleRake | None = None
    bonus_cap_cents: Annotated[int, BeforeValidator(positive_cents_input)] | None = None
    max_bonus_cents: dict[str, Annotated[int, BeforeValidator(positive_cents_input)]] = Field(
        default_factory=dict
    )
    min_bank_cents: Annotated[int, BeforeValidator(positive_cents_input)] = 1
    house_may_bank: bool = False
    decision_timeout_s: Annotated[float, BeforeValidator(_positive_seconds)]
    deal_timeout_s: Annotated[float, BeforeValidator(_positive_seconds)]
    dp_offer_timeout_s: Annotated[float, BeforeValidator(_positive_seconds)] = 15.0

    @model_validator(mode="after")
    def _across(self) -> EngineTable:
        if self.banking_mode not in GAMES[self.game].banking_modes:
            raise KeyRefusal("banking_mode", f"{self.game} is house-banked only")
        why = check_seat_count(
            self.game, self.banking_mode, len(self.seats), house_may_bank=self.house_may_bank
        )
        if why is not None:
            raise KeyRefusal("seats", why)
        if not 0 < self.min_ante_cents <= self.max_ante_cents:
            raise KeyRefusal("min_ante_cents", "must be positive and at most max_ante_cents")
        if self.rake is not None and self.banking_mode != DESIGNATED_PLAYER:
            raise KeyRefusal("rake", "a rake is taken only in the designated-player mode")
        bonus_refusal = check_bonus_limits(self.game, self.max_bonus_cents)
        if bonus_refusal is not None:
            raise KeyRefusal(*bonus_refusal)
        return self


def check_bonus_limits(game: str, max_bonus_cents: Mapping[str, int]) -> tuple[str, str] | None:
    """None when every key names one of the game's bonus wagers, else (key, reason)."""
    bonus_wagers = GAMES[game].bonus_wagers
    for wager in max_bonus_cents:
        if wager not in bonus_wagers:
            return (
                f"max_bonus_cents.{wager}",
                f"not a bonus wager of {game} (bonus wagers: {', '.join(bonus_wagers)})",
            )
    return None


def check_engine_table(fields: dict[str, object]) -> None:
    """Refuse an engine TableConfig whose fields break the table's rules: UserError ``field: reason``."""
    try:
        EngineTable.model_validate(fields)
    except ValidationError as error:
        key, reason = one_line(error, EngineTable)
        raise UserError(f"{key}: {reason}") from None
    except KeyRefusal as refused:
        raise UserError(f"{refused.key}: {refused.reason}") from None


__all__ = [
    "REFUSED",
    "EngineTable",
    "KeyRefusal",
    "Rake",
    "SettleRake",
    "Strict",
    "cents_input",
    "check_bonus_limits",
    "check_engine_table",
    "check_seat_count",
    "key_path",
    "one_line",
    "positive_cents_input",
    "rake_method_from_word",
    "refusal",
    "toml_type",
    "unknown_key",
]


class PropertySection(Strict):
    """``[property]`` of the table's file and of the floor's (docs/configuration.md "[property]"): the
    property's time zone, gaming day, shifts and currency. Checked by controller/locale.py, each refusal
    one line naming the key (``property.time_zone: 'Europe/Berln' is not a time zone ...``)."""

    time_zone: str = "UTC"
    gaming_day_start: str = "06:00"  # local HH:MM
    shifts: dict[str, str] | None = None  # name -> local start "HH:MM"; None: day, swing, grave
    currency: str | None = None  # ISO 4217; None: the amounts alone, as before the setting
    currency_symbol: str | None = None  # written before amounts instead of the code
    currency_decimals: int | None = None  # the minor unit's places; None: the code's (JPY 0, else 2)

    @model_validator(mode="after")
    def _checked(self) -> PropertySection:
        self.settings()
        return self

    def settings(self) -> PropertySettings:
        try:
            return property_settings(
                time_zone=self.time_zone,
                gaming_day_start=self.gaming_day_start,
                shifts=self.shifts,
                currency=self.currency,
                currency_symbol=self.currency_symbol,
                currency_decimals=self.currency_decimals,
            )
        except PropertyRefused as refused:
            raise KeyRefusal(f"property.{refused.key}", refused.reason) from None
