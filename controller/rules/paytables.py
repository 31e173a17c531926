"""Paytables: named presets from docs/rules.md and custom tables from a table's configuration.

A paytable maps a line (a flush length, or a straight-flush run length) to its odds "N to 1". Only the
highest line a hand reaches pays (docs/rules.md "Paytables"): a hand of length L is paid by the line with
the largest length <= L, and loses when it reaches none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller.errors import UserError, shown

MAX_LINE_LENGTH = 7  # seven cards make every hand
_LINE_KEYS = frozenset(str(length) for length in range(1, MAX_LINE_LENGTH + 1))
MAX_ODDS = 1_000_000  # no posted paytable comes near; a typo like 80000000 should be refused


@dataclass(frozen=True, slots=True)
class Paytable:
    """Odds "N to 1" by line length. ``name`` is the preset's name, or "custom"."""

    name: str
    odds_by_length: tuple[tuple[int, int], ...]  # (length, odds), longest line first
    # The table's configuration said this table may pay a better hand less than a worse one
    # (``allow_inverted = true``); the par sheet then says so. Never set for a preset.
    allow_inverted: bool = False

    def odds_for(self, length: int) -> int | None:
        """The odds the highest line reached by ``length`` pays, or None when no line is reached."""
        for line_length, odds in self.odds_by_length:
            if length >= line_length:
                return odds
        return None

    @property
    def min_length(self) -> int:
        """The shortest length that wins anything."""
        return self.odds_by_length[-1][0]

    def to_json(self) -> dict[str, int]:
        return {str(length): odds for length, odds in self.odds_by_length}

    def inversions(self) -> list[tuple[int, int, int, int]]:
        """Every pair of lines where the longer (better) line pays less than a shorter one:
        ``(longer, its odds, shorter, its odds)``, longest first. Empty for a table in order."""
        found: list[tuple[int, int, int, int]] = []
        for index, (longer, longer_odds) in enumerate(self.odds_by_length):
            for shorter, shorter_odds in self.odds_by_length[index + 1 :]:
                if longer_odds < shorter_odds:
                    found.append((longer, longer_odds, shorter, shorter_odds))
        return found

    def allowing_inversion(self) -> Paytable:
        return Paytable(self.name, self.odds_by_length, allow_inverted=True)

    @classmethod
    def from_lines(cls, name: str, lines: Mapping[int, int]) -> Paytable:
        return cls(name, tuple(sorted(lines.items(), reverse=True)))


PRESETS: dict[str, Paytable] = {
    table.name: table
    for table in (
        # High Card Flush, house-banked: on the player's own hand (docs/rules.md).
        Paytable.from_lines("hcf-flush-house", {7: 300, 6: 100, 5: 10, 4: 1}),
        Paytable.from_lines("hcf-straight-flush-house", {7: 8000, 6: 1000, 5: 100, 4: 60, 3: 7}),
        # High Card Flush, designated player: contests against the DP (seed appendices A and B).
        Paytable.from_lines("hcf-flush-dp", {7: 200, 6: 50, 5: 10, 4: 2}),
        Paytable.from_lines("hcf-straight-flush-dp", {7: 1000, 6: 500, 5: 100, 4: 60, 3: 8}),
        # Top Flush.
        Paytable.from_lines("top-flush-bonus", {7: 300, 6: 100, 5: 10, 4: 1}),
        Paytable.from_lines("straight-flush-jackpot", {7: 8000, 6: 1000, 5: 100, 4: 60, 3: 7}),
        # Chase the Flush.
        Paytable.from_lines("xtra-bonus", {7: 250, 6: 20, 5: 5, 4: 1}),
        Paytable.from_lines("same-suit-bonus", {7: 300, 6: 100, 5: 10, 4: 1}),
    )
}

# The preset each (game, banking mode, wager) uses unless the round or the table names another.
DEFAULT_PRESET: dict[tuple[str, str, str], str] = {
    ("high-card-flush", "house", "flush"): "hcf-flush-house",
    ("high-card-flush", "house", "straight_flush"): "hcf-straight-flush-house",
    ("high-card-flush", "designated-player", "flush"): "hcf-flush-dp",
    ("high-card-flush", "designated-player", "straight_flush"): "hcf-straight-flush-dp",
    ("top-flush", "house", "top_flush_bonus"): "top-flush-bonus",
    ("top-flush", "house", "straight_flush_jackpot"): "straight-flush-jackpot",
    ("chase-the-flush", "house", "xtra_bonus"): "xtra-bonus",
    ("chase-the-flush", "house", "same_suit_bonus"): "same-suit-bonus",
}


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
