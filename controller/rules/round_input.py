"""A round as settlement reads it: its types (:class:`Round`, :class:`Seat`, :class:`Banking`,
:class:`Rake`), its JSON form parsed (:func:`parse_round`, the ``flushtable settle`` contract in
docs/settle.md) and its checks (:func:`check_round`). Pure: no I/O, no clock. controller/rules/settle.py
settles what this accepts and names these again in its public API."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from controller.errors import CardError, UserError, shown
from controller.names import MAX_SEAT as MAX_SEAT  # noqa: PLC0414  (re-exported)
from controller.names import MIN_SEAT, RakeMethod
from controller.rules.amounts import check_cents, check_positive_cents, type_name
from controller.rules.cards import Card, cards_text, parse_card
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
)
from controller.rules.hands import evaluate
from controller.rules.paytables import Paytable, default_paytable, parse_paytable
from table_names.records import FrozenRecord

if TYPE_CHECKING:
    from controller.rules.progressive import ProgressiveRound

RAKE_METHODS: tuple[str, ...] = tuple(
    RakeMethod
)  # docs/rules.md (i), (ii), (iii): controller.names.RakeMethod


# --- the round ------------------------------------------------------------------------------------
class Banking(FrozenRecord):
    """Who banks the round. House by default; in designated-player mode ``seat`` is the DP's seat,
    ``funds_cents`` what the DP posted before the deal and ``bonus_cap_cents`` the optional maximum
    aggregate bonus payout per round."""

    __slots__ = ("bonus_cap_cents", "funds_cents", "mode", "seat")
    mode: str
    seat: int | None
    funds_cents: int
    bonus_cap_cents: int | None

    def __init__(
        self,
        mode: str = HOUSE,
        seat: int | None = None,
        funds_cents: int = 0,
        bonus_cap_cents: int | None = None,
    ) -> None:
        self._set_fields(locals())


class Rake(FrozenRecord):
    """The house's fee per hand (designated-player mode): ``method`` "i", "ii" or "iii", and the fixed
    ``amount_cents`` each payer pays."""

    __slots__ = ("amount_cents", "method")
    method: str
    amount_cents: int

    def __init__(self, method: str, amount_cents: int) -> None:
        self._set_fields(locals())


class Seat(FrozenRecord):
    """One player's seat: its hole cards, its wagers in cents, its decision.

    ``folded`` is the fold; ``street`` is, in Chase the Flush, when the all-in was made.
    """

    __slots__ = ("cards", "folded", "seat", "street", "wagers")
    seat: int
    cards: tuple[Card, ...]
    wagers: Mapping[str, int]
    folded: bool
    street: str | None

    def __init__(
        self,
        seat: int,
        cards: tuple[Card, ...],
        wagers: Mapping[str, int],
        folded: bool = False,
        street: str | None = None,
    ) -> None:
        self._set_fields(locals())


class Round(FrozenRecord):
    """One round to settle. ``dealer`` is the banker's hole cards (the DP's in designated-player mode);
    ``community`` the shared cards (Chase the Flush). ``paytables`` overrides the game's default preset
    per bonus wager. ``dead`` kills the whole round (a shuffler fault, a card seen twice at the table)."""

    game: str
    dealer: tuple[Card, ...]
    seats: tuple[Seat, ...]
    banking: Banking
    community: tuple[Card, ...]
    paytables: Mapping[str, Paytable]
    rake: Rake | None
    dead: bool
    # The Progressive wager's parameters and the meter before the round (docs/rules.md "Progressive
    # wager"); None when the round has none. The house banks it in every banking mode.
    progressive: ProgressiveRound | None

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - a round's every part, as the round input gives them
        self,
        game: str,
        dealer: tuple[Card, ...],
        seats: tuple[Seat, ...],
        banking: Banking | None = None,
        community: tuple[Card, ...] = (),
        paytables: Mapping[str, Paytable] | None = None,
        rake: Rake | None = None,
        dead: bool = False,
        progressive: ProgressiveRound | None = None,
    ) -> None:
        banking = Banking() if banking is None else banking
        paytables = {} if paytables is None else paytables
        self._set_fields(locals())

    def paytable(self, wager: str) -> Paytable:
        """The paytable ``wager`` is paid by in this round: the round's own, or the game's preset."""
        table = self.paytables.get(wager)
        return table if table is not None else default_paytable(self.game, self.banking.mode, wager)


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


class _Problem(FrozenRecord):
    """One problem the reader found at ``path``. ``kind``: "refused" (``reason`` says why), "missing"
    (``reason`` is the hint), "unknown" (a field the object has not; ``known`` its fields), "object" or
    "list" (``value`` is not one)."""

    __slots__ = ("kind", "known", "path", "reason", "value")
    path: _Path
    kind: str
    reason: str
    value: object
    known: tuple[str, ...]

    def __init__(
        self, path: _Path, kind: str, reason: str = "", value: object = None, known: tuple[str, ...] = ()
    ) -> None:
        self._set_fields(locals())


_BAD: Final = object()  # what a value read with a problem stands as (never used: the round is refused)
_Read = Callable[["_Reader", object, _Path], object]


class _Field(FrozenRecord):
    """One field of an object of the input: how it is read, and what stands when it is absent: missing
    (with ``hint``) when ``required``; else ``default`` (``factory()`` if given), read like a given
    value when ``read_default``."""

    __slots__ = ("default", "factory", "hint", "read", "read_default", "required")
    read: _Read
    required: bool
    hint: str
    default: object
    factory: Callable[[], object] | None
    read_default: bool

    def __init__(  # noqa: PLR0917 - a field's every part
        self,
        read: _Read,
        required: bool = False,
        hint: str = "",
        default: object = None,
        factory: Callable[[], object] | None = None,
        read_default: bool = False,
    ) -> None:
        self._set_fields(locals())


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


class _SeatFields(FrozenRecord):
    """One seat as the input gives it (its wagers are checked against the game after)."""

    __slots__ = ("cards", "folded", "seat", "street", "wagers")
    seat: int
    cards: list[Card]
    wagers: dict[str, Any]
    folded: bool
    street: str | None

    def __init__(
        self, seat: int, cards: list[Card], wagers: dict[str, Any], folded: bool, street: str | None
    ) -> None:
        self._set_fields(locals())


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
def round_is_dead(round_: Round, spec: GameSpec) -> bool:
    """docs/rules.md: the banker dealt the wrong number, a wrong community count, or a fault: the round
    is dead."""
    return (
        round_.dead or len(round_.dealer) != spec.hole_cards or len(round_.community) != spec.community_cards
    )


def seat_is_misdealt(seat: Seat, spec: GameSpec) -> bool:
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
    if round_is_dead(round_, spec) or seat_is_misdealt(seat, spec):
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
