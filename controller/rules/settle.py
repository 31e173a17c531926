"""Settlement of one round of any of the three games, exactly per docs/rules.md. Pure: no I/O, no clock.

Public API (other modules code against these names; keep them stable):

- :func:`parse_round` ``(obj: Mapping[str, object]) -> Round``: a round from its JSON form (the
  ``flushtable settle`` contract in docs/settle.md). Raises :class:`UserError` naming the field.
- :func:`check_round` ``(round) -> None``: the same checks for a :class:`Round` built in code.
- :func:`settle` ``(round) -> Settlement``: every wager's result. Checks the round first.
- :meth:`Settlement.to_json` ``() -> dict``: the output contract.
- :func:`settle_parsed` ``(obj) -> Settlement``: ``settle(parse_round(obj))``, the round checked once.
- :func:`settle_round_json` ``(obj) -> dict``: parse, settle and ``to_json`` in one call.

Signs: a wager's ``net`` is the player's profit (a lost stake of 500 is -500; a push or a returned
wager is 0). ``banker_net`` is the banker's profit (the house, or the designated player). ``rake`` is
what the house took as its fee. Every settlement conserves money::

    sum(seat.net for seat in seats) + banker_net + rake == 0

The decisions docs/rules.md leaves open are written in docs/rules.md ("Decisions").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

from controller.errors import CardError, UserError, shown
from controller.names import MAX_SEAT as MAX_SEAT  # noqa: PLC0414  (re-exported)
from controller.names import MIN_SEAT, RakeMethod
from controller.rules.amounts import MAX_AMOUNT_CENTS, check_cents, check_positive_cents, type_name
from controller.rules.cards import Card, cards_text, parse_card
from controller.rules.catalogue import BASE_RULE, FLUSH_BONUS, STRAIGHT_FLUSH_BONUS, WAGERS
from controller.rules.games import (
    CHASE_THE_FLUSH,
    DESIGNATED_PLAYER,
    HOUSE,
    NOT_OFFERED,
    PROGRESSIVE,
    PROGRESSIVE_GAMES,
    STREET_WORDS,
    STREETS,
    GameSpec,
    check_bet_wagers,
    decision_limits,
    game_spec,
    largest_decision_multiplier,
)
from controller.rules.hands import Hand, compare, evaluate
from controller.rules.paytables import Paytable, default_paytable, parse_paytable

if TYPE_CHECKING:
    from controller.rules.progressive import ProgressiveResult, ProgressiveRound

RAKE_METHODS: tuple[str, ...] = tuple(
    RakeMethod
)  # docs/rules.md (i), (ii), (iii): controller.names.RakeMethod

# Wager results.
WIN = "win"
LOSE = "lose"
PUSH = "push"
RETURNED = "returned"  # a dead hand's or dead seat's wager: given back, whatever the cards

# Seat statuses.
LIVE = "live"
FOLDED = "folded"
DEAD = "dead"

# Why a seat is dead (the seat's "reason" in the settlement).
WRONG_CARD_COUNT = "wrong card count"
NOT_COVERED = "not covered by the designated player's funds"
ROUND_DEAD = "round dead"


# --- the round ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Banking:
    """Who banks the round. House by default; in designated-player mode ``seat`` is the DP's seat,
    ``funds_cents`` what the DP posted before the deal and ``bonus_cap_cents`` the optional maximum
    aggregate bonus payout per round."""

    mode: str = HOUSE
    seat: int | None = None
    funds_cents: int = 0
    bonus_cap_cents: int | None = None


@dataclass(frozen=True, slots=True)
class Rake:
    """The house's fee per hand (designated-player mode): ``method`` "i", "ii" or "iii", and the fixed
    ``amount_cents`` each payer pays."""

    method: str
    amount_cents: int


@dataclass(frozen=True, slots=True)
class Seat:
    """One player's seat: its hole cards, its wagers in cents, its decision.

    ``folded`` is the fold; ``street`` is, in Chase the Flush, when the all-in was made.
    """

    seat: int
    cards: tuple[Card, ...]
    wagers: Mapping[str, int]
    folded: bool = False
    street: str | None = None


@dataclass(frozen=True, slots=True)
class Round:
    """One round to settle. ``dealer`` is the banker's hole cards (the DP's in designated-player mode);
    ``community`` the shared cards (Chase the Flush). ``paytables`` overrides the game's default preset
    per bonus wager. ``dead`` kills the whole round (a shuffler fault, a card seen twice at the table)."""

    game: str
    dealer: tuple[Card, ...]
    seats: tuple[Seat, ...]
    banking: Banking = field(default_factory=Banking)
    community: tuple[Card, ...] = ()
    paytables: Mapping[str, Paytable] = field(default_factory=dict)
    rake: Rake | None = None
    dead: bool = False
    # The Progressive wager's parameters and the meter before the round (docs/rules.md "Progressive
    # wager"); None when the round has none. The house banks it in every banking mode.
    progressive: ProgressiveRound | None = None

    def paytable(self, wager: str) -> Paytable:
        """The paytable ``wager`` is paid by in this round: the round's own, or the game's preset."""
        table = self.paytables.get(wager)
        return table if table is not None else default_paytable(self.game, self.banking.mode, wager)


# --- the settlement -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WagerResult:
    """One wager's outcome. ``net`` is the player's profit. ``odds`` is the paytable line a bonus won
    on; ``shortfall_cents`` what a designated player owed but could not pay; ``capped_from_cents`` the
    win before the aggregate bonus cap reduced it."""

    wager: str
    stake_cents: int
    result: str
    net_cents: int
    odds: int | None = None
    shortfall_cents: int = 0
    capped_from_cents: int | None = None
    # The Progressive wager: the paytable line reached and the award paid *for* the wager (the stake is
    # collected, so ``net`` is the award less the stake).
    line: int | None = None
    award_cents: int | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"stake": self.stake_cents, "result": self.result, "net": self.net_cents}
        if self.odds is not None:
            out["odds"] = self.odds
        if self.line is not None:
            out["line"] = self.line
        if self.award_cents is not None:
            out["award"] = self.award_cents
        if self.capped_from_cents is not None:
            out["capped_from"] = self.capped_from_cents
        if self.shortfall_cents:
            out["shortfall"] = self.shortfall_cents
        return out


@dataclass(frozen=True, slots=True)
class SeatResult:
    """One seat's settlement. ``hand`` is None for a dead seat: a dead hand's cards are never shown."""

    seat: int
    status: str
    hand: Hand | None
    wagers: tuple[WagerResult, ...]
    rake_cents: int = 0
    dead_reason: str | None = None

    @property
    def net_cents(self) -> int:
        """The player's profit on the round: every wager's net, less the rake the seat paid."""
        return sum(wager.net_cents for wager in self.wagers) - self.rake_cents

    def wager(self, name: str) -> WagerResult | None:
        for wager in self.wagers:
            if wager.wager == name:
                return wager
        return None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"seat": self.seat, "status": self.status}
        if self.dead_reason is not None:
            out["reason"] = self.dead_reason
        out["hand"] = None if self.hand is None else self.hand.to_json()
        out["wagers"] = {wager.wager: wager.to_json() for wager in self.wagers}
        out["rake"] = self.rake_cents
        out["net"] = self.net_cents
        return out


@dataclass(frozen=True, slots=True)
class RakeLine:
    """One rake charge: ``seat`` is the payer's seat; ``designated_player`` says it is the DP."""

    seat: int
    amount_cents: int
    designated_player: bool = False

    def to_json(self) -> dict[str, object]:
        payer = "designated player" if self.designated_player else "player"
        return {"seat": self.seat, "payer": payer, "amount": self.amount_cents}


@dataclass(frozen=True, slots=True)
class DesignatedPlayerReport:
    """How the DP's funds went: seats taken into action in ``action_order``, what was committed at bet
    lock, collected from losing wagers, paid to winners, and the shortfall owed but not paid."""

    seat: int
    funds_cents: int
    action_order: tuple[int, ...]
    committed_cents: int
    collected_cents: int
    paid_cents: int
    shortfall_cents: int

    def to_json(self) -> dict[str, object]:
        return {
            "seat": self.seat,
            "funds": self.funds_cents,
            "action_order": list(self.action_order),
            "committed": self.committed_cents,
            "collected": self.collected_cents,
            "paid": self.paid_cents,
            "shortfall": self.shortfall_cents,
        }


@dataclass(frozen=True, slots=True)
class BonusCapReport:
    """The aggregate bonus cap: the round's bonus wins before it, what was paid after the proportional
    reduction, and the rounding (cap minus paid) that the rounding down left unpaid."""

    cap_cents: int
    bonus_wins_cents: int
    applied: bool
    paid_cents: int
    rounding_cents: int

    def to_json(self) -> dict[str, object]:
        return {
            "cap": self.cap_cents,
            "bonus_wins": self.bonus_wins_cents,
            "applied": self.applied,
            "paid": self.paid_cents,
            "rounding": self.rounding_cents,
        }


@dataclass(frozen=True, slots=True)
class Settlement:
    """The result of :func:`settle`. ``dealer_hand`` is None when the round is dead."""

    game: str
    banking_mode: str
    dead: bool
    dealer_hand: Hand | None
    dealer_qualifies: bool | None
    seats: tuple[SeatResult, ...]
    rake_lines: tuple[RakeLine, ...] = ()
    designated_player: DesignatedPlayerReport | None = None
    bonus_cap: BonusCapReport | None = None
    progressive: ProgressiveResult | None = None

    @property
    def rake_cents(self) -> int:
        return sum(line.amount_cents for line in self.rake_lines)

    @property
    def banker_rake_cents(self) -> int:
        return sum(line.amount_cents for line in self.rake_lines if line.designated_player)

    @property
    def banker_net_cents(self) -> int:
        """The banker's profit: what the players lost less what they won, less the DP's own rake. The
        Progressive wager is not the banker's: the house's progressive banks it (``progressive.net``)."""
        return (
            -sum(
                wager.net_cents for seat in self.seats for wager in seat.wagers if wager.wager != PROGRESSIVE
            )
            - self.banker_rake_cents
        )

    @property
    def progressive_net_cents(self) -> int:
        """The progressive's take from the round: its wagers collected less its awards (0 without one)."""
        return 0 if self.progressive is None else self.progressive.net_cents

    def seat(self, number: int) -> SeatResult:
        for seat in self.seats:
            if seat.seat == number:
                return seat
        raise KeyError(number)

    def to_json(self) -> dict[str, object]:
        dealer: dict[str, object] | None = None
        if self.dealer_hand is not None:
            dealer = {"qualifies": self.dealer_qualifies, "hand": self.dealer_hand.to_json()}
        out: dict[str, object] = {
            "game": self.game,
            "banking": self.banking_mode,
            "dead": self.dead,
            "dealer": dealer,
            "seats": [seat.to_json() for seat in self.seats],
            "banker_net": self.banker_net_cents,
            "rake": self.rake_cents,
        }
        if self.banking_mode == DESIGNATED_PLAYER:
            out["rake_lines"] = [line.to_json() for line in self.rake_lines]
        if self.designated_player is not None:
            out["designated_player"] = self.designated_player.to_json()
        if self.bonus_cap is not None:
            out["bonus_cap"] = self.bonus_cap.to_json()
        if self.progressive is not None:
            out["progressive"] = self.progressive.to_json()
        return out


# --- parsing ----------------------------------------------------------------------------------------
# The input's shape is read by the plain reader below (unknown fields refused, every field's type checked,
# the first problem named in one line); what depends on the game (its wagers, its banking modes, its bonus
# wagers' paytables) and on the cards is checked after, by parse_round and check_round.
#
# The reader is plain code, not a validation library's models, so the rules import none: `flushtable
# settle` starts in about a bare interpreter's time (issue 28). It reads the input exactly as the pydantic
# models it replaced did (tests/rules/settle_input_reference.py keeps them as the oracle, and
# tests/rules/test_settle_input_oracle.py compares the two on generated inputs):
#
# - an object's fields are read in the order of its table below; a problem is recorded at its path and
#   reading goes on; then each of the object's unknown fields is recorded, in the input's order;
# - the first problem recorded is the one named, except that an unknown field of an object that holds
#   it (or of the object itself) is named before it (docs/settle.md);
# - ``banking``'s check across its fields runs as soon as its fields are read without a problem, and
#   its refusal is named at once, before any problem found earlier or later.

_Path = tuple[int | str, ...]


class _Refusal(Exception):
    """A value refused, in our words: the reader records it at the field's path."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _BankingRefusal(Exception):
    """``banking``'s check across its fields: named at once, before every other problem."""


@dataclass(frozen=True, slots=True)
class _Problem:
    """One problem the reader found at ``path``. ``kind``: "refused" (``reason`` says why), "missing"
    (``reason`` is the hint), "unknown" (a field the object has not; ``known`` its fields), "object" or
    "list" (``value`` is not one)."""

    path: _Path
    kind: str
    reason: str = ""
    value: object = None
    known: tuple[str, ...] = ()


_BAD: Final = object()  # what a value read with a problem stands as (never used: the round is refused)
_Read = Callable[["_Reader", object, _Path], object]


@dataclass(frozen=True, slots=True)
class _Field:
    """One field of an object of the input: how it is read, and what stands when it is absent: missing
    (with ``hint``) when ``required``; else ``default`` (``factory()`` if given), read like a given
    value when ``read_default``."""

    read: _Read
    required: bool = False
    hint: str = ""
    default: object = None
    factory: Callable[[], object] | None = None
    read_default: bool = False


class _Reader:
    """Reads one round's input, recording every problem (see the comment above)."""

    def __init__(self) -> None:
        self.problems: list[_Problem] = []

    def fields(self, value: object, path: _Path, fields: Mapping[str, _Field]) -> dict[str, object] | None:
        """The object's fields, read (an absent one at its default); None when it has a problem."""
        if not isinstance(value, Mapping):
            self.problems.append(_Problem(path, "object", value=value))
            return None
        before = len(self.problems)
        out: dict[str, object] = {}
        for name, field_ in fields.items():
            if name in value:
                out[name] = field_.read(self, value[name], (*path, name))
            elif field_.required:
                self.problems.append(_Problem((*path, name), "missing", field_.hint))
            elif field_.read_default:
                out[name] = field_.read(self, field_.default, (*path, name))
            else:
                out[name] = field_.factory() if field_.factory is not None else field_.default
        for key in value:
            if key not in fields:  # (the known names sorted only for a refusal: the engine's input has none)
                self.problems.append(_Problem((*path, key), "unknown", known=tuple(sorted(fields))))
        return out if len(self.problems) == before else None

    def items(self, value: object, path: _Path, read: _Read) -> list[object]:
        """A list's items, each read (a tuple from code is a list too)."""
        if not isinstance(value, list | tuple | set | frozenset | deque):
            self.problems.append(_Problem(path, "list", value=value))
            return []
        return [read(self, item, (*path, index)) for index, item in enumerate(value)]


def _scalar(check: Callable[[object], object]) -> _Read:
    """A reader of one value by ``check``, which raises _Refusal."""

    def read(reader: _Reader, value: object, path: _Path) -> object:
        try:
            return check(value)
        except _Refusal as refused:
            reader.problems.append(_Problem(path, "refused", refused.reason))
            return _BAD

    return read


def _nullable(read: _Read) -> _Read:
    """A field that may be null: null stands as None, unread."""

    def read_or_none(reader: _Reader, value: object, path: _Path) -> object:
        return None if value is None else read(reader, value, path)

    return read_or_none


def _path_text(path: Sequence[int | str]) -> str:
    """('seats', 0, 'cards') -> 'seats[0].cards'."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def _named(problems: Sequence[_Problem]) -> str:
    """The one problem a refusal names, as ``field: reason``."""
    first = problems[0]
    for other in problems:
        # An object's unknown fields are named before its fields' own problems (docs/settle.md).
        parent = other.path[:-1]
        if other.kind == "unknown" and first.path[: len(parent)] == parent:
            first = other
            break
    key = _path_text(first.path)
    if first.kind == "refused":
        return f"{key}: {first.reason}"
    if first.kind == "missing":
        return f"{key}: missing" + (f" ({first.reason})" if first.reason else "")
    if first.kind == "unknown":
        where = _path_text(first.path[:-1]) or "round"
        return f"{where}: unknown field {shown(first.path[-1])} (known: {', '.join(first.known)})"
    if first.kind == "object":
        return f"{key or 'round'}: must be an object, not {type_name(first.value)}"
    return f"{key}: must be a list, not {type_name(first.value)}"


def _field(prefix: str, key: str) -> str:
    """``prefix.key`` for a readable key; ``prefix[<key as quoted>]`` for anything long or odd."""
    if key.isidentifier() and len(key) <= 40:
        return f"{prefix}.{key}"
    return f"{prefix}[{shown(key)}]"


def _seat_number(value: object, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{field_name}: must be a seat number {MIN_SEAT}..{MAX_SEAT}, not {type_name(value)}")
    if not MIN_SEAT <= value <= MAX_SEAT:
        raise UserError(f"{field_name}: must be a seat number {MIN_SEAT}..{MAX_SEAT}, not {shown(value)}")
    return value


def _refused_as(check: Callable[[object, str], object]) -> Callable[[object], object]:
    """``check(value, field)``'s UserError as a _Refusal of its reason (the reader adds the path)."""

    def checked(value: object) -> object:
        try:
            return check(value, "value")
        except UserError as error:
            raise _Refusal(str(error).partition(": ")[2]) from None

    return checked


def _bool_input(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Refusal(f"must be true or false, not {type_name(value)} {shown(value)}")
    return value


def _card_input(value: object) -> Card:
    try:
        return parse_card(value)
    except CardError as error:
        raise _Refusal(str(error)) from None


def _object_input(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _Refusal(f"must be an object, not {type_name(value)}")
    for key in value:
        if not isinstance(key, str):
            raise _Refusal(f"keys must be strings, not {shown(key)}")
    return dict(value)


def _street_input(value: object) -> object:
    if value is not None and not isinstance(value, str):
        raise _Refusal(f"must be one of {', '.join(STREETS)}, not {type_name(value)}")
    return value


def _game_input(value: object) -> str:
    try:
        return game_spec(value).name
    except UserError as error:
        raise _Refusal(str(error).partition(": ")[2]) from None


def _banking_mode_input(value: object) -> object:
    if value not in (HOUSE, DESIGNATED_PLAYER):
        raise _Refusal(f"must be {HOUSE!r} or {DESIGNATED_PLAYER!r}, not {shown(value)}")
    return value


def _rake_method_input(value: object) -> str:
    if isinstance(value, str):
        for method in RakeMethod:
            if value == method.value:
                return method.value
    raise _Refusal(
        "must be 'i' (every player), 'ii' (every player but the designated player) or "
        f"'iii' (the designated player only), not {shown(value)}"
    )


def _cards(reader: _Reader, value: object, path: _Path) -> object:
    return reader.items(value, path, _scalar(_card_input))


def _banking(reader: _Reader, value: object, path: _Path) -> object:
    fields = reader.fields(value, path, _BANKING_FIELDS)
    if fields is None:
        return _BAD
    assert isinstance(value, Mapping)
    if fields["mode"] == HOUSE:
        extra = sorted(name for name in _BANKING_FIELDS if name in value and name != "mode")
        if extra:
            raise _BankingRefusal(f"banking.{extra[0]}: only the designated-player mode takes {extra[0]!r}")
        return Banking()
    # Each field was read by its own check (a seat number, cents, cents or None): the casts say so.
    seat, funds = cast(int | None, fields["seat"]), cast(int | None, fields["funds"])
    if seat is None:
        raise _BankingRefusal("banking.seat: missing (the designated player's seat)")
    if funds is None:
        raise _BankingRefusal(
            "banking.funds: missing (the cents the designated player posted before the deal)"
        )
    bonus_cap = cast(int | None, fields["bonus_cap"])
    return Banking(DESIGNATED_PLAYER, seat, funds, bonus_cap)


def _rake(reader: _Reader, value: object, path: _Path) -> object:
    fields = reader.fields(value, path, _RAKE_FIELDS)
    if fields is None:
        return _BAD
    return Rake(cast(str, fields["method"]), cast(int, fields["amount"]))


@dataclass(frozen=True, slots=True)
class _SeatFields:
    """One seat as the input gives it (its wagers are checked against the game after)."""

    seat: int
    cards: list[Card]
    wagers: dict[str, Any]
    folded: bool
    street: str | None


def _seat_input(reader: _Reader, value: object, path: _Path) -> object:
    fields = reader.fields(value, path, _SEAT_FIELDS)
    return _BAD if fields is None else _SeatFields(**fields)  # type: ignore[arg-type]  # read by _SEAT_FIELDS


def _seats(reader: _Reader, value: object, path: _Path) -> object:
    return reader.items(value, path, _seat_input)


_cents_input = _scalar(_refused_as(check_cents))

_RAKE_FIELDS: Final[dict[str, _Field]] = {
    # No method is refused as a wrong one (the contract's words), hence the default read.
    "method": _Field(_scalar(_rake_method_input), read_default=True),
    "amount": _Field(_cents_input, required=True, hint="the fixed cents per hand each payer pays"),
}
_BANKING_FIELDS: Final[dict[str, _Field]] = {
    "mode": _Field(_scalar(_banking_mode_input), default=HOUSE),
    # A null seat or funds is refused as a wrong value, an absent one as missing (in _banking).
    "seat": _Field(_scalar(_refused_as(_seat_number))),
    "funds": _Field(_cents_input),
    "bonus_cap": _Field(_nullable(_scalar(_refused_as(check_positive_cents)))),
}
_SEAT_FIELDS: Final[dict[str, _Field]] = {
    "seat": _Field(_scalar(_refused_as(_seat_number)), required=True),
    "cards": _Field(_cards, required=True),
    "wagers": _Field(_scalar(_object_input), read_default=True),  # absent: "must be an object, not null"
    "folded": _Field(_scalar(_bool_input), default=False),
    "street": _Field(_scalar(_street_input)),
}
_ROUND_FIELDS: Final[dict[str, _Field]] = {
    "game": _Field(_scalar(_game_input), required=True, hint="high-card-flush, top-flush or chase-the-flush"),
    "banking": _Field(_banking, default=Banking()),
    "paytables": _Field(_scalar(_object_input), factory=dict),
    "rake": _Field(_nullable(_rake)),
    "dealer": _Field(_cards, required=True, hint="the banker's cards"),
    "community": _Field(_cards, factory=list),
    "seats": _Field(_seats, required=True),
    "dead": _Field(_scalar(_bool_input), default=False),
}


def _seat(value: _SeatFields, index: int, spec: GameSpec) -> Seat:
    where = f"seats[{index}]"
    wagers: dict[str, int] = {}
    for name, amount in value.wagers.items():
        if name == PROGRESSIVE and spec.name not in PROGRESSIVE_GAMES:
            raise UserError(f"{where}.wagers.progressive: {NOT_OFFERED}")
        if name not in spec.wagers and not (name == PROGRESSIVE and spec.name in PROGRESSIVE_GAMES):
            raise UserError(
                f"{_field(where + '.wagers', name)}: unknown wager for {spec.name} "
                f"(known: {', '.join(spec.wagers)})"
            )
        wagers[name] = check_cents(amount, f"{where}.wagers.{name}")
    return Seat(
        seat=value.seat, cards=tuple(value.cards), wagers=wagers, folded=value.folded, street=value.street
    )


def parse_round(obj: Mapping[str, object]) -> Round:
    """The round written as JSON per docs/settle.md, checked; a bad field raises UserError naming it."""
    # The progressive is read by its own parser (controller/rules/progressive.py), after the game.
    has_progressive = isinstance(obj, Mapping) and PROGRESSIVE in obj
    progressive_json = obj.get(PROGRESSIVE) if has_progressive else None
    if has_progressive:
        obj = {key: value for key, value in obj.items() if key != PROGRESSIVE}
    reader = _Reader()
    try:
        given = reader.fields(obj, (), _ROUND_FIELDS)
    except _BankingRefusal as refused:
        raise UserError(str(refused)) from None
    if given is None:
        raise UserError(_named(reader.problems))
    # Each field was read by its own check: the casts say what it gave (no problem was recorded).
    game, banking = cast(str, given["game"]), cast(Banking, given["banking"])
    spec = game_spec(game)
    if banking.mode not in spec.banking_modes:
        raise UserError(f"banking.mode: {spec.name} is house-banked only")
    paytables: dict[str, Paytable] = {}
    for wager, table in cast(dict[str, object], given["paytables"]).items():
        if wager not in spec.bonus_wagers:
            raise UserError(
                f"{_field('paytables', wager)}: not a bonus wager of {spec.name} "
                f"(bonus wagers: {', '.join(spec.bonus_wagers)})"
            )
        paytables[wager] = parse_paytable(table, field=f"paytables.{wager}")
    progressive = None
    if has_progressive:
        if spec.name not in PROGRESSIVE_GAMES:
            raise UserError(f"progressive: {NOT_OFFERED}")
        from controller.rules.progressive import parse_progressive_round  # noqa: PLC0415 (a round with a progressive only: its rules load ~4 ms)

        progressive = parse_progressive_round(progressive_json)
    round_ = Round(
        game=spec.name,
        dealer=tuple(cast(list[Card], given["dealer"])),
        seats=tuple(
            _seat(seat, index, spec) for index, seat in enumerate(cast(list[_SeatFields], given["seats"]))
        ),
        banking=banking,
        community=tuple(cast(list[Card], given["community"])),
        paytables=paytables,
        rake=cast(Rake | None, given["rake"]),
        dead=cast(bool, given["dead"]),
        progressive=progressive,
    )
    check_round(round_)
    return round_


# --- checks -------------------------------------------------------------------------------------------
def _round_is_dead(round_: Round, spec: GameSpec) -> bool:
    """docs/rules.md: the banker dealt the wrong number, a wrong community count, or a fault: the round
    is dead."""
    return (
        round_.dead or len(round_.dealer) != spec.hole_cards or len(round_.community) != spec.community_cards
    )


def _seat_is_misdealt(seat: Seat, spec: GameSpec) -> bool:
    """docs/rules.md: a seat dealt the wrong number of cards is dead."""
    return len(seat.cards) != spec.hole_cards


def check_round(round_: Round) -> None:  # noqa: PLR0912 - one check per field of a round, each its own one-line error
    """Refuse a round that cannot be settled, naming the field: see docs/settle.md "Refused input"."""
    spec = game_spec(round_.game)
    banking = round_.banking
    if banking.mode not in spec.banking_modes:
        raise UserError(f"banking.mode: {spec.name} cannot be banked {banking.mode!r}")
    if banking.mode == DESIGNATED_PLAYER:
        if banking.seat is None:
            raise UserError("banking.seat: missing (the designated player's seat)")
        _seat_number(banking.seat, "banking.seat")
        check_cents(banking.funds_cents, "banking.funds")
        if banking.bonus_cap_cents is not None:  # the configuration's words for the same refusal
            check_positive_cents(banking.bonus_cap_cents, "banking.bonus_cap")
    elif round_.rake is not None:
        raise UserError(
            "rake: a rake is taken only in the designated-player mode; a house-banked game has none"
        )
    if round_.rake is not None:
        if round_.rake.method not in RAKE_METHODS:
            raise UserError(
                f"rake.method: must be one of {', '.join(RAKE_METHODS)}, not {shown(round_.rake.method)}"
            )
        check_cents(round_.rake.amount_cents, "rake.amount")
    for wager in round_.paytables:
        if wager not in spec.bonus_wagers:
            raise UserError(f"{_field('paytables', wager)}: not a bonus wager of {spec.name}")
    if round_.progressive is not None:
        if spec.name not in PROGRESSIVE_GAMES:
            raise UserError(f"progressive: {NOT_OFFERED}")
        from controller.rules.progressive import check_meter, check_progressive_settings  # noqa: PLC0415 (a round with a progressive only: its rules load ~4 ms)

        check_progressive_settings(round_.progressive.settings)
        check_meter(
            round_.progressive.settings,
            round_.progressive.meter_cents,
            round_.progressive.reserve_cents,
            field=PROGRESSIVE,
        )
    if spec.community_cards == 0 and round_.community:
        raise UserError(f"community: {spec.name} has no community cards")
    if not round_.seats:
        raise UserError("seats: a round needs at least one seat")
    if len(round_.seats) > spec.max_players:
        raise UserError(
            f"seats: {len(round_.seats)} seats, but {spec.name} seats at most {spec.max_players} players "
            f"(no more seats than the deck serves)"
        )

    # Every card once: the banker's, the community's, then each seat's.
    seen: dict[Card, tuple[str, int]] = {}
    _see_once(seen, round_.dealer, "dealer")
    _see_once(seen, round_.community, "community")
    numbers: set[int] = set()
    for index, seat in enumerate(round_.seats):
        where = f"seats[{index}]"
        _seat_number(seat.seat, f"{where}.seat")
        if seat.seat in numbers:
            raise UserError(f"{where}.seat: seat {seat.seat} appears twice")
        if banking.mode == DESIGNATED_PLAYER and seat.seat == banking.seat:
            raise UserError(
                f"{where}.seat: seat {seat.seat} is the designated player's (its cards are 'dealer')"
            )
        numbers.add(seat.seat)
        _see_once(seen, seat.cards, f"{where}.cards")
        _check_seat_wagers(round_, spec, seat, where)


def _see_once(seen: dict[Card, tuple[str, int]], cards: Sequence[Card], where: str) -> None:
    """Each of ``cards`` not seen before (``seen``: where each card was). Where a card was is written
    out only for the refusal (every card of every round is checked: ~50 a round at the table)."""
    for position, card in enumerate(cards):
        first = seen.get(card)
        if first is not None:
            text = cards_text([card])[0]
            raise UserError(f"{where}[{position}]: {text} appears twice (also in {first[0]}[{first[1]}])")
        seen[card] = (where, position)


def _check_seat_wagers(round_: Round, spec: GameSpec, seat: Seat, where: str) -> None:
    _check_progressive_wager(round_, spec, seat, where)
    check_bet_wagers(
        spec.name,
        {name: amount for name, amount in seat.wagers.items() if name != PROGRESSIVE},
        field=f"{where}.wagers",
    )
    if seat.street is not None and spec.name != CHASE_THE_FLUSH:
        raise UserError(f"{where}.street: only Chase the Flush has streets")
    if seat.street is not None and seat.street not in STREETS:
        raise UserError(f"{where}.street: must be one of {', '.join(STREETS)}, not {shown(seat.street)}")

    ante = seat.wagers["ante"]
    decision = spec.decision_wager
    amount = seat.wagers.get(decision, 0)
    if seat.folded:
        if amount:
            raise UserError(f"{where}.wagers.{decision}: a folded seat has no {decision} wager")
        if spec.name == CHASE_THE_FLUSH and seat.street is not None:
            raise UserError(f"{where}.street: a folded seat made no all-in")
        return
    if _round_is_dead(round_, spec) or _seat_is_misdealt(seat, spec):
        # A dead hand's wagers all go back whatever they are: its cards cannot be judged.
        return
    hand = evaluate((*seat.cards, *round_.community))
    if spec.name == CHASE_THE_FLUSH:
        if seat.street is None:
            raise UserError(f"{where}.street: missing (when the all-in was made: {', '.join(STREETS)})")
        if amount == 0:
            raise UserError(f"{where}.wagers.all_in: missing (a seat that did not fold made its all-in)")
    elif amount == 0:
        raise UserError(f"{where}.wagers.{decision}: missing (a seat that did not fold made its {decision})")
    low, high = decision_limits(spec.name, hand, ante, seat.street)
    if not low <= amount <= high:
        allowed = f"exactly {low}" if low == high else f"{low} to {high}"
        why = (
            STREET_WORDS[seat.street] if seat.street is not None else f"with a {hand.flush_length}-card flush"
        )
        raise UserError(
            f"{where}.wagers.{decision}: {amount} is outside its limit ({allowed} {why}, ante {ante})"
        )


def _check_progressive_wager(round_: Round, spec: GameSpec, seat: Seat, where: str) -> None:
    """docs/rules.md: a fixed unit on its own spot, only where the game offers it and the round has one."""
    if PROGRESSIVE not in seat.wagers:
        return
    field_name = f"{where}.wagers.{PROGRESSIVE}"
    if spec.name not in PROGRESSIVE_GAMES:
        raise UserError(f"{field_name}: {NOT_OFFERED}")
    stake = check_cents(seat.wagers[PROGRESSIVE], field_name)
    if stake == 0:
        return
    if round_.progressive is None:
        raise UserError(
            f'{field_name}: the round has no progressive (give "progressive": {{"meter_cents": ..., ...}})'
        )
    from controller.rules.progressive import check_progressive_stake  # noqa: PLC0415 (a round with a progressive only: its rules load ~4 ms)

    check_progressive_stake(round_.progressive.settings, stake, field_name)


# --- settlement -----------------------------------------------------------------------------------------
@dataclass(slots=True)
class Owed:
    """A provisional wager result, before the cap and the DP's funds."""

    wager: str
    stake: int
    result: str
    net: int
    odds: int | None = None
    capped_from: int | None = None
    shortfall: int = 0


def _even_money(wager: str, stake: int, outcome: int) -> Owed:
    if outcome > 0:
        return Owed(wager, stake, WIN, stake)
    if outcome < 0:
        return Owed(wager, stake, LOSE, -stake)
    return Owed(wager, stake, PUSH, 0)


def paytable_win(wager: str, stake: int, table: Paytable, length: int) -> Owed:
    """Paid on the player's own hand: the highest line reached pays, none reached loses."""
    odds = table.odds_for(length)
    if odds is None:
        return Owed(wager, stake, LOSE, -stake)
    return Owed(wager, stake, WIN, stake * odds, odds=odds)


def _settle_hcf_or_top_flush(
    spec: GameSpec, seat: Seat, hand: Hand, dealer: Hand, *, qualifies: bool
) -> list[Owed]:
    """High Card Flush's and Top Flush's base rule: the ante and the raise (play)."""
    ante = seat.wagers["ante"]
    decision = spec.decision_wager
    if seat.folded:
        return [Owed("ante", ante, LOSE, -ante)]
    if not qualifies:
        # The banker does not qualify: the ante wins 1 to 1, the raise (play) pushes.
        return [Owed("ante", ante, WIN, ante), Owed(decision, seat.wagers[decision], PUSH, 0)]
    outcome = compare(hand, dealer)
    return [_even_money("ante", ante, outcome), _even_money(decision, seat.wagers[decision], outcome)]


@dataclass(frozen=True, slots=True)
class BonusBet:
    """What a bonus wager's rule judges: its stake on one seat, the paytable it is paid by this round,
    the seat's hand and the banker's, whether the banker qualifies, whether the seat folded, and
    whether the house banks the round (else a designated player does)."""

    wager: str
    stake: int
    paytable: Paytable
    hand: Hand
    dealer: Hand
    qualifies: bool
    folded: bool
    house_banked: bool


WagerRule = Callable[[BonusBet], "Owed"]


def flush_bonus(bet: BonusBet) -> Owed:
    """docs/rules.md: house-banked, paid on the player's own flush length, win or lose, even after a
    fold; against a designated player, a contest: a fold forfeits it, identical hands push, and it pays
    only when the player's flush reaches the paytable and beats the DP's hand."""
    if bet.house_banked:
        return paytable_win(bet.wager, bet.stake, bet.paytable, bet.hand.flush_length)
    if bet.folded:
        return Owed(bet.wager, bet.stake, LOSE, -bet.stake)
    if bet.hand == bet.dealer:
        return Owed(bet.wager, bet.stake, PUSH, 0)
    if bet.hand.flush_length >= bet.paytable.min_length and bet.hand > bet.dealer:
        return paytable_win(bet.wager, bet.stake, bet.paytable, bet.hand.flush_length)
    return Owed(bet.wager, bet.stake, LOSE, -bet.stake)


def straight_flush_bonus(bet: BonusBet) -> Owed:
    """As :func:`flush_bonus`, on the straight-flush run length; against a DP the longer run wins, then
    the higher top card, and equal runs push."""
    length = bet.hand.straight_flush_length
    if bet.house_banked:
        return paytable_win(bet.wager, bet.stake, bet.paytable, length)
    run = bet.hand.straight_flush  # run_length << 4 | top rank: longer first, then the higher top card
    dealer_run = bet.dealer.straight_flush
    if bet.folded:
        return Owed(bet.wager, bet.stake, LOSE, -bet.stake)
    if bet.hand == bet.dealer:
        return Owed(bet.wager, bet.stake, PUSH, 0)
    if length < bet.paytable.min_length or run < dealer_run:
        return Owed(bet.wager, bet.stake, LOSE, -bet.stake)
    if run == dealer_run:
        return Owed(bet.wager, bet.stake, PUSH, 0)
    return paytable_win(bet.wager, bet.stake, bet.paytable, length)


WAGER_RULES: dict[str, WagerRule] = {FLUSH_BONUS: flush_bonus, STRAIGHT_FLUSH_BONUS: straight_flush_bonus}
"""The settle rule of each bonus wager the game's base rule does not judge, by the name its catalogue
line gives (controller/rules/catalogue.py ``Wager.rule``)."""


def register_wager_rule(name: str, rule: WagerRule) -> None:
    """Name ``rule`` so a catalogue line can settle a wager by it (docs/engine.md "Adding a wager")."""
    WAGER_RULES[name] = rule


def _settle_bonuses(
    round_: Round, spec: GameSpec, seat: Seat, hands: tuple[Hand, Hand], *, qualifies: bool
) -> list[Owed]:
    """Each placed bonus wager the base rule does not judge, by its catalogue line's rule."""
    hand, dealer = hands
    owed: list[Owed] = []
    for name in spec.bonus_wagers:
        stake = seat.wagers.get(name, 0)
        rule = WAGERS[name].rule
        if stake and rule != BASE_RULE:
            bet = BonusBet(
                name,
                stake,
                round_.paytable(name),
                hand,
                dealer,
                qualifies,
                seat.folded,
                round_.banking.mode == HOUSE,
            )
            owed.append(WAGER_RULES[rule](bet))
    return owed


def _settle_chase(round_: Round, seat: Seat, hand: Hand, dealer: Hand, qualifies: bool) -> list[Owed]:
    """Chase the Flush's base rule: the ante, the X-tra Bonus (judged with the hand) and the all-in."""
    ante = seat.wagers["ante"]
    xtra = seat.wagers["xtra_bonus"]
    xtra_table = round_.paytable("xtra_bonus")
    owed: list[Owed] = []
    if seat.folded:
        # Fold: ante and X-tra Bonus lose; the Same Suit Bonus still pays on the hand.
        owed.append(Owed("ante", ante, LOSE, -ante))
        owed.append(Owed("xtra_bonus", xtra, LOSE, -xtra))
    else:
        all_in = seat.wagers["all_in"]
        outcome = compare(hand, dealer)
        if qualifies:
            owed.append(_even_money("ante", ante, outcome))
        else:
            owed.append(Owed("ante", ante, PUSH, 0))  # returned first, before any hand is looked at
        if outcome > 0:
            # X-tra Bonus on a win: a flush reaching the paytable pays, a shorter winning flush pushes.
            odds = xtra_table.odds_for(hand.flush_length)
            if odds is None:
                owed.append(Owed("xtra_bonus", xtra, PUSH, 0))
            else:
                owed.append(Owed("xtra_bonus", xtra, WIN, xtra * odds, odds=odds))
        else:
            owed.append(_even_money("xtra_bonus", xtra, outcome))
        owed.append(_even_money("all_in", all_in, outcome))
    return owed


def _in_spot_order(owed: list[Owed], wagers: Sequence[str]) -> list[Owed]:
    return sorted(owed, key=lambda item: wagers.index(item.wager))


def action_order(designated_seat: int, seats: Sequence[int]) -> tuple[int, ...]:
    """Seats in the order they are taken into action and paid in designated-player mode.

    docs/rules.md: "starting to the right of the button and going counter-clockwise". Seats are numbered
    1..7 clockwise, in the order the deal goes round ("starting at the left of the dealer button and
    proceeding clockwise"), so the seat to the button's right is the next lower number: the order is
    the DP's seat minus 1, minus 2, ..., down to seat 1, then from the highest seat down to the DP's seat
    plus 1. Example: DP in seat 4, players in 1, 2, 3, 5, 6, 7 -> 3, 2, 1, 7, 6, 5.
    """
    return tuple(sorted(seats, key=lambda seat: (designated_seat - seat) % (MAX_SEAT + 1)))


@dataclass(frozen=True, slots=True)
class Coverage:
    """Which seats a designated player covers at bet lock (see :func:`cover_seats`)."""

    action_order: tuple[int, ...]
    covered: tuple[int, ...]
    uncovered: tuple[int, ...]
    committed_cents: int


def bonus_top_cents(wagers: Mapping[str, int], paytable: Callable[[str], Paytable], spec: GameSpec) -> int:
    """The most a seat's bonus wagers can win together: each placed bonus wager's stake times the best
    odds its paytable pays (docs/rules.md "Designated player": "the top payout of each bonus wager it
    placed")."""
    return sum(
        wagers[wager] * max(odds for _length, odds in paytable(wager).odds_by_length)
        for wager in spec.bonus_wagers
        if wagers.get(wager, 0)
    )


def cover_seats(
    game: str,
    designated_seat: int,
    funds_cents: int,
    antes_cents: Mapping[int, int],
    *,
    bonus_tops_cents: Mapping[int, int] | None = None,
    bonus_cap_cents: int | None = None,
) -> Coverage:
    """Bet lock in designated-player mode: which seats the DP's bank covers.

    docs/rules.md: "a seat is in action while the DP's uncommitted bank covers its largest possible win: ante,
    the largest raise its cards allow (unknown at lock, so 3x the ante), and the top payout of each bonus
    wager it placed, where the bonus parts of all seats covered so far count together at most the
    aggregate bonus cap, when one is set. A seat that cannot be covered is dead". Seats are taken in
    :func:`action_order`; a seat needs ``ante x (1 + 3)`` for its main wagers, and the bonus part of
    every seat covered so far plus its own (``bonus_tops_cents``, by seat: :func:`bonus_top_cents`) counts
    at most ``bonus_cap_cents``. A seat that cannot be covered is passed over and the next one is tried.
    The round machine calls this at lock; :func:`settle` calls it again from the round, so both agree.

    Example: bank 20,000, antes 1,000 each, cap 10,000; seat 3 a flush bonus whose top payout is 20,000,
    seat 2 none: seat 3 needs 4,000 + min(20,000, 10,000) = 14,000 (covered); seat 2 needs 4,000 more
    with the bonus part still 10,000: 18,000 in all (covered). Without the cap seat 3 needs 24,000: dead.
    """
    order = action_order(designated_seat, list(antes_cents))
    per_ante = 1 + largest_decision_multiplier(game)
    tops = bonus_tops_cents or {}
    covered: list[int] = []
    uncovered: list[int] = []
    main = 0  # the main wagers' part committed so far
    bonus = 0  # the bonus parts of the seats covered so far, before the cap

    def bonus_part(total: int) -> int:
        return total if bonus_cap_cents is None else min(total, bonus_cap_cents)

    for number in order:
        need_main = antes_cents[number] * per_ante
        with_bonus = bonus + tops.get(number, 0)
        if main + need_main + bonus_part(with_bonus) <= funds_cents:
            main += need_main
            bonus = with_bonus
            covered.append(number)
        else:
            uncovered.append(number)
    return Coverage(order, tuple(covered), tuple(uncovered), main + bonus_part(bonus))


def _dead_seat(seat: Seat, spec: GameSpec, reason: str) -> SeatResult:
    wagers = tuple(
        WagerResult(name, seat.wagers[name], RETURNED, 0)
        for name in (*spec.wagers, PROGRESSIVE)
        if seat.wagers.get(name, 0)
    )
    return SeatResult(seat=seat.seat, status=DEAD, hand=None, wagers=wagers, dead_reason=reason)


def settle(round: Round) -> Settlement:
    """Settle every wager of ``round`` exactly per docs/rules.md (checked first; see the module docstring)."""
    check_round(round)
    return _settle_checked(round)


def settle_parsed(obj: Mapping[str, object]) -> Settlement:
    """``settle(parse_round(obj))``, the round checked once (parse_round checks it)."""
    return _settle_checked(parse_round(obj))


def _settle_checked(round_: Round) -> Settlement:
    spec = game_spec(round_.game)
    banking = round_.banking
    designated = banking.mode == DESIGNATED_PLAYER
    by_seat = sorted(round_.seats, key=lambda seat: seat.seat)

    if _round_is_dead(round_, spec):
        reason = ROUND_DEAD
        return Settlement(
            game=spec.name,
            banking_mode=banking.mode,
            dead=True,
            dealer_hand=None,
            dealer_qualifies=None,
            seats=tuple(_dead_seat(seat, spec, reason) for seat in by_seat),
            progressive=_settle_progressive(round_, order=[seat.seat for seat in by_seat], hands={}),
        )

    dealer = evaluate((*round_.dealer, *round_.community))
    qualifies = dealer.qualifies
    order = (
        action_order(banking.seat, [seat.seat for seat in by_seat])
        if designated and banking.seat is not None
        else tuple(seat.seat for seat in by_seat)
    )
    seat_by_number = {seat.seat: seat for seat in round_.seats}

    # Bet lock comes before the deal: coverage is decided on the antes alone, and a seat found misdealt
    # afterwards keeps the cover it was given.
    dead_reason: dict[int, str] = {}
    committed = 0
    if designated and banking.seat is not None:
        coverage = cover_seats(
            spec.name,
            banking.seat,
            banking.funds_cents,
            {seat.seat: seat.wagers["ante"] for seat in by_seat},
            bonus_tops_cents={
                seat.seat: bonus_top_cents(seat.wagers, round_.paytable, spec) for seat in by_seat
            },
            bonus_cap_cents=banking.bonus_cap_cents,
        )
        committed = coverage.committed_cents
        for number in coverage.uncovered:
            dead_reason[number] = NOT_COVERED
    for number in order:
        if number not in dead_reason and _seat_is_misdealt(seat_by_number[number], spec):
            dead_reason[number] = WRONG_CARD_COUNT

    owed_by_seat: dict[int, list[Owed]] = {}
    hands: dict[int, Hand] = {}
    for number in order:
        if number in dead_reason:
            continue
        seat = seat_by_number[number]
        hand = evaluate((*seat.cards, *round_.community))
        hands[number] = hand
        if spec.name == CHASE_THE_FLUSH:
            owed = _settle_chase(round_, seat, hand, dealer, qualifies)
        else:
            owed = _settle_hcf_or_top_flush(spec, seat, hand, dealer, qualifies=qualifies)
        owed += _settle_bonuses(round_, spec, seat, (hand, dealer), qualifies=qualifies)
        owed_by_seat[number] = _in_spot_order(owed, spec.wagers)

    cap_report: BonusCapReport | None = None
    dp_report: DesignatedPlayerReport | None = None
    if designated:
        cap_report = _apply_bonus_cap(banking.bonus_cap_cents, owed_by_seat, order, spec)
        dp_report = _pay_from_funds(banking, owed_by_seat, order, committed, spec)

    rake_lines = _rake_lines(round_, order, dead_reason) if designated else ()
    rake_by_seat = {line.seat: line.amount_cents for line in rake_lines if not line.designated_player}
    # The house's progressive, outside the DP's bank, coverage and cap: paid in the table's settlement
    # order (house: the dealer's right to left, the highest seat first; DP: the action order).
    progressive_order = order if designated else tuple(sorted(order, reverse=True))
    progressive = _settle_progressive(round_, order=progressive_order, hands=hands)

    results: list[SeatResult] = []
    for number in order:
        seat = seat_by_number[number]
        if number in dead_reason:
            results.append(_dead_seat(seat, spec, dead_reason[number]))
            continue
        wagers = tuple(
            WagerResult(
                item.wager, item.stake, item.result, item.net, item.odds, item.shortfall, item.capped_from
            )
            for item in owed_by_seat[number]
        ) + _progressive_wager_result(seat, progressive)
        results.append(
            SeatResult(
                seat=number,
                status=FOLDED if seat.folded else LIVE,
                hand=hands[number],
                wagers=wagers,
                rake_cents=rake_by_seat.get(number, 0),
            )
        )
    return Settlement(
        game=spec.name,
        banking_mode=banking.mode,
        dead=False,
        dealer_hand=dealer,
        dealer_qualifies=qualifies,
        seats=tuple(results),
        rake_lines=rake_lines,
        designated_player=dp_report,
        bonus_cap=cap_report,
        progressive=progressive,
    )


def _settle_progressive(
    round_: Round, *, order: Sequence[int], hands: Mapping[int, Hand]
) -> ProgressiveResult | None:
    """The round's progressive: every seat's Progressive wager in ``order``; a seat without a hand in
    ``hands`` is dead, its wager returned (no contribution, no award)."""
    if round_.progressive is None:
        return None
    from controller.rules.progressive import ProgressiveEntry, settle_progressive  # noqa: PLC0415 (a round with a progressive only: its rules load ~4 ms)

    by_number = {seat.seat: seat for seat in round_.seats}
    entries = [
        ProgressiveEntry(
            number,
            hands[number].straight_flush_length if number in hands else 0,
            settled=number in hands,
        )
        for number in order
        if by_number[number].wagers.get(PROGRESSIVE, 0)
    ]
    return settle_progressive(
        round_.progressive.settings, round_.progressive.meter_cents, round_.progressive.reserve_cents, entries
    )


def _progressive_wager_result(seat: Seat, progressive: ProgressiveResult | None) -> tuple[WagerResult, ...]:
    """A live seat's Progressive wager: always collected, an award paid *for* it when a line is reached."""
    stake = seat.wagers.get(PROGRESSIVE, 0)
    if not stake or progressive is None:
        return ()
    award = progressive.award_for_seat(seat.seat)
    if award is None:
        return (WagerResult(PROGRESSIVE, stake, LOSE, -stake),)
    return (
        WagerResult(
            PROGRESSIVE,
            stake,
            WIN,
            award.amount_cents - stake,
            line=award.line,
            award_cents=award.amount_cents,
        ),
    )


def _apply_bonus_cap(
    cap: int | None, owed_by_seat: Mapping[int, list[Owed]], order: Sequence[int], spec: GameSpec
) -> BonusCapReport | None:
    """The optional maximum aggregate bonus payout per round: when the round's bonus wins exceed it, each
    win is reduced in proportion, rounded down to the cent; the unpaid rounding is reported."""
    if cap is None:
        return None
    wins = [
        item
        for number in order
        if number in owed_by_seat
        for item in owed_by_seat[number]
        if item.wager in spec.bonus_wagers and item.result == WIN
    ]
    total = sum(item.net for item in wins)
    if total <= cap:
        return BonusCapReport(
            cap_cents=cap, bonus_wins_cents=total, applied=False, paid_cents=total, rounding_cents=0
        )
    paid = 0
    for item in wins:
        reduced = item.net * cap // total  # integer arithmetic: rounded down, never above the cap
        item.capped_from = item.net
        item.net = reduced
        paid += reduced
    return BonusCapReport(
        cap_cents=cap, bonus_wins_cents=total, applied=True, paid_cents=paid, rounding_cents=cap - paid
    )


def _pay_from_funds(
    banking: Banking,
    owed_by_seat: Mapping[int, list[Owed]],
    order: Sequence[int],
    committed: int,
    spec: GameSpec,
) -> DesignatedPlayerReport:
    """docs/rules.md "Designated player": every losing wager of every seat is collected into the bank
    first; then each seat in action order is paid all its winning wagers (in spot order: ante, raise,
    flush, straight flush) before the next seat, up to the bank (posted funds plus what it collected).
    The cap's cut is applied before (:func:`_apply_bonus_cap`). What cannot be paid is recorded as the
    wager's shortfall, never invented."""
    collected = sum(-item.net for number in order for item in owed_by_seat.get(number, ()) if item.net < 0)
    available = banking.funds_cents + collected
    paid = 0
    shortfall = 0
    for number in order:
        for item in sorted(owed_by_seat.get(number, ()), key=lambda owed: spec.wagers.index(owed.wager)):
            if item.net <= 0:
                continue
            payment = min(item.net, available)
            if payment < item.net:
                item.shortfall = item.net - payment
                shortfall += item.shortfall
                item.net = payment
            available -= payment
            paid += payment
    assert banking.seat is not None
    return DesignatedPlayerReport(
        seat=banking.seat,
        funds_cents=banking.funds_cents,
        action_order=tuple(order),
        committed_cents=committed,
        collected_cents=collected,
        paid_cents=paid,
        shortfall_cents=shortfall,
    )


def bank_by_seat(settlement: Settlement) -> dict[str, object] | None:
    """The designated player's bank as it runs down, seat by seat (docs/rules.md "Designated player"):
    the posted funds, what the losing wagers brought in (collected first), then each seat in action order
    that was in action (dead seats are returned, not paid) with what it was paid and the bank after it.
    None for a house-banked round. A derivation of the settlement, not part of the settle JSON contract
    (`flushtable settle` prints nothing new): the live journal's round_settled carries it
    (``bank_by_seat``, docs/journal.md), and so does recall. The rake is collected on its own, never
    from the bank (docs/rules.md "Rake"), so it is not in the running balance."""
    report = settlement.designated_player
    if report is None:
        return None
    balance = report.funds_cents + report.collected_cents
    seats: list[dict[str, object]] = []
    for seat in settlement.seats:  # in action order (settle builds them so in this mode)
        if seat.status == DEAD:
            continue
        # The Progressive wager is the house's progressive's, never the DP's bank's.
        paid = sum(
            wager.net_cents for wager in seat.wagers if wager.net_cents > 0 and wager.wager != PROGRESSIVE
        )
        short = sum(wager.shortfall_cents for wager in seat.wagers)
        balance -= paid
        entry: dict[str, object] = {"seat": seat.seat, "paid": paid, "bank_after": balance}
        if short:
            entry["shortfall"] = short  # owed and not paid: recorded, never invented
        seats.append(entry)
    return {
        "funds": report.funds_cents,
        "collected": report.collected_cents,
        "after_collecting": report.funds_cents + report.collected_cents,
        "seats": seats,
        "bank_after_paying": balance,
    }


def _rake_lines(round_: Round, order: Sequence[int], dead_reason: Mapping[int, str]) -> tuple[RakeLine, ...]:
    """The house's fee, one line per payer. Dead seats are never raked; a folded seat played the hand
    and is raked; the DP is raked only when at least one seat was in action against it."""
    rake = round_.rake
    if rake is None or rake.amount_cents == 0:
        return ()
    in_action = [number for number in order if number not in dead_reason]
    if not in_action:
        return ()
    lines: list[RakeLine] = []
    if rake.method in ("i", "ii"):
        lines.extend(RakeLine(number, rake.amount_cents) for number in in_action)
    if rake.method in ("i", "iii"):
        assert round_.banking.seat is not None
        lines.append(RakeLine(round_.banking.seat, rake.amount_cents, designated_player=True))
    return tuple(lines)


def settle_round_json(obj: Mapping[str, object]) -> dict[str, object]:
    """Parse, settle and render one round: the whole ``flushtable settle`` contract for one round."""
    return settle_parsed(obj).to_json()


__all__ = [
    "DEAD",
    "FOLDED",
    "LIVE",
    "LOSE",
    "MAX_AMOUNT_CENTS",
    "NOT_COVERED",
    "PUSH",
    "RETURNED",
    "ROUND_DEAD",
    "WIN",
    "WRONG_CARD_COUNT",
    "Banking",
    "BonusCapReport",
    "Coverage",
    "DesignatedPlayerReport",
    "Rake",
    "RakeLine",
    "Round",
    "Seat",
    "SeatResult",
    "Settlement",
    "WagerResult",
    "action_order",
    "bank_by_seat",
    "bonus_top_cents",
    "check_round",
    "cover_seats",
    "parse_round",
    "settle",
    "settle_parsed",
    "settle_round_json",
]
