"""Theoretical win of one settled round: what the par sheet says the house keeps of what was wagered
(docs/floor.md "Meters").

The figures and the computation are the catalogue's (controller/rules/catalogue.py
``theoretical_win_by_wager``), the one the table panel's shift meters call too, so the two agree. A
designated-player round's banker is a player: the house's theoretical there is its rake, which the meters
show as it is; a dead round has nothing in action.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from controller.names import HOUSE
from controller.rules.catalogue import stakes_in_action, theoretical_win_by_wager


def theoretical_win_cents(game: str, settlement: Mapping[str, Any]) -> int:
    """The par sheet's expected house win on a settled round's wagers, in cents (rounded)."""
    return round(theoretical_win_exact(game, settlement))


def theoretical_win_exact(game: str, settlement: Mapping[str, Any]) -> Fraction:
    """The same, exact: a sum of many rounds is rounded once (the gaming-day report's)."""
    if settlement.get("banking", HOUSE) != HOUSE or settlement.get("dead"):
        return Fraction(0)
    by_wager = theoretical_win_by_wager(game, stakes_in_action(settlement))
    return sum((by_wager or {}).values(), Fraction(0))
