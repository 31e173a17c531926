"""The Progressive wager's par sheet: exact hit counts by paytable line and the return they give, as a
function of the meter (docs/math.md "The Progressive wager").

The wager pays on the player's own seven cards by the longest straight-flush run, so every figure
comes from the exact run-length counts over all C(52,7) hands (hand_counts.straight_flush_length_counts).
Returns are per unit wagered (the wager is always one unit, and an award is paid *for* it):

    return(meter) = fixed return + (return per unit of meter) x meter / unit
    fixed return  = sum over fixed lines of  P(line) x units
    per unit of meter = sum over share lines of  P(line) x share

Long run: each wager adds the increment rate to the meter, and each 100% hit re-seeds it with the reset
(funded by the hidden rate through the reserve, the house adding what it lacks). In a steady state
everything put on the meter is paid out, so the players receive, per unit wagered,

    long-run return = fixed return + increment rate + P(100% hit) x reset / unit

while the reserve gains ``hidden rate - P(100% hit) x reset / unit`` per unit (negative: the house
adds it). Overflow past a limit moves increment from the meter to the reserve; the sheet says whether
the limit is below the break-even meter. Exact: integers and ``fractions.Fraction``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from controller.gamemath.hand_counts import DECK_HANDS, straight_flush_length_counts
from controller.rules.progressive import BASIS_POINTS_PER_WHOLE, ProgressiveSettings, percent_json


def _fraction_text(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def line_counts(settings: ProgressiveSettings) -> list[tuple[int, int]]:
    """``(line, hands)``, longest line first: the hands whose highest line reached is that line."""
    by_line: dict[int, int] = {}
    for run_length, hands in straight_flush_length_counts().items():
        reached = settings.paytable.award_for(run_length)
        if reached is not None:
            by_line[reached[0]] = by_line.get(reached[0], 0) + hands
    return [(line, by_line.get(line, 0)) for line, _award in settings.paytable.lines]


def progressive_par_sheet(settings: ProgressiveSettings, meter_cents: int | None = None) -> dict[str, Any]:
    """Every figure of the progressive for ``settings``; the current meter is ``meter_cents`` (default:
    the reset). Floats for reading, exact fractions under ``"exact"``."""
    meter = settings.reset_cents if meter_cents is None else meter_cents
    unit = settings.unit_cents
    fixed_return = Fraction(0)
    per_unit_of_meter = Fraction(0)
    jackpot_hit = Fraction(0)
    hits = 0
    lines: list[dict[str, Any]] = []
    for (line, award), (_line, count) in zip(settings.paytable.lines, line_counts(settings), strict=True):
        probability = Fraction(count, DECK_HANDS)
        hits += count
        row: dict[str, Any] = {
            "line": line,
            "award": award.to_json(),
            "award_text": award.text(),
            "hands": count,
            "probability": float(probability),
            "one_in": float(1 / probability) if count else None,
        }
        if award.fixed_units is not None:
            part = probability * award.fixed_units
            fixed_return += part
            row["return"] = float(part)
        else:
            assert award.meter_share_bp is not None
            share = Fraction(award.meter_share_bp, BASIS_POINTS_PER_WHOLE)
            per_unit_of_meter += probability * share
            row["return_per_unit_of_meter"] = float(probability * share)
            if award.is_jackpot:
                jackpot_hit += probability
        lines.append(row)

    def return_at(meter_at: int) -> Fraction:
        return fixed_return + per_unit_of_meter * Fraction(meter_at, unit)

    increment = Fraction(settings.increment_bp, BASIS_POINTS_PER_WHOLE)
    hidden = Fraction(settings.hidden_bp, BASIS_POINTS_PER_WHOLE)
    seed = jackpot_hit * Fraction(settings.reset_cents, unit)  # resets paid out per unit wagered
    long_run = fixed_return + increment + seed
    break_even = None if per_unit_of_meter == 0 else (1 - fixed_return) / per_unit_of_meter * unit
    sheet: dict[str, Any] = {
        "unit_cents": unit,
        "paytable": settings.paytable.to_json(),
        "paytable_name": settings.paytable.name,
        "parameters": settings.to_json(),
        "hands": DECK_HANDS,
        "lines": lines,
        "hit_frequency": hits / DECK_HANDS,
        "fixed_return": float(fixed_return),
        "return_per_unit_of_meter": float(per_unit_of_meter),
        "reset_cents": settings.reset_cents,
        "return_at_reset": float(return_at(settings.reset_cents)),
        "meter_cents": meter,
        "return_at_meter": float(return_at(meter)),
        "break_even_meter_cents": None if break_even is None else math.ceil(break_even),
        "increment_percent": percent_json(settings.increment_bp),
        "hidden_percent": percent_json(settings.hidden_bp),
        "reset_funding_per_unit": float(seed),
        "long_run_return": float(long_run),
        "long_run_house_edge": float(1 - long_run),
        "reserve_gain_per_unit": float(hidden - seed),
        "contributions_return": float(fixed_return + increment + hidden),
        "hands_per_jackpot": None if jackpot_hit == 0 else float(1 / jackpot_hit),
        "exact": {
            "fixed_return": _fraction_text(fixed_return),
            "return_per_unit_of_meter": _fraction_text(per_unit_of_meter),
            "return_at_reset": _fraction_text(return_at(settings.reset_cents)),
            "return_at_meter": _fraction_text(return_at(meter)),
            "break_even_meter_cents": None if break_even is None else _fraction_text(break_even),
            "long_run_return": _fraction_text(long_run),
            "reserve_gain_per_unit": _fraction_text(hidden - seed),
            "hit_frequency": _fraction_text(Fraction(hits, DECK_HANDS)),
        },
    }
    if settings.limit_cents is not None and break_even is not None:
        sheet["limit_below_break_even"] = settings.limit_cents < break_even
    return sheet


def _percent(value: float, digits: int = 4) -> str:
    return f"{100 * value:.{digits}f}%"


def _money(cents: int) -> str:
    return f"{cents // 100:,}.{cents % 100:02d}"


def render_progressive(sheet: dict[str, Any]) -> str:
    """The par sheet as a table-games manager reads it (``flushtable math``)."""
    parameters = sheet["parameters"]
    limit = parameters["limit_cents"]
    lines = [
        f"Progressive wager ({sheet['paytable_name']} paytable), unit {_money(sheet['unit_cents'])}: "
        f"base {_money(parameters['base_cents'])}, reset {_money(parameters['reset_cents'])}, "
        f"increment {sheet['increment_percent']}%, hidden {sheet['hidden_percent']}%, "
        f"limit {'none' if limit is None else _money(limit)}",
        f"  {'line':>6} {'award':>20} {'hands':>14} {'probability':>14} {'one in':>14} {'return':>10}",
    ]
    for entry in sheet["lines"]:
        one_in = "-" if entry["one_in"] is None else f"{entry['one_in']:,.1f}"
        part = (
            f"{entry['return']:>10.6f}"
            if "return" in entry
            else f"{entry['return_per_unit_of_meter']:.4e}/unit of meter"
        )
        lines.append(
            f"  {entry['line']:>6} {entry['award_text']:>20} {entry['hands']:>14,} "
            f"{entry['probability']:>14.10f} {one_in:>14} {part}"
        )

    def row(label: str, value: str) -> None:
        lines.append(f"  {label + ':':<34} {value}")

    row("hit frequency (any line)", _percent(sheet["hit_frequency"]))
    row("return of the fixed awards", _percent(sheet["fixed_return"]))
    row(
        "return per unit of meter",
        f"{_percent(sheet['return_per_unit_of_meter'], 8)} (each {_money(sheet['unit_cents'])} on the meter)",
    )
    row(f"return at the reset {_money(sheet['reset_cents'])}", _percent(sheet["return_at_reset"]))
    row(f"return at the meter {_money(sheet['meter_cents'])}", _percent(sheet["return_at_meter"]))
    break_even = sheet["break_even_meter_cents"]
    row(
        "break-even meter",
        "none (no line pays a share of the meter)" if break_even is None else _money(break_even),
    )
    if sheet.get("limit_below_break_even"):
        lines.append("  the limit is below the break-even meter: the wager never returns 100%")
    row(
        "long-run return",
        f"{_percent(sheet['long_run_return'])} = fixed {_percent(sheet['fixed_return'])} + increment "
        f"{sheet['increment_percent']}% + resets {_percent(sheet['reset_funding_per_unit'])}",
    )
    row("long-run house edge", _percent(sheet["long_run_house_edge"]))
    gain = sheet["reserve_gain_per_unit"]
    row(
        "reserve per unit wagered",
        f"hidden {sheet['hidden_percent']}% - resets {_percent(sheet['reset_funding_per_unit'])} = "
        f"{_percent(gain)}"
        + (
            " (the house adds the rest at each reset)"
            if gain < 0
            else " (the reserve grows)"
            if gain > 0
            else ""
        ),
    )
    row("fixed + increment + hidden", _percent(sheet["contributions_return"]))
    if sheet["hands_per_jackpot"] is not None:
        row("hands per 100% award", f"{sheet['hands_per_jackpot']:,.1f}")
    return "\n".join(lines)
