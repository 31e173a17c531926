"""Par sheets: every exact figure for a game, banking mode and set of paytables, as one JSON-able dict.

Probabilities are given as floats for reading and as exact fractions ("numerator/denominator") under
``"exact"`` for anyone who needs to check them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.errors import UserError
from controller.gamemath.chase import chase_base_game, qualifying_hands
from controller.gamemath.hand_counts import DECK_HANDS, flush_length_counts, straight_flush_length_counts
from controller.gamemath.progress import ProgressFn
from controller.gamemath.raise_fold import BANKER_HANDS, RaiseFoldSolution, solve_raise_fold
from controller.names import BANKING_MODES, DESIGNATED_PLAYER, GAME_NAMES, HOUSE
from controller.rules.cards import RANKS
from controller.rules.catalogue import FLUSH_BONUS, STRAIGHT_FLUSH_BONUS, WAGERS, paytable_wagers
from controller.rules.games import decision_limits
from controller.rules.hands import evaluate
from controller.rules.paytables import DEFAULT_PRESET, Paytable, default_paytable, inversion_text

GAMES = GAME_NAMES


def _max_raise_in_antes(game: str) -> dict[int, int]:
    """The largest raise (play) in antes by the player's flush length, read off the rules engine's own
    decision_limits (a flush of L clubs, 2 up, stands for every hand of that length)."""
    return {length: decision_limits(game, evaluate(range(length)), 1)[1] for length in range(2, 8)}


MAX_RAISE: dict[str, dict[int, int]] = {
    game: _max_raise_in_antes(game) for game in ("high-card-flush", "top-flush")
}
# Which hand feature each side bet is paid on, and whether it is contested against the banker's hand:
# read off each wager's settle rule in the catalogue (controller/rules/catalogue.py), so the sheet and
# settlement judge a bonus alike. The X-tra Bonus is judged with the hand: the base game counts it.
_KIND_BY_RULE: dict[tuple[str, str], str] = {
    (FLUSH_BONUS, HOUSE): "flush_length",
    (STRAIGHT_FLUSH_BONUS, HOUSE): "run_length",
    (FLUSH_BONUS, DESIGNATED_PLAYER): "flush_contest",
    (STRAIGHT_FLUSH_BONUS, DESIGNATED_PLAYER): "run_contest",
}
SIDE_BET_KIND: dict[tuple[str, str, str], str] = {
    (game, banking, wager): _KIND_BY_RULE[(WAGERS[wager].rule, banking)]
    for (game, banking, wager) in DEFAULT_PRESET
    if (WAGERS[wager].rule, banking) in _KIND_BY_RULE
}


@dataclass(frozen=True)
class ParSheetRequest:
    game: str
    banking: str
    paytables: dict[str, Paytable]


def side_bet_wagers(game: str, banking: str) -> list[str]:
    return list(paytable_wagers(game, banking))


def build_request(game: str, banking: str, overrides: Mapping[str, Paytable]) -> ParSheetRequest:
    """Check the game, banking mode and paytable overrides; fill in the game's presets."""
    if game not in GAMES:
        raise UserError(f"--game: unknown game {game!r} (known: {', '.join(GAMES)})")
    if banking not in BANKING_MODES:
        raise UserError(f"--banking: unknown mode {banking!r} (known: {', '.join(BANKING_MODES)})")
    if banking == "designated-player" and game != "high-card-flush":
        raise UserError(f"--banking: {game} is house-banked only")
    wagers = side_bet_wagers(game, banking)
    paytables = {wager: default_paytable(game, banking, wager) for wager in wagers}
    for wager, table in overrides.items():
        if wager not in paytables:
            raise UserError(
                f"--paytable: {game} ({banking}) has no paytable wager {wager!r} (known: {', '.join(wagers)})"
            )
        paytables[wager] = table
    return ParSheetRequest(game, banking, paytables)


def _fraction_text(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def _probabilities(counts: Mapping[str, int], total: int) -> dict[str, float]:
    return {key: count / total for key, count in counts.items()}


def own_hand_side_bet(paytable: Paytable, counts: Mapping[int, int]) -> dict[str, Any]:
    """A side bet paid on the player's own hand, by flush length or run length."""
    total = sum(counts.values())
    lines: list[dict[str, Any]] = []
    net = 0
    hits = 0
    losing = 0
    by_line: dict[int, int] = {}
    for length, count in counts.items():
        odds = paytable.odds_for(length)
        if odds is None:
            losing += count
            continue
        line = next(line for line, line_odds in paytable.odds_by_length if length >= line)
        by_line[line] = by_line.get(line, 0) + count
    for line, odds in paytable.odds_by_length:
        count = by_line.get(line, 0)
        hits += count
        net += count * odds
        lines.append(
            {
                "line": line,
                "pays": odds,
                "count": count,
                "probability": count / total,
                "return": count * odds / total,
            }
        )
    net -= losing
    lines.append(
        {
            "line": "loses",
            "pays": -1,
            "count": losing,
            "probability": losing / total,
            "return": -losing / total,
        }
    )
    return _side_bet_sheet(paytable, net=net, hits=hits, total=total, lines=lines)


def _side_bet_sheet(
    paytable: Paytable,
    *,
    net: int,
    hits: int,
    total: int,
    lines: list[dict[str, Any]],
    assumes: str | None = None,
) -> dict[str, Any]:
    """A side bet's par-sheet figures from its net (in units wagered), hits and deals counted; the keys
    in the order the sheet has always printed them."""
    edge = Fraction(-net, total)
    sheet: dict[str, Any] = {
        "paytable": paytable.to_json(),
        "paytable_name": paytable.name,
        "return": float(-edge),
        "house_edge": float(edge),
        "hit_frequency": hits / total,
        "lines": lines,
    }
    if assumes is not None:
        sheet["assumes"] = assumes
    sheet["exact"] = {
        "house_edge": _fraction_text(edge),
        "hit_frequency": _fraction_text(Fraction(hits, total)),
    }
    return sheet


def contested_side_bet(paytable: Paytable, deals: Mapping[tuple[int, str], int]) -> dict[str, Any]:
    """A designated-player bonus contested against the DP's hand; ``deals`` by (player line, outcome)."""
    total = sum(deals.values())
    rows: dict[str, dict[str, int]] = {}
    net = 0
    hits = 0
    for (length, outcome), count in deals.items():
        odds = paytable.odds_for(length)
        line = "loses" if odds is None else str(next(ln for ln, _ in paytable.odds_by_length if length >= ln))
        row = rows.setdefault(line, {"win": 0, "push": 0, "loss": 0, "fold": 0})
        if outcome == "win" and odds is not None:
            row["win"] += count
            net += count * odds
            hits += count
        elif outcome == "push":
            row["push"] += count
        elif outcome == "fold":
            row["fold"] += count
            net -= count
        else:  # a loss, or a "win" on a hand that reaches no line (it loses)
            row["loss"] += count
            net -= count
    order = [str(line) for line, _ in paytable.odds_by_length] + ["loses"]
    lines = []
    for line in order:
        row = rows.get(line, {"win": 0, "push": 0, "loss": 0, "fold": 0})
        odds = paytable.to_json().get(line, -1) if line != "loses" else -1
        lines.append(
            {
                "line": line,
                "pays": odds,
                **{f"{key}_probability": value / total for key, value in row.items()},
                "return": ((row["win"] * odds if line != "loses" else 0) - row["loss"] - row["fold"]) / total,
            }
        )
    return _side_bet_sheet(
        paytable,
        net=net,
        hits=hits,
        total=total,
        lines=lines,
        assumes="the player follows the base game's optimal strategy; a fold forfeits the bonus",
    )


def _rank_text(mask: int) -> str:
    return "-".join(RANKS[rank] for rank in range(12, -1, -1) if mask >> rank & 1)


def raise_fold_strategy(solution: RaiseFoldSolution) -> list[dict[str, Any]]:
    """The strategy by flush length, as a dealer trainer reads it: which flushes raise, how much, and
    for flushes whose decision depends on the other cards, the share raised by the other suits' sizes."""
    lengths = sorted({length for length, _ in solution.hands_by_flush})
    chart: list[dict[str, Any]] = []
    for length in lengths:
        masks = sorted((mask for ln, mask in solution.hands_by_flush if ln == length), reverse=True)
        raised = [solution.raised_by_flush.get((length, mask), 0) for mask in masks]
        totals = [solution.hands_by_flush[(length, mask)] for mask in masks]
        always = [r == t for r, t in zip(raised, totals, strict=True)]
        never = [r == 0 for r in raised]
        entry: dict[str, Any] = {"flush_length": length, "max_raise": solution.max_raise_by_length[length]}
        if all(always):
            entry["rule"] = f"raise {solution.max_raise_by_length[length]}x with every {length}-card flush"
        elif all(never):
            entry["rule"] = f"fold every {length}-card flush"
        else:
            top_always = 0
            while top_always < len(masks) and always[top_always]:
                top_always += 1
            bottom_never = len(masks)
            while bottom_never > 0 and never[bottom_never - 1]:
                bottom_never -= 1
            entry["raise_from"] = _rank_text(masks[top_always - 1]) if top_always else None
            entry["fold_from"] = _rank_text(masks[bottom_never]) if bottom_never < len(masks) else None
            mixed = []
            for index in range(top_always, bottom_never):
                mask = masks[index]
                by_pattern = {
                    "-".join(map(str, pattern)): solution.raised_by_flush_and_pattern.get(
                        (length, mask, pattern), 0
                    )
                    / count
                    for (ln, m, pattern), count in sorted(solution.hands_by_flush_and_pattern.items())
                    if ln == length and m == mask
                }
                mixed.append(
                    {
                        "flush": _rank_text(mask),
                        "raise_share": raised[index] / totals[index],
                        "by_other_suit_sizes": by_pattern,
                    }
                )
            entry["depends_on_other_cards"] = mixed
            parts = []
            if entry["raise_from"]:
                parts.append(f"raise with {entry['raise_from']} or better")
            if entry["fold_from"]:
                parts.append(f"fold with {entry['fold_from']} or worse")
            if mixed:
                parts.append(f"in between ({len(mixed)} flushes) it depends on the other cards")
            entry["rule"] = "; ".join(parts)
        chart.append(entry)
    return chart


def raise_fold_base_game(solution: RaiseFoldSolution) -> dict[str, Any]:
    decisions = dict(solution.hands_by_decision)
    return {
        "house_edge": float(solution.house_edge),
        "element_of_risk": float(solution.element_of_risk),
        "average_wager": float(solution.average_wager),
        "decision_frequencies": _probabilities(decisions, DECK_HANDS),
        "raise_frequency": sum(v for k, v in decisions.items() if k != "fold") / DECK_HANDS,
        "outcome_frequencies": _probabilities(solution.deals_by_outcome, solution.deals),
        "hands_with_equal_fold_and_raise": solution.exact_ties,
        "strategy": raise_fold_strategy(solution),
        "exact": {
            "house_edge": _fraction_text(solution.house_edge),
            "element_of_risk": _fraction_text(solution.element_of_risk),
            "decision_counts": decisions,
            "outcome_deal_counts": dict(solution.deals_by_outcome),
            "deals": solution.deals,
        },
    }


def par_sheet(request: ParSheetRequest, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Every figure for the request, computed exactly; ``progress`` is told how far it is."""
    started = time.perf_counter()
    flush_counts = flush_length_counts()
    run_counts = straight_flush_length_counts()
    sheet: dict[str, Any] = {
        "game": request.game,
        "banking": request.banking,
        "hands": DECK_HANDS,
        "flush_length": {str(k): v for k, v in sorted(flush_counts.items())},
        "straight_flush_length": {str(k): v for k, v in sorted(run_counts.items())},
    }
    side_bets: dict[str, Any] = {}
    if request.game in MAX_RAISE:
        contested = request.banking == "designated-player"
        solution = solve_raise_fold(
            request.game, MAX_RAISE[request.game], contests=contested, progress=progress
        )
        sheet["banker_qualifies"] = float(solution.banker_qualifies)
        sheet["banker_hands_per_player_hand"] = BANKER_HANDS
        sheet["base_game"] = raise_fold_base_game(solution)
        contests = {"flush_contest": solution.flush_contest, "run_contest": solution.straight_flush_contest}
    else:
        sheet["banker_qualifies"] = qualifying_hands() / DECK_HANDS
        sheet["base_game"] = chase_base_game(request.paytables, progress)
        contests = {}
    for wager, paytable in request.paytables.items():
        kind = SIDE_BET_KIND.get((request.game, request.banking, wager))
        if kind == "flush_length":
            side_bets[wager] = own_hand_side_bet(paytable, flush_counts)
        elif kind == "run_length":
            side_bets[wager] = own_hand_side_bet(paytable, run_counts)
        elif kind in contests:
            side_bets[wager] = contested_side_bet(paytable, contests[kind])
    for wager, paytable in request.paytables.items():
        inverted = inversion_text(paytable)
        if inverted is not None and wager in side_bets:
            # Only a table configured with allow_inverted = true gets here: the sheet says where it is.
            side_bets[wager]["inverted"] = inverted
    sheet["side_bets"] = side_bets
    sheet["runtime_s"] = round(time.perf_counter() - started, 3)
    return sheet
