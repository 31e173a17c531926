"""The shapes inside the entries' free-form fields (a settlement, a round's banking, a manager's limits),
checked by a reader that takes entries from outside (``check_shapes``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import msgspec

from controller.journal.entries.base import (
    Entry,
    EntryError,
)
from controller.journal.entries.operator import (
    LimitsSet,
)
from controller.journal.entries.round import (
    BetsLocked,
    RoundDead,
    RoundSettled,
    RoundStarted,
    RoundVoided,
)

# Some public fields are JSON objects typed only as ``dict[str, Any]`` above (a settlement, a round's
# banking, a manager's limits): their classes are what journals have always held, so tightening them
# would refuse journals already written (the chain covers the bytes as written). A reader that takes
# entries from outside - the floor, where a table's credentials can extend its own unkeyed chain with any
# payload - checks them against these shapes too (``check_shapes``), so that the one reducer never meets
# a value it does not expect. Unknown fields are allowed in them (the settle output grows: odds,
# shortfall, rake lines...); every field a reader uses is typed, and amounts are bounded so that a
# round's sums fit the floor's bigint columns.

MAX_SHAPE_AMOUNT_CENTS = 10**15  # ten trillion dollars: any real amount


# A round's amounts summed (their absolute values): its handle and house win are bigint columns of the
# floor's rounds, and a seat may hold any number of wagers. PostgreSQL's out-of-range error would be the
# floor's own write failing (retried for ever, every table frozen), so the message is refused instead.
MAX_SHAPE_ROUND_SUM_CENTS = 10**18  # below 2**63 (about 9.2e18)


Amount = Annotated[int, msgspec.Meta(ge=-MAX_SHAPE_AMOUNT_CENTS, le=MAX_SHAPE_AMOUNT_CENTS)]


# A seat number: far past any table's seats, well inside the floor's 32-bit seat columns (a seat past
# them would fail the floor's write of its whole batch, again and again).
MAX_SHAPE_SEAT = 10**6


SeatNumber = Annotated[int, msgspec.Meta(ge=0, le=MAX_SHAPE_SEAT)]


class WagerOutcomeShape(msgspec.Struct, frozen=True):
    """One wager of a seat in a settlement (the settle output's ``WagerResult.to_json``)."""

    stake: Amount = 0
    result: str | None = None
    net: Amount = 0


class SeatOutcomeShape(msgspec.Struct, frozen=True):
    """One seat of a settlement (``SeatResult.to_json``, or a void's or dead round's seat)."""

    seat: SeatNumber
    status: str | None = None
    wagers: dict[str, WagerOutcomeShape] | None = None
    rake: Amount = 0
    net: Amount = 0


class DealerOutcomeShape(msgspec.Struct, frozen=True):
    qualifies: bool | None = None


class SettlementShape(msgspec.Struct, frozen=True):
    """A closing entry's public settlement, as the reducer's meters and the floor's rounds read it."""

    game: str | None = None
    banking: str = "house"
    dead: bool | None = None
    dealer: DealerOutcomeShape | None = None
    seats: list[SeatOutcomeShape] = msgspec.field(default_factory=list)
    banker_net: Amount = 0
    rake: Amount = 0


class BankingShape(msgspec.Struct, frozen=True):
    """A round's banking (``round_started.banking``)."""

    mode: str = "house"
    seat: SeatNumber | None = None


class LimitsShape(msgspec.Struct, frozen=True):
    """A manager's limits (``limits_set.after``), as the reducer restores it."""

    min_ante_cents: Amount
    max_ante_cents: Amount
    max_bonus_cents: dict[str, Amount] | None = None
    own_max_bonus_cents: dict[str, Amount] | None = None


_ShapeT = TypeVar("_ShapeT", bound=msgspec.Struct)


def _shape(value: Any, shape: type[_ShapeT], where: str) -> _ShapeT:
    try:
        return msgspec.convert(value, shape)
    except msgspec.ValidationError as error:
        raise EntryError(f"journal: {where}: {error}") from None


def _settlement_sum_cents(settlement: SettlementShape) -> int:
    """Every amount of a settlement, as absolute values, summed: a bound on any of the round's sums."""
    total = abs(settlement.banker_net) + abs(settlement.rake)
    for seat in settlement.seats:
        total += abs(seat.net) + abs(seat.rake)
        for wager in (seat.wagers or {}).values():
            total += abs(wager.stake) + abs(wager.net)
    return total


def check_shapes(entry: Entry) -> None:
    """Check the free-form fields the readers use against their shapes above: EntryError (one line) if
    one does not fit. For readers of entries from outside (the floor); the table's own journal needs no
    second check, its writer is the engine."""
    cls = type(entry)
    check = _CHECK_BY_CLASS.get(cls, _UNSEEN)
    if check is _UNSEEN:
        check = _CHECK_BY_CLASS[cls] = _check_for(cls)
    if check is not None:
        check(entry)


# Which check a class of entry gets is a function of its class alone (a kind is its class's tag): chosen
# once a class, not by four isinstance and a string test an entry (the floor checks every entry).
_UNSEEN = object()
_CHECK_BY_CLASS: dict[type[Entry], Any] = {}


def _check_for(cls: type[Entry]) -> Callable[[Any], None] | None:
    if issubclass(cls, RoundSettled | RoundDead | RoundVoided):
        return _check_settlement
    if issubclass(cls, RoundStarted):
        return _check_banking
    if issubclass(cls, BetsLocked):
        return _check_seats
    if issubclass(cls, LimitsSet):
        return _check_limits
    if str(cls.__struct_config__.tag).startswith("progressive_"):
        return _check_amounts
    return None


def _check_settlement(entry: RoundSettled | RoundDead | RoundVoided) -> None:
    where = f"{entry.kind}.settlement"
    settlement = _shape(entry.settlement, SettlementShape, where)
    if _settlement_sum_cents(settlement) > MAX_SHAPE_ROUND_SUM_CENTS:
        raise EntryError(f"journal: {where}: its amounts sum past {MAX_SHAPE_ROUND_SUM_CENTS} cents")


def _check_banking(entry: RoundStarted) -> None:
    _shape(entry.banking, BankingShape, "round_started.banking")


def _check_seats(entry: BetsLocked) -> None:
    for seat in entry.wagers:
        if not seat.isdigit() or len(seat) > 7:
            raise EntryError(f"journal: bets_locked.wagers: seat {seat[:20]!r} is not a seat number")


def _check_limits(entry: LimitsSet) -> None:
    _shape(entry.after, LimitsShape, "limits_set.after")


def _check_amounts(entry: Entry) -> None:
    # The progressive's entries (controller/progressive/model.py folds them): every amount bounded
    # like a settlement's, so a meter's sums fit the floor's bigint columns.
    for field in msgspec.structs.fields(type(entry)):
        value = getattr(entry, field.name)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SHAPE_AMOUNT_CENTS:
            raise EntryError(f"journal: {entry.kind}.{field.encode_name}: {value} is past any amount")
