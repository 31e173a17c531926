"""The integrity check: do a table's dealt cards and results still look like the mathematics?

From recalled rounds (the records `flushtable recall --json` prints) it compares, against the exact
expectation:

- each card's frequency over every card dealt (a chi-square test, scaled for dealing without
  replacement: a round's n cards are distinct, which shrinks the statistic by (52 - n) / 51);
- each card's frequency at each dealing position (dealer[i], seat N[i], community[i]): one card per
  round per position, so a plain chi-square with 51 degrees of freedom, per position;
- the longest-flush length of every 7-card hand against docs/rules.md's exact counts;
- each own-hand side bet's actual return against its exact expected return (a z-test using the
  paytable's exact variance). Wagers whose result depends on players' decisions (ante, raise, play,
  all-in, X-tra, the designated player's contests) are reported beside the optimal-strategy figure but
  not tested: players do not play optimally.

All tests run at one family-wise false-alarm rate ``alpha`` (Bonferroni: each of the m tests that
have enough data runs at alpha / m), so a fair table raises an alarm with probability at most alpha per
check. A test runs only once its expected cell counts are at least 5; with fewer rounds than that it
is reported as waiting for data.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.errors import CardError, UserError
from controller.files import FileRefused, read_bounded_text
from controller.gamemath.hand_counts import DECK_HANDS, flush_length_counts, straight_flush_length_counts
from controller.gamemath.parsheet import SIDE_BET_KIND
from controller.rules.cards import DECK_SIZE, card_text, parse_cards
from controller.rules.hands import evaluate
from controller.rules.paytables import DEFAULT_PRESET, Paytable, default_paytable, parse_paytable

DEFAULT_ALPHA = 0.01
MAX_RECORDS_BYTES = 512 * 1024 * 1024  # a recall file; a million rounds take about 400 MB
MIN_EXPECTED_PER_CELL = 5.0
MIN_BETS_FOR_RETURN_TEST = 100

# Side bets paid on the player's own seven cards (not contested against a banker): (game, banking
# mode, wager) -> the feature paid on. The par sheet's table of every side bet is the one source.
OWN_HAND_SIDE_BETS: dict[tuple[str, str, str], str] = {
    key: feature for key, feature in SIDE_BET_KIND.items() if feature in ("flush_length", "run_length")
}


def _chi2_sf(statistic: float, degrees_of_freedom: int) -> float:
    # scipy loads on first use: the command line imports this module to build its parser.
    from scipy.stats import chi2  # noqa: PLC0415

    return float(chi2.sf(statistic, degrees_of_freedom))


def _norm_sf(value: float) -> float:
    from scipy.stats import norm  # noqa: PLC0415

    return float(norm.sf(value))


@dataclass(frozen=True)
class TestResult:
    name: str
    statistic: float
    degrees_of_freedom: int
    p_value: float
    samples: int
    level: float = 0.0  # the level this test ran at (alpha / number of tests)
    flagged: bool = False
    detail: str = ""


@dataclass(frozen=True)
class WagerReturn:
    wager: str
    bets: int
    staked_cents: int
    net_cents: int
    observed_return: float  # net / staked: -0.05 means the players lost 5% of what they staked
    expected_return: float | None  # exact, where it depends on the cards alone
    tested: bool


@dataclass(frozen=True)
class IntegrityVerdict:
    """What the panel shows: ``status`` is "pass", "alarm" or "insufficient data"."""

    status: str
    summary: str
    alpha: float
    rounds_checked: int
    rounds_skipped: int
    tests: list[TestResult] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # tests that need more rounds
    wagers: list[WagerReturn] = field(default_factory=list)

    @property
    def alarm(self) -> bool:
        return self.status == "alarm"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def load_records(path: Path) -> list[dict[str, Any]]:
    """Recall records from a JSON array or JSON lines file."""
    try:  # bounded, a regular file only (controller/files.py)
        text = read_bounded_text(path, limit_bytes=MAX_RECORDS_BYTES)
    except FileRefused as refused:
        raise UserError(f"--records: {refused}") from None
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            loaded = json.loads(stripped)
        else:
            loaded = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise UserError(
            f"--records: {path} is not JSON or JSON lines (line {error.lineno}: {error.msg})"
        ) from None
    if not isinstance(loaded, list) or not all(isinstance(record, dict) for record in loaded):
        raise UserError(f"--records: {path} must hold a JSON array of round records (or one record per line)")
    return loaded


@dataclass
class _Round:
    game: str
    banking: str
    positions: dict[str, list[int]]  # "dealer", "community", "seat 3" -> cards in dealt order
    seven_card_hands: list[list[int]]  # hands for the flush-length test
    side_bets: list[tuple[str, Paytable, int, int, list[int]]]  # (wager, paytable, stake, net, own 7 cards)
    other_wagers: list[tuple[str, int, int]]


def _parse_round(record: Mapping[str, Any], index: int) -> _Round | None:  # noqa: PLR0912, PLR0915 - one check per field of a round record, each its own one-line error
    """The dealt cards and wagers of one settled round; None for a dead or void round."""
    where = f"record {index}" + (f" (round {record['round_id']})" if "round_id" in record else "")
    if record.get("status", "settled") != "settled":
        return None
    round_ = record.get("round")
    if not isinstance(round_, Mapping):
        raise UserError(f"{where}: 'round' must be the round in the settle input shape")
    game = round_.get("game")
    banking_field = round_.get("banking", {"mode": "house"})
    banking = banking_field.get("mode", "house") if isinstance(banking_field, Mapping) else "house"
    seats = round_.get("seats", [])
    if not isinstance(game, str) or not isinstance(seats, list):
        raise UserError(f"{where}: 'round' needs 'game' and 'seats'")
    try:
        dealer = parse_cards(round_.get("dealer", []), field=f"{where}: round.dealer")
        community = parse_cards(round_.get("community", []), field=f"{where}: round.community")
        seat_cards = [
            (
                seat.get("seat", position),
                parse_cards(seat.get("cards", []), field=f"{where}: round.seats[{position}].cards"),
            )
            for position, seat in enumerate(seats)
        ]
    except CardError as error:
        raise UserError(str(error)) from None
    positions: dict[str, list[int]] = {"dealer": dealer}
    if community:
        positions["community"] = community
    for seat_number, cards in seat_cards:
        positions[f"seat {seat_number}"] = cards
    every_card = [card for cards in positions.values() for card in cards]
    if len(set(every_card)) != len(every_card):
        raise UserError(f"{where}: a card appears twice in one settled round")
    if game == "chase-the-flush":
        # Every Chase hand shares the community cards; only the dealer's is independent of the others.
        hands = [dealer + community] if len(dealer) + len(community) == 7 else []
    else:
        hands = [cards for cards in [dealer] + [cards for _, cards in seat_cards] if len(cards) == 7]
    settled_seats: dict[object, Mapping[str, Any]] = {}
    settlement = record.get("settlement")
    if isinstance(settlement, Mapping):
        for seat in settlement.get("seats", []):
            if isinstance(seat, Mapping):
                settled_seats[seat.get("seat")] = seat
    custom = round_.get("paytables", {}) if isinstance(round_.get("paytables", {}), Mapping) else {}
    side_bets: list[tuple[str, Paytable, int, int, list[int]]] = []
    other: list[tuple[str, int, int]] = []
    for seat_number, cards in seat_cards:
        settled = settled_seats.get(seat_number)
        if settled is None or settled.get("status") == "dead":
            continue
        own = cards + community if game == "chase-the-flush" else cards
        for wager, line in (settled.get("wagers") or {}).items():
            if not isinstance(line, Mapping):
                continue
            stake, net = line.get("stake", 0), line.get("net", 0)
            if not isinstance(stake, int) or not isinstance(net, int) or stake <= 0:
                continue
            if (game, banking, wager) in OWN_HAND_SIDE_BETS and len(own) == 7:
                table = (
                    parse_paytable(custom[wager], field=f"{where}: round.paytables.{wager}")
                    if wager in custom
                    else default_paytable(game, banking, wager)
                )
                side_bets.append((f"{game}/{banking}/{wager}", table, stake, net, own))
            else:
                other.append((f"{game}/{banking}/{wager}", stake, net))
    return _Round(game, banking, positions, hands, side_bets, other)


def _chi_square(observed: Sequence[int], expected: Sequence[float]) -> float:
    return sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True) if e > 0)


def _merge_small(
    observed: list[int], probabilities: list[float], total: int
) -> tuple[list[int], list[float]]:
    """Merge adjacent categories from the rare end until every expected count is at least 5."""
    merged_o: list[int] = []
    merged_e: list[float] = []
    run_o, run_e = 0, 0.0
    for o, p in zip(reversed(observed), reversed(probabilities), strict=True):
        run_o += o
        run_e += p * total
        if run_e >= MIN_EXPECTED_PER_CELL:
            merged_o.append(run_o)
            merged_e.append(run_e)
            run_o, run_e = 0, 0.0
    if run_e and merged_e:
        merged_o[-1] += run_o
        merged_e[-1] += run_e
    return merged_o, merged_e


def _paytable_moments(table: Paytable, feature: str) -> tuple[Fraction, Fraction]:
    """Exact mean and variance of one unit's net on an own-hand side bet."""
    counts = flush_length_counts() if feature == "flush_length" else straight_flush_length_counts()
    mean = Fraction(0)
    second = Fraction(0)
    for length, count in counts.items():
        odds = table.odds_for(length)
        net = -1 if odds is None else odds
        p = Fraction(count, DECK_HANDS)
        mean += p * net
        second += p * net * net
    return mean, second - mean * mean


def check_records(records: Iterable[Mapping[str, Any]], *, alpha: float = DEFAULT_ALPHA) -> IntegrityVerdict:
    """The integrity verdict over recalled rounds (settled ones; dead and void rounds are skipped)."""
    rounds, skipped = _parse_rounds(records)
    # Each test appends what it could run to ``candidates`` and what lacks data to ``waiting``, in the
    # report's order: every card, each position, the flush lengths, the side bets' returns.
    candidates: list[TestResult] = []
    waiting: list[str] = []
    _card_frequencies(rounds, candidates, waiting)
    _position_frequencies(rounds, candidates, waiting)
    _flush_lengths(rounds, candidates, waiting)
    wagers = _wager_returns(rounds, candidates, waiting)
    return _verdict(rounds, skipped, candidates, waiting, wagers, alpha=alpha)


def _parse_rounds(records: Iterable[Mapping[str, Any]]) -> tuple[list[_Round], int]:
    """The settled rounds among ``records``, and how many others were skipped."""
    rounds: list[_Round] = []
    skipped = 0
    for index, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise UserError(f"record {index}: must be an object")
        parsed = _parse_round(record, index)
        if parsed is None:
            skipped += 1
        else:
            rounds.append(parsed)
    return rounds, skipped


def _card_frequencies(rounds: list[_Round], candidates: list[TestResult], waiting: list[str]) -> None:
    """Every card dealt: pooled over rounds, without replacement within a round."""
    card_counts = [0] * DECK_SIZE
    dealt = 0
    variance_scale_numerator = 0
    for round_ in rounds:
        cards = [card for cards in round_.positions.values() for card in cards]
        for card in cards:
            card_counts[card] += 1
        dealt += len(cards)
        variance_scale_numerator += len(cards) * (DECK_SIZE - len(cards))
    if dealt / DECK_SIZE >= MIN_EXPECTED_PER_CELL:
        scale = variance_scale_numerator / (dealt * (DECK_SIZE - 1))
        statistic = _chi_square(card_counts, [dealt / DECK_SIZE] * DECK_SIZE) / scale
        worst = max(range(DECK_SIZE), key=lambda c: abs(card_counts[c] - dealt / DECK_SIZE))
        candidates.append(
            TestResult(
                "card frequencies",
                statistic,
                DECK_SIZE - 1,
                float(_chi2_sf(statistic, DECK_SIZE - 1)),
                dealt,
                detail=f"{dealt} cards; furthest from expected: {card_text(worst)} "
                f"seen {card_counts[worst]}, "
                f"expected {dealt / DECK_SIZE:.1f}",
            )
        )
    else:
        waiting.append(
            f"card frequencies (needs {int(MIN_EXPECTED_PER_CELL * DECK_SIZE)} cards, has {dealt})"
        )


def _position_frequencies(rounds: list[_Round], candidates: list[TestResult], waiting: list[str]) -> None:
    """Each dealing position: one card per round, every card equally likely."""
    by_position: dict[str, list[int]] = {}
    for round_ in rounds:
        for name, cards in round_.positions.items():
            for offset, card in enumerate(cards):
                by_position.setdefault(f"{name}[{offset}]", [0] * DECK_SIZE)[card] += 1
    short_positions = 0
    for position, counts in sorted(by_position.items()):
        n = sum(counts)
        if n / DECK_SIZE < MIN_EXPECTED_PER_CELL:
            short_positions += 1
            continue
        statistic = _chi_square(counts, [n / DECK_SIZE] * DECK_SIZE)
        candidates.append(
            TestResult(
                f"cards at {position}", statistic, DECK_SIZE - 1, float(_chi2_sf(statistic, DECK_SIZE - 1)), n
            )
        )
    if short_positions:
        waiting.append(
            f"cards per position ({short_positions} positions need "
            f"{int(MIN_EXPECTED_PER_CELL * DECK_SIZE)} rounds)"
        )


def _flush_lengths(rounds: list[_Round], candidates: list[TestResult], waiting: list[str]) -> None:
    """Longest flush of every 7-card hand."""
    exact = flush_length_counts()
    lengths = sorted(exact)
    hands = [hand for round_ in rounds for hand in round_.seven_card_hands]
    if not hands:
        return
    observed_by_length = dict.fromkeys(lengths, 0)
    for hand in hands:
        observed_by_length[evaluate(hand).flush_length] += 1
    observed, expected = _merge_small(
        [observed_by_length[length] for length in lengths],
        [exact[length] / DECK_HANDS for length in lengths],
        len(hands),
    )
    if len(observed) < 2:
        waiting.append("flush lengths (needs more hands)")
        return
    statistic = _chi_square(observed, expected)
    shares = ", ".join(
        f"{length}: {observed_by_length[length] / len(hands):.4f} (exact {exact[length] / DECK_HANDS:.4f})"
        for length in lengths
    )
    candidates.append(
        TestResult(
            "flush lengths",
            statistic,
            len(observed) - 1,
            float(_chi2_sf(statistic, len(observed) - 1)),
            len(hands),
            detail=f"{len(hands)} hands; observed share by length {shares}",
        )
    )


def _wager_returns(
    rounds: list[_Round], candidates: list[TestResult], waiting: list[str]
) -> list[WagerReturn]:
    """Own-hand side bets: actual return against the exact expectation; other wagers: counted only."""
    wagers: list[WagerReturn] = []
    side_groups: dict[tuple[str, Paytable], list[tuple[int, int]]] = {}
    for round_ in rounds:
        for name, table, stake, net, _own in round_.side_bets:
            side_groups.setdefault((name, table), []).append((stake, net))
    for (name, table), bets in sorted(side_groups.items(), key=lambda item: item[0][0]):
        game, banking, wager = name.split("/")
        mean, variance = _paytable_moments(table, OWN_HAND_SIDE_BETS[(game, banking, wager)])
        staked = sum(stake for stake, _ in bets)
        net = sum(net for _, net in bets)
        tested = len(bets) >= MIN_BETS_FOR_RETURN_TEST
        wagers.append(WagerReturn(name, len(bets), staked, net, net / staked, float(mean), tested))
        if tested:
            deviation = net - float(mean) * staked
            sd = math.sqrt(float(variance) * sum(stake * stake for stake, _ in bets))
            z = deviation / sd if sd else 0.0
            candidates.append(
                TestResult(
                    f"return of {name} ({table.name})",
                    z,
                    0,
                    float(2 * _norm_sf(abs(z))),
                    len(bets),
                    detail=f"observed {net / staked:+.4f} per unit staked, exact {float(mean):+.4f}",
                )
            )
        else:
            waiting.append(f"return of {name} (needs {MIN_BETS_FOR_RETURN_TEST} bets, has {len(bets)})")
    other_groups: dict[str, list[tuple[int, int]]] = {}
    for round_ in rounds:
        for name, stake, net in round_.other_wagers:
            other_groups.setdefault(name, []).append((stake, net))
    for name, bets in sorted(other_groups.items()):
        staked = sum(stake for stake, _ in bets)
        net = sum(net for _, net in bets)
        wagers.append(WagerReturn(name, len(bets), staked, net, net / staked, None, False))
    return wagers


def _verdict(
    rounds: list[_Round],
    skipped: int,
    candidates: list[TestResult],
    waiting: list[str],
    wagers: list[WagerReturn],
    *,
    alpha: float,
) -> IntegrityVerdict:
    """The tests judged together: each at ``alpha`` divided by their number (Bonferroni)."""
    level = alpha / len(candidates) if candidates else alpha
    tests = [
        TestResult(**{**asdict(test), "level": level, "flagged": test.p_value < level}) for test in candidates
    ]
    flagged = [test for test in tests if test.flagged]
    if flagged:
        status = "alarm"
        summary = "cards or results do not look random: " + "; ".join(
            f"{test.name} (p = {test.p_value:.2e})" for test in flagged
        )
    elif not tests:
        status = "insufficient data"
        summary = f"{len(rounds)} settled rounds are too few to test anything yet"
    else:
        status = "pass"
        summary = (
            f"{len(tests)} tests on {len(rounds)} settled rounds found nothing unusual "
            f"(false-alarm rate at most {alpha:g} per check)"
        )
    return IntegrityVerdict(status, summary, alpha, len(rounds), skipped, tests, waiting, wagers)


__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_PRESET",
    "IntegrityVerdict",
    "TestResult",
    "WagerReturn",
    "check_records",
    "load_records",
]
