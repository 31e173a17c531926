"""Paytables: the presets (controller/rules/catalogue.py lists them, with the wagers they pay) and
custom tables from a table's configuration, read and checked.

A paytable maps a line (a flush length, or a straight-flush run length) to its odds "N to 1". Only the
highest line a hand reaches pays (docs/rules.md "Paytables"): a hand of length L is paid by the line with
the largest length <= L, and loses when it reaches none.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.errors import UserError, shown
from controller.rules.catalogue import DEFAULT_PRESET as DEFAULT_PRESET  # noqa: PLC0414  (re-exported)
from controller.rules.catalogue import PRESETS as PRESETS  # noqa: PLC0414  (re-exported)
from controller.rules.catalogue import Paytable as Paytable  # noqa: PLC0414  (re-exported)

MAX_LINE_LENGTH = 7  # seven cards make every hand
_LINE_KEYS = frozenset(str(length) for length in range(1, MAX_LINE_LENGTH + 1))
MAX_ODDS = 1_000_000  # no posted paytable comes near; a typo like 80000000 should be refused


def default_paytable(game: str, banking_mode: str, wager: str) -> Paytable:
    return PRESETS[DEFAULT_PRESET[(game, banking_mode, wager)]]


def parse_paytable(spec: object, *, field: str) -> Paytable:
    """A preset name, or a custom table ``{"7": 300, "6": 100, ...}``; refusals name ``field``."""
    if isinstance(spec, str):
        try:
            return PRESETS[spec]
        except KeyError:
            known = ", ".join(sorted(PRESETS))
            raise UserError(f"{field}: unknown paytable preset {shown(spec)} (known: {known})") from None
    if not isinstance(spec, Mapping) or not spec:
        raise UserError(f'{field}: a paytable is a preset name or a non-empty object like {{"7": 300}}')
    lines: dict[int, int] = {}
    for key, odds in spec.items():
        length_text = str(key)
        if length_text not in _LINE_KEYS:
            raise UserError(f"{field}: line {length_text[:20]!r} is not a length from 1 to {MAX_LINE_LENGTH}")
        if isinstance(odds, bool) or not isinstance(odds, int) or not 1 <= odds <= MAX_ODDS:
            raise UserError(
                f"{field}.{length_text}: odds must be a whole number from 1 to {MAX_ODDS} "
                f"(leave out a line that pays nothing), not {shown(odds)}"
            )
        lines[int(length_text)] = odds
    return Paytable.from_lines("custom", lines)


def inversion_text(table: Paytable) -> str | None:
    """Where ``table`` pays a better hand less than a worse one, in words, or None when it does not:
    ``line 7 pays 200 to 1, less than line 6 (300 to 1)``."""
    found = table.inversions()
    if not found:
        return None
    return "; ".join(
        f"line {longer} pays {longer_odds} to 1, less than line {shorter} ({shorter_odds} to 1)"
        for longer, longer_odds, shorter, shorter_odds in found
    )


ALLOW_INVERTED = "allow_inverted"


def parse_table_paytable(spec: object, *, field: str) -> Paytable:
    """A paytable a table is configured with (the configuration file, ``flushtable math``): as
    :func:`parse_paytable`, but a custom table that pays a better hand less than a worse one is refused
    unless it says ``allow_inverted = true`` itself; then it is kept, marked, and the par sheet says so.
    (``flushtable settle`` takes a round's paytables as given: its contract, docs/settle.md, is unchanged.)"""
    allow_inverted = False
    if isinstance(spec, Mapping) and ALLOW_INVERTED in spec:
        allow_inverted = spec[ALLOW_INVERTED]
        if not isinstance(allow_inverted, bool):
            raise UserError(f"{field}.{ALLOW_INVERTED}: must be true or false, not {shown(allow_inverted)}")
        spec = {key: value for key, value in spec.items() if key != ALLOW_INVERTED}
    table = parse_paytable(spec, field=field)
    inverted = inversion_text(table)
    if inverted is None:
        if allow_inverted:
            raise UserError(f"{field}.{ALLOW_INVERTED}: the table is not inverted; leave the flag out")
        return table
    if not allow_inverted:
        raise UserError(
            f"{field}: inverted: {inverted}; a better hand must not pay less than a worse one "
            f"(if the house means it, say so: {ALLOW_INVERTED} = true in this paytable)"
        )
    return table.allowing_inversion()
