"""The Progressive wager (docs/rules.md "Progressive wager"): its paytable, its parameters, and one
round's contributions, awards, reset and reserve. Pure: no I/O, no clock; money in integer cents.

Public names (the settlement, the par sheet and, later, the progressive controller code against them):

- ``PROGRESSIVE``: the wager's name on a seat; ``PROGRESSIVE_GAMES``: the games that offer it.
- :class:`Award` (a line's award: a share of the meter, or a fixed number of units paid *for* one),
  :class:`ProgressivePaytable` (awards by straight-flush run length), ``PROGRESSIVE_PRESETS``,
  ``DEFAULT_PROGRESSIVE_PAYTABLE``.
- :class:`ProgressiveSettings` (unit, base, reset, increment and hidden rates, limit, paytable) and
  :func:`parse_progressive_settings` (from a JSON or TOML object; one clear line per refusal).
- :func:`settle_progressive` ``(settings, meter_cents, reserve_cents, entries) -> ProgressiveResult``:
  one round at one table, the entries in the table's settlement order.

Rates are basis points (1/100 of a percent) inside and percentages with at most two decimals outside,
so every figure is exact. Every wager is exactly one unit, and a unit's contributions must be whole
cents (refused otherwise): a contribution is never rounded, so the meters conserve money to the cent::

    meter_before + to_meter - meter awards + reset             == meter_after
    reserve_before + hidden + overflow - reset from the reserve == reserve_after
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation

from controller.errors import UserError, shown
from controller.rules.amounts import check_cents, type_name
from controller.rules.games import NOT_OFFERED as NOT_OFFERED  # noqa: PLC0414  (re-exported)
from controller.rules.games import PROGRESSIVE as PROGRESSIVE  # noqa: PLC0414  (re-exported)
from controller.rules.games import PROGRESSIVE_GAMES as PROGRESSIVE_GAMES  # noqa: PLC0414  (re-exported)

BASIS_POINTS_PER_WHOLE = 10_000  # 100% in basis points
MAX_LINE_LENGTH = 7  # the longest straight-flush run seven cards can hold
MAX_FIXED_UNITS = 1_000_000  # as paytables.MAX_ODDS: a typo like 50000000 is refused


def percent_json(basis_points: int) -> int | float:
    """A rate as the input gives it: ``1000`` basis points -> ``10``, ``450`` -> ``4.5``."""
    whole, rest = divmod(basis_points, 100)
    return whole if rest == 0 else float(Decimal(basis_points) / 100)


def percent_text(basis_points: int) -> str:
    return f"{percent_json(basis_points)}%"


def parse_percent(value: object, field: str) -> int:
    """A percentage from 0 to 100 with at most two decimals (``4``, ``4.5``, ``12.25``) as basis points.

    A JSON or TOML number arrives as an int or a float; the float is read back through its shortest
    decimal text (``repr``), which is what the person typed, so ``4.55`` is exactly 455 basis points."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UserError(
            f"{field}: must be a percentage like 10 or 4.5, not {type_name(value)} {shown(value)}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(f"{field}: must be a percentage like 10 or 4.5, not {shown(value)}")
    try:
        exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except (InvalidOperation, ValueError):  # pragma: no cover - repr of a finite float always parses
        raise UserError(f"{field}: must be a percentage like 10 or 4.5, not {shown(value)}") from None
    if exact < 0:
        raise UserError(f"{field}: must not be negative, not {shown(value)}")
    if exact > 100:
        raise UserError(f"{field}: {shown(value)}% is over 100%")
    basis_points = exact * 100
    if basis_points != basis_points.to_integral_value():
        raise UserError(f"{field}: at most two decimals (a basis point), not {shown(value)}")
    return int(basis_points)


# --- the paytable ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Award:
    """What a line pays *for* one wager (the wager itself is always collected): a share of the meter as
    it stands when the award is paid (``meter_share_bp``), or a fixed number of units (``fixed_units``)."""

    meter_share_bp: int | None = None
    fixed_units: int | None = None

    def __post_init__(self) -> None:
        assert (self.meter_share_bp is None) != (self.fixed_units is None), "one kind of award"

    @property
    def is_jackpot(self) -> bool:
        """100% of the meter: the level whose winners share the meter, after which it resets."""
        return self.meter_share_bp == BASIS_POINTS_PER_WHOLE

    def to_json(self) -> int | dict[str, int | float]:
        if self.meter_share_bp is None:
            assert self.fixed_units is not None
            return self.fixed_units
        return {"meter_share_percent": percent_json(self.meter_share_bp)}

    def text(self) -> str:
        if self.meter_share_bp is None:
            return f"{self.fixed_units} for 1"
        return f"{percent_text(self.meter_share_bp)} of the meter"


@dataclass(frozen=True, slots=True)
class ProgressivePaytable:
    """Awards by the longest straight-flush run, longest line first. Only the highest line reached pays."""

    name: str
    lines: tuple[tuple[int, Award], ...]

    def award_for(self, run_length: int) -> tuple[int, Award] | None:
        """``(line, award)`` of the highest line ``run_length`` reaches, or None when it reaches none."""
        for line, award in self.lines:
            if run_length >= line:
                return (line, award)
        return None

    def to_json(self) -> dict[str, int | dict[str, int | float]]:
        return {str(line): award.to_json() for line, award in self.lines}

    @classmethod
    def from_lines(cls, name: str, lines: Mapping[int, Award]) -> ProgressivePaytable:
        return cls(name, tuple(sorted(lines.items(), reverse=True)))


def meter_share(percent: int) -> Award:
    return Award(meter_share_bp=percent * 100)


def fixed(units: int) -> Award:
    return Award(fixed_units=units)


DEFAULT_PROGRESSIVE_PAYTABLE = ProgressivePaytable.from_lines(
    # docs/rules.md: 7-card SF 100% of the meter, 6-card 10% of the meter, 5-card 500, 4-card 50, 3-card 5.
    "progressive",
    {7: meter_share(100), 6: meter_share(10), 5: fixed(500), 4: fixed(50), 3: fixed(5)},
)
PROGRESSIVE_PRESETS: dict[str, ProgressivePaytable] = {
    DEFAULT_PROGRESSIVE_PAYTABLE.name: DEFAULT_PROGRESSIVE_PAYTABLE
}


def parse_progressive_paytable(spec: object, *, field: str) -> ProgressivePaytable:
    """A preset name, or lines ``{"7": {"meter_share_percent": 100}, "5": 500, ...}``: a line is a run
    length 1-7; its award a share of the meter (1-100%) or a whole number of units 1-1,000,000."""
    if isinstance(spec, str):
        if spec in PROGRESSIVE_PRESETS:
            return PROGRESSIVE_PRESETS[spec]
        known = ", ".join(sorted(PROGRESSIVE_PRESETS))
        raise UserError(f"{field}: unknown progressive paytable preset {shown(spec)} (known: {known})")
    if not isinstance(spec, Mapping) or not spec:
        raise UserError(
            f"{field}: a progressive paytable is a preset name or a non-empty object like "
            f'{{"7": {{"meter_share_percent": 100}}, "5": 500}}'
        )
    lines: dict[int, Award] = {}
    for key, value in spec.items():
        text = str(key)
        if text not in {str(length) for length in range(1, MAX_LINE_LENGTH + 1)}:
            raise UserError(f"{field}: line {text[:20]!r} is not a run length from 1 to {MAX_LINE_LENGTH}")
        where = f"{field}.{text}"
        if isinstance(value, Mapping):
            keys = set(value)
            if keys != {"meter_share_percent"}:
                raise UserError(
                    f'{where}: an award is a number of units or {{"meter_share_percent": N}}, '
                    f"not an object with {', '.join(sorted(map(str, keys))) or 'nothing'}"
                )
            basis_points = parse_percent(value["meter_share_percent"], f"{where}.meter_share_percent")
            if basis_points == 0:
                raise UserError(f"{where}.meter_share_percent: 0% pays nothing; leave the line out")
            lines[int(text)] = Award(meter_share_bp=basis_points)
        elif isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_FIXED_UNITS:
            raise UserError(
                f"{where}: a fixed award is a whole number of units from 1 to {MAX_FIXED_UNITS} "
                f'(or {{"meter_share_percent": N}}), not {shown(value)}'
            )
        else:
            lines[int(text)] = Award(fixed_units=value)
    return ProgressivePaytable.from_lines("custom", lines)


# --- the parameters --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProgressiveSettings:
    """The progressive's parameters (N.J.A.C. 13:69E-1.39A's base, reset, increment rate, hidden rate
    and limit), the wager's unit and its paytable. ``limit_cents`` None: no limit."""

    unit_cents: int
    base_cents: int
    reset_cents: int
    increment_bp: int
    hidden_bp: int
    limit_cents: int | None = None
    paytable: ProgressivePaytable = DEFAULT_PROGRESSIVE_PAYTABLE

    @property
    def increment_per_wager_cents(self) -> int:
        return self.unit_cents * self.increment_bp // BASIS_POINTS_PER_WHOLE

    @property
    def hidden_per_wager_cents(self) -> int:
        return self.unit_cents * self.hidden_bp // BASIS_POINTS_PER_WHOLE

    def to_json(self) -> dict[str, object]:
        return {
            "unit_cents": self.unit_cents,
            "base_cents": self.base_cents,
            "reset_cents": self.reset_cents,
            "increment_percent": percent_json(self.increment_bp),
            "hidden_percent": percent_json(self.hidden_bp),
            "limit_cents": self.limit_cents,
            "paytable": self.paytable.to_json(),
            "paytable_name": self.paytable.name,
        }


SETTINGS_KEYS: tuple[str, ...] = (
    "unit_cents",
    "base_cents",
    "reset_cents",
    "increment_percent",
    "hidden_percent",
    "limit_cents",
    "paytable",
)
_REQUIRED_KEYS = ("unit_cents", "base_cents", "reset_cents", "increment_percent", "hidden_percent")


def check_progressive_settings(settings: ProgressiveSettings, *, field: str = "progressive") -> None:
    """Refuse parameters that do not make sense, one clear line each (docs/rules.md):
    a unit of 0, a reset below the base, a rate over 100% (or both together), a limit below the reset,
    a contribution that is not whole cents of the unit."""
    check_cents(settings.unit_cents, f"{field}.unit_cents")
    if settings.unit_cents == 0:
        raise UserError(f"{field}.unit_cents: a unit of 0 is no wager; the unit must be at least 1 cent")
    check_cents(settings.base_cents, f"{field}.base_cents")
    check_cents(settings.reset_cents, f"{field}.reset_cents")
    if settings.reset_cents < settings.base_cents:
        raise UserError(
            f"{field}.reset_cents: {settings.reset_cents} is below the base ({settings.base_cents}); "
            f"the meter never restarts below where it started"
        )
    rates = (("increment_percent", settings.increment_bp), ("hidden_percent", settings.hidden_bp))
    for name, basis_points in rates:
        if not 0 <= basis_points <= BASIS_POINTS_PER_WHOLE:
            raise UserError(f"{field}.{name}: {percent_text(basis_points)} is not a rate from 0% to 100%")
    if settings.increment_bp + settings.hidden_bp > BASIS_POINTS_PER_WHOLE:
        raise UserError(
            f"{field}.hidden_percent: increment {percent_text(settings.increment_bp)} + hidden "
            f"{percent_text(settings.hidden_bp)} is over 100% of the wager"
        )
    for name, basis_points in rates:
        share = Decimal(settings.unit_cents * basis_points) / BASIS_POINTS_PER_WHOLE
        if share != share.to_integral_value():
            raise UserError(
                f"{field}.{name}: {percent_text(basis_points)} of the {settings.unit_cents}-cent unit is "
                f"{share} cents; a wager's contribution must be whole cents (nothing is rounded)"
            )
    if settings.limit_cents is not None:
        check_cents(settings.limit_cents, f"{field}.limit_cents")
        if settings.limit_cents < settings.reset_cents:
            raise UserError(
                f"{field}.limit_cents: {settings.limit_cents} is below the reset ({settings.reset_cents}); "
                f"the meter could not restart under its own limit"
            )


def _unknown(keys: Sequence[str], known: Sequence[str], field: str) -> None:
    for key in keys:
        if key not in known:
            where = f"{field}.{key}" if key.isidentifier() and len(key) <= 40 else f"{field}[{shown(key)}]"
            raise UserError(f"{where}: unknown field (known: {', '.join(known)})")


def parse_progressive_settings(
    obj: object, *, field: str = "progressive", extra_keys: Sequence[str] = ()
) -> ProgressiveSettings:
    """The parameters from a JSON or TOML object; ``extra_keys`` are the caller's own (the round's
    ``meter_cents``), read by the caller. Every refusal is one line naming the field."""
    if not isinstance(obj, Mapping):
        raise UserError(f"{field}: must be an object, not {type_name(obj)}")
    for key in obj:
        if not isinstance(key, str):
            raise UserError(f"{field}: keys must be strings, not {shown(key)}")
    _unknown(list(obj), (*SETTINGS_KEYS, *extra_keys), field)
    for key in _REQUIRED_KEYS:
        if key not in obj:
            raise UserError(f"{field}.{key}: missing")
    limit = obj.get("limit_cents")
    settings = ProgressiveSettings(
        unit_cents=check_cents(obj["unit_cents"], f"{field}.unit_cents"),
        base_cents=check_cents(obj["base_cents"], f"{field}.base_cents"),
        reset_cents=check_cents(obj["reset_cents"], f"{field}.reset_cents"),
        increment_bp=parse_percent(obj["increment_percent"], f"{field}.increment_percent"),
        hidden_bp=parse_percent(obj["hidden_percent"], f"{field}.hidden_percent"),
        limit_cents=None if limit is None else check_cents(limit, f"{field}.limit_cents"),
        paytable=(
            DEFAULT_PROGRESSIVE_PAYTABLE
            if "paytable" not in obj
            else parse_progressive_paytable(obj["paytable"], field=f"{field}.paytable")
        ),
    )
    check_progressive_settings(settings, field=field)
    return settings


def check_progressive_stake(settings: ProgressiveSettings, stake_cents: int, field: str) -> None:
    """docs/rules.md: the wager is the table's fixed unit; any other amount on the spot is refused."""
    if stake_cents not in (0, settings.unit_cents):
        raise UserError(
            f"{field}: must be exactly the unit ({settings.unit_cents}), not {stake_cents} "
            f"(the Progressive wager is a fixed amount)"
        )


@dataclass(frozen=True, slots=True)
class ProgressiveRound:
    """A round's progressive as ``flushtable settle`` takes it: the parameters, and the meter and the
    reserve as they stand before the round (an input of the round, like its cards)."""

    settings: ProgressiveSettings
    meter_cents: int
    reserve_cents: int = 0


ROUND_KEYS: tuple[str, ...] = ("meter_cents", "reserve_cents")


def parse_progressive_round(obj: object, *, field: str = "progressive") -> ProgressiveRound:
    """The round's ``progressive`` object: the parameters plus ``meter_cents`` (required) and
    ``reserve_cents`` (default 0: then the house adds every reset in full)."""
    settings = parse_progressive_settings(obj, field=field, extra_keys=ROUND_KEYS)
    assert isinstance(obj, Mapping)  # parse_progressive_settings refused anything else
    if "meter_cents" not in obj:
        raise UserError(f"{field}.meter_cents: missing (the meter as it stands before the round)")
    meter = check_cents(obj["meter_cents"], f"{field}.meter_cents")
    reserve = check_cents(obj.get("reserve_cents", 0), f"{field}.reserve_cents")
    check_meter(settings, meter, reserve, field=field)
    return ProgressiveRound(settings, meter, reserve)


# --- one round ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProgressiveEntry:
    """One seat's Progressive wager in a round: ``run_length`` its longest straight-flush run;
    ``settled`` False when its hand is dead (the wager is returned and contributes nothing)."""

    seat: int
    run_length: int
    settled: bool = True


@dataclass(frozen=True, slots=True)
class AwardPaid:
    """One award, in the order paid. ``from_meter``: a share of the meter, with the meter before and
    after it; else a fixed award, paid by the house. For the 100% level ``meter_before_cents`` is the
    meter frozen when the first 100% winner was paid (``shared_by`` winners split it) and
    ``meter_after_cents`` the reset it re-seeded to."""

    seat: int
    line: int
    award: Award
    amount_cents: int
    from_meter: bool
    meter_before_cents: int | None = None
    meter_after_cents: int | None = None
    shared_by: int = 1

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "seat": self.seat,
            "line": self.line,
            "award": self.award.to_json(),
            "amount_cents": self.amount_cents,
            "paid_from": "meter" if self.from_meter else "house",
        }
        if self.from_meter:
            out["meter_before_cents"] = self.meter_before_cents
            out["meter_after_cents"] = self.meter_after_cents
        if self.shared_by > 1:
            out["shared_by"] = self.shared_by
        return out


@dataclass(frozen=True, slots=True)
class Reset:
    """The meter re-seeded after the 100% level was won: ``from_reserve_cents`` what the reserve gave,
    ``house_added_cents`` what the house added because the reserve lacked it (recorded, docs/rules.md)."""

    amount_cents: int
    from_reserve_cents: int
    house_added_cents: int

    def to_json(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ProgressiveResult:
    """One round's progressive: contributions (before any award), the awards in the order paid, the
    reset, and the meter and reserve before and after."""

    settings: ProgressiveSettings
    meter_before_cents: int
    reserve_before_cents: int
    wagers_settled: int
    wagers_returned: int
    increment_cents: int  # the rate's share of the settled wagers
    to_meter_cents: int  # the part of it the limit let onto the meter
    overflow_cents: int  # the rest: to the overflow meter, which feeds the reserve
    hidden_cents: int
    awards: tuple[AwardPaid, ...]
    reset: Reset | None
    meter_after_cents: int
    reserve_after_cents: int

    @property
    def collected_cents(self) -> int:
        """The settled wagers: always collected (an award is paid *for* the wager, not *to* it)."""
        return self.wagers_settled * self.settings.unit_cents

    @property
    def meter_awards_cents(self) -> int:
        return sum(award.amount_cents for award in self.awards if award.from_meter)

    @property
    def fixed_awards_cents(self) -> int:
        return sum(award.amount_cents for award in self.awards if not award.from_meter)

    @property
    def paid_cents(self) -> int:
        return self.meter_awards_cents + self.fixed_awards_cents

    @property
    def net_cents(self) -> int:
        """What the progressive took from the players this round, less what it paid them: the players'
        Progressive nets add up to minus this (the settlement's conservation counts it)."""
        return self.collected_cents - self.paid_cents

    def award_for_seat(self, seat: int) -> AwardPaid | None:
        for award in self.awards:
            if award.seat == seat:
                return award
        return None

    def to_json(self) -> dict[str, object]:
        return {
            "unit_cents": self.settings.unit_cents,
            "paytable": self.settings.paytable.to_json(),
            "paytable_name": self.settings.paytable.name,
            "meter_before_cents": self.meter_before_cents,
            "contributions": {
                "wagers": self.wagers_settled,
                "returned_wagers": self.wagers_returned,
                "increment_percent": percent_json(self.settings.increment_bp),
                "hidden_percent": percent_json(self.settings.hidden_bp),
                "increment_cents": self.increment_cents,
                "to_meter_cents": self.to_meter_cents,
                "overflow_cents": self.overflow_cents,
                "hidden_cents": self.hidden_cents,
            },
            "awards": [award.to_json() for award in self.awards],
            "reset": None if self.reset is None else self.reset.to_json(),
            "meter_after_cents": self.meter_after_cents,
            "reserve": {
                "before_cents": self.reserve_before_cents,
                "hidden_cents": self.hidden_cents,
                "overflow_cents": self.overflow_cents,
                "to_reset_cents": 0 if self.reset is None else self.reset.from_reserve_cents,
                "after_cents": self.reserve_after_cents,
            },
            "collected_cents": self.collected_cents,
            "paid_cents": self.paid_cents,
            "net_cents": self.net_cents,
        }


def check_meter(settings: ProgressiveSettings, meter_cents: int, reserve_cents: int, *, field: str) -> None:
    check_cents(meter_cents, f"{field}.meter_cents")
    check_cents(reserve_cents, f"{field}.reserve_cents")
    if settings.limit_cents is not None and meter_cents > settings.limit_cents:
        raise UserError(
            f"{field}.meter_cents: {meter_cents} is above the limit ({settings.limit_cents}); "
            f"a meter never passes its limit"
        )


def _jackpot_lock(
    settings: ProgressiveSettings, meter_cents: int, reserve_cents: int, winners: Sequence[int]
) -> tuple[int, dict[int, int], Reset]:
    """The jackpot lock: the meter is frozen and shared by every 100% winner of the round, the cents
    left over to the first paid; the meter re-seeds at once, the reserve giving what it holds. The
    frozen meter, each winner's share, and the reset."""
    each, left_over = divmod(meter_cents, len(winners))
    shares = dict.fromkeys(winners, each)
    shares[winners[0]] += left_over
    from_reserve = min(reserve_cents, settings.reset_cents)
    return meter_cents, shares, Reset(settings.reset_cents, from_reserve, settings.reset_cents - from_reserve)


def settle_progressive(
    settings: ProgressiveSettings,
    meter_cents: int,
    reserve_cents: int,
    entries: Sequence[ProgressiveEntry],
) -> ProgressiveResult:
    """One round's progressive at one table, ``entries`` in the table's settlement order.

    1. Contributions, before any award (docs/rules.md): each settled wager adds the increment rate of the
       unit to the meter, up to the limit (the rest is overflow, which feeds the reserve), and the
       hidden rate to the reserve. A returned wager (a dead hand) contributes nothing.
    2. Awards in settlement order. A fixed award is the units times the unit, paid by the house. A
       share of the meter is taken from the meter as it stands when it is paid, rounded down to the
       cent (the fraction stays on the meter). At the first 100% winner the whole meter is taken and
       shared equally by every 100% winner of the round (the cents left over go to the first paid);
       the meter then re-seeds at once to the reset, the reserve giving what it holds and the house
       adding the rest. A later share in the same round comes from the re-seeded meter.
    """
    unit = settings.unit_cents
    settled = [entry for entry in entries if entry.settled]
    increment = len(settled) * settings.increment_per_wager_cents
    hidden = len(settled) * settings.hidden_per_wager_cents
    room = increment if settings.limit_cents is None else max(0, settings.limit_cents - meter_cents)
    to_meter = min(increment, room)
    overflow = increment - to_meter
    meter = meter_cents + to_meter
    reserve = reserve_cents + hidden + overflow

    won = [(entry, settings.paytable.award_for(entry.run_length)) for entry in settled]
    jackpot_winners = [entry.seat for entry, line in won if line is not None and line[1].is_jackpot]
    jackpot_shares: dict[int, int] = {}
    frozen = 0  # the meter as it stood when the first 100% winner was paid
    awards: list[AwardPaid] = []
    reset: Reset | None = None
    for entry, line in won:
        if line is None:
            continue
        length, award = line
        if award.fixed_units is not None:
            awards.append(AwardPaid(entry.seat, length, award, award.fixed_units * unit, from_meter=False))
        elif award.is_jackpot:
            if not jackpot_shares:
                frozen, jackpot_shares, reset = _jackpot_lock(settings, meter, reserve, jackpot_winners)
                reserve -= reset.from_reserve_cents
                meter = settings.reset_cents
            awards.append(
                AwardPaid(
                    entry.seat,
                    length,
                    award,
                    jackpot_shares[entry.seat],
                    from_meter=True,
                    meter_before_cents=frozen,
                    meter_after_cents=settings.reset_cents,
                    shared_by=len(jackpot_winners),
                )
            )
        else:
            assert award.meter_share_bp is not None
            before = meter
            amount = meter * award.meter_share_bp // BASIS_POINTS_PER_WHOLE  # rounded down: the rest stays
            meter -= amount
            awards.append(AwardPaid(entry.seat, length, award, amount, True, before, meter))
    return ProgressiveResult(
        settings=settings,
        meter_before_cents=meter_cents,
        reserve_before_cents=reserve_cents,
        wagers_settled=len(settled),
        wagers_returned=len(entries) - len(settled),
        increment_cents=increment,
        to_meter_cents=to_meter,
        overflow_cents=overflow,
        hidden_cents=hidden,
        awards=tuple(awards),
        reset=reset,
        meter_after_cents=meter,
        reserve_after_cents=reserve,
    )


__all__ = [
    "DEFAULT_PROGRESSIVE_PAYTABLE",
    "NOT_OFFERED",
    "PROGRESSIVE",
    "PROGRESSIVE_GAMES",
    "PROGRESSIVE_PRESETS",
    "Award",
    "AwardPaid",
    "ProgressiveEntry",
    "ProgressivePaytable",
    "ProgressiveResult",
    "ProgressiveRound",
    "ProgressiveSettings",
    "Reset",
    "check_meter",
    "check_progressive_settings",
    "check_progressive_stake",
    "parse_percent",
    "parse_progressive_paytable",
    "parse_progressive_round",
    "parse_progressive_settings",
    "settle_progressive",
]
