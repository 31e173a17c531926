"""Theoretical win: what the par sheet says the house keeps of what was wagered (docs/floor.md "Meters").

Per settled house-banked round: the ante's stake times the base game's house edge per ante (which
covers the raise, play or all-in that follows it, and in Chase the Flush the X-tra Bonus too), plus
each bonus wager's stake times its own house edge. The edges are the exact par-sheet figures of
controller/gamemath at the default paytables (docs/math.md; tests/floor/test_theoretical.py recomputes
the High Card Flush and Top Flush ones). A designated-player round's banker is a player: the house's
theoretical there is its rake, which the meters show as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

BASE_EDGE_PER_ANTE: dict[str, Fraction] = {
    "high-card-flush": Fraction(1348050875653, 50592437455560),  # 2.6645%
    "top-flush": Fraction(6335327053619, 252962187277800),  # 2.5045%
    "chase-the-flush": Fraction(12033802351, 503364407000),  # 2.3907%, X-tra Bonus 250/20/5/1 included
}
_FLUSH = Fraction(200861, 2572780)  # 300/100/10/1: 7.8072%
_STRAIGHT_FLUSH = Fraction(4376891, 33446140)  # 8000/1000/100/60/7: 13.0864%
BONUS_EDGE: dict[str, Fraction] = {
    "flush": _FLUSH,
    "straight_flush": _STRAIGHT_FLUSH,
    "top_flush_bonus": _FLUSH,
    "straight_flush_jackpot": _STRAIGHT_FLUSH,
    "same_suit_bonus": _FLUSH,
}


def theoretical_win_cents(game: str, settlement: Mapping[str, Any]) -> int:
    """The par sheet's expected house win on a settled round's wagers, in cents (rounded)."""
    return round(theoretical_win_exact(game, settlement))


def theoretical_win_exact(game: str, settlement: Mapping[str, Any]) -> Fraction:
    """The same, exact: a sum of many rounds is rounded once (the gaming-day report's)."""
    if settlement.get("banking", "house") != "house" or settlement.get("dead"):
        return Fraction(0)
    base = BASE_EDGE_PER_ANTE.get(game)
    if base is None:
        return Fraction(0)
    total = Fraction(0)
    for seat in settlement.get("seats", []):
        for name, wager in (seat.get("wagers") or {}).items():
            if wager.get("result") == "returned":
                continue
            stake = int(wager.get("stake", 0))
            if name == "ante":
                total += stake * base
            elif name in BONUS_EDGE:
                total += stake * BONUS_EDGE[name]
    return total
