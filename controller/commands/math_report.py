"""`flushtable math`: a game's exact par sheet (house edge, strategy, side bets) for its paytables.

Progress goes to standard error while it computes (Chase the Flush takes minutes); each sheet is kept
in the cache (controller/gamemath/cache.py, docs/math.md) by its game, banking mode, paytables and the
code's own digest, so asking again is instant.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controller.errors import UserError
from controller.gamemath.cache import CACHE_ENV, cached_par_sheet, default_cache_dir
from controller.gamemath.parsheet import build_request
from controller.gamemath.progress import ProgressPrinter
from controller.gamemath.progressive import progressive_par_sheet, render_progressive
from controller.names import BANKING_MODES
from controller.rules.amounts import check_cents
from controller.rules.games import GAME_SHORT_NAMES, parse_game_name
from controller.rules.paytables import Paytable, parse_table_paytable
from controller.rules.progressive import (
    NOT_OFFERED,
    PROGRESSIVE_GAMES,
    ProgressiveSettings,
    parse_progressive_settings,
)

NAME = "math"
HELP = "print a game's exact par sheet: house edge, optimal strategy, side bets (exact, never simulated)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--game",
        help="the game (or --config): "
        + ", ".join(f"{full} ({short})" for short, full in GAME_SHORT_NAMES.items()),
    )
    parser.add_argument(
        "--banking", choices=BANKING_MODES, help="banking mode (default: house, or --config's)"
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="the par sheet of a configured table: its game, banking and paytables (--paytable overrides)",
    )
    parser.add_argument(
        "--paytable",
        action="append",
        default=[],
        metavar="WAGER=PRESET_OR_JSON",
        help='a side bet\'s paytable: a preset name or JSON like \'{"7": 300, "6": 100}\' (repeatable)',
    )
    parser.add_argument("--json", action="store_true", help="print the par sheet as JSON")
    parser.add_argument(
        "--strategy", action="store_true", help="print the optimal strategy as a dealer trainer reads it"
    )
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where par sheets are kept (default ${CACHE_ENV}, else ~/.cache/flushtable/par-sheets)",
    )
    cache.add_argument("--no-cache", action="store_true", help="compute again; read and keep nothing")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines on standard error")
    parser.add_argument(
        "--progressive",
        metavar="JSON",
        help="the Progressive wager's parameters, as the configuration's [progressive] in JSON: "
        '\'{"unit_cents": 100, "base_cents": 1000000, "reset_cents": 1000000, "increment_percent": 15, '
        "\"hidden_percent\": 2}' (--config: the table's own)",
    )
    parser.add_argument(
        "--meter",
        metavar="CENTS",
        help="the progressive's current meter, for the return at the meter (default: the reset)",
    )
    parser.add_argument(
        "--progressive-only",
        action="store_true",
        help="print only the progressive's par sheet (the base game's takes seconds to compute)",
    )


def parse_paytable_options(options: list[str]) -> dict[str, Paytable]:
    tables: dict[str, Paytable] = {}
    for option in options:
        wager, sep, spec_text = option.partition("=")
        if not sep or not wager:
            raise UserError(f"--paytable {option!r}: write WAGER=PRESET or WAGER='{{\"7\": 300, ...}}'")
        spec: object = spec_text
        if spec_text.lstrip().startswith("{"):
            try:
                spec = json.loads(spec_text)
            except json.JSONDecodeError as error:
                raise UserError(f"--paytable {wager}: not valid JSON ({error.msg})") from None
        tables[wager] = parse_table_paytable(spec, field=f"--paytable {wager}")
    return tables


def parse_progressive_option(text: str) -> ProgressiveSettings:
    try:
        given = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"--progressive: not valid JSON ({error.msg})") from None
    return parse_progressive_settings(given, field="--progressive")


def parse_meter_option(text: str, settings: ProgressiveSettings) -> int:
    try:
        meter = int(text.strip().replace("_", ""))
    except ValueError:
        raise UserError(f"--meter: a whole number of cents, not {text[:40]!r}") from None
    check_cents(meter, "--meter")
    if settings.limit_cents is not None and meter > settings.limit_cents:
        raise UserError(f"--meter: {meter} is above the limit ({settings.limit_cents})")
    return meter


def _percent(value: float, digits: int = 4) -> str:
    return f"{100 * value:.{digits}f}%"


def render_report(sheet: dict[str, Any]) -> str:
    lines = [f"Par sheet: {sheet['game']} ({sheet['banking']}-banked)", ""]
    lines.append(f"Seven-card hands: {sheet['hands']:,}")
    lines.append(
        f"{'length':>8} {'longest flush':>16} {'probability':>12} {'longest run':>14} {'probability':>12}"
    )
    for length in range(1, 8):
        flush = sheet["flush_length"].get(str(length), 0)
        run = sheet["straight_flush_length"].get(str(length), 0)
        lines.append(
            f"{length:>8} {flush:>16,} {flush / sheet['hands']:>12.8f} "
            f"{run:>14,} {run / sheet['hands']:>12.8f}"
        )
    lines.append("")
    lines.append(f"Banker qualifies: {_percent(sheet['banker_qualifies'])}")
    base = sheet["base_game"]
    lines.append("")
    lines.append("Base game, optimal strategy")
    lines.append(f"  house edge per ante:          {_percent(base['house_edge'])}")
    lines.append(f"  element of risk (per wagered): {_percent(base['element_of_risk'])}")
    lines.append(f"  average total wager (antes):   {base['average_wager']:.6f}")
    lines.append("  decisions:")
    for decision, probability in base["decision_frequencies"].items():
        lines.append(f"    {decision:<28} {_percent(probability)}")
    if "expected_value" in base:
        lines.append(f"  expected value per ante:       {base['expected_value']:+.6f}")
    if "outcome_frequencies" in base:
        lines.append("  outcomes:")
        for outcome, probability in base["outcome_frequencies"].items():
            lines.append(f"    {outcome:<28} {_percent(probability)}")
    for wager, bet in sheet["side_bets"].items():
        lines.append("")
        lines.append(f"Side bet {wager} ({bet['paytable_name']})")
        if "inverted" in bet:
            lines.append(f"  INVERTED paytable (allow_inverted = true): {bet['inverted']}")
        if "assumes" in bet:
            lines.append(f"  assumes {bet['assumes']}")
            lines.append(
                f"  {'line':>6} {'pays':>6} {'win':>12} {'push':>12} {'lose':>12} {'fold':>12} {'return':>10}"
            )
            for row in bet["lines"]:
                lines.append(
                    f"  {row['line']:>6} {row['pays']:>6} {row['win_probability']:>12.8f} "
                    f"{row['push_probability']:>12.8f} "
                    f"{row['loss_probability']:>12.8f} {row['fold_probability']:>12.8f} "
                    f"{row['return']:>10.6f}"
                )
        else:
            lines.append(f"  {'line':>6} {'pays':>6} {'combinations':>14} {'probability':>12} {'return':>10}")
            for row in bet["lines"]:
                lines.append(
                    f"  {row['line']:>6} {row['pays']:>6} {row['count']:>14,} "
                    f"{row['probability']:>12.8f} {row['return']:>10.6f}"
                )
        lines.append(
            f"  house edge {_percent(bet['house_edge'])}, hit frequency {_percent(bet['hit_frequency'])}"
        )
    lines.append("")
    lines.append(f"Computed exactly in {sheet['runtime_s']:.1f} s")
    return "\n".join(lines)


def render_strategy(sheet: dict[str, Any]) -> str:
    base = sheet["base_game"]
    lines = [f"Optimal strategy: {sheet['game']}", ""]
    for entry in base["strategy"]:
        title = entry.get("title") or f"{entry['flush_length']}-card flush"
        lines.append(f"{title}: {entry['rule']}")
        for mixed in entry.get("depends_on_other_cards", []):
            shares = ", ".join(
                f"other suits {pattern}: {_percent(share, 0)}"
                for pattern, share in mixed["by_other_suit_sizes"].items()
            )
            lines.append(
                f"    {mixed['flush']:<10} raise {_percent(mixed['raise_share'], 0):>5} of hands ({shares})"
            )
        for note in entry.get("notes", []):
            lines.append(f"    {note}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:  # noqa: PLR0912 - one branch per report option, each a few lines
    game: str | None = None if args.game is None else parse_game_name(args.game)
    banking: str | None = args.banking
    paytables: dict[str, Paytable] = {}
    config_progressive: ProgressiveSettings | None = None
    if args.config is not None:
        from controller.config import load_config  # noqa: PLC0415 (only --config pays for the models)

        config = load_config(args.config)
        if game is not None and game != config.game:
            raise UserError(f"--game: {game} differs from the configuration's {config.game}")
        game = config.game
        banking = banking or config.banking.mode
        if banking == config.banking.mode:
            paytables = dict(config.paytables)
        config_progressive = config.progressive
    if game is None:
        raise UserError("--game: which game? (or --config FILE)")
    progressive = _progressive_request(args, game, config_progressive)
    if args.progressive_only:
        if progressive is None:
            raise UserError("--progressive-only: which progressive? (--progressive JSON, or --config FILE)")
        print(_progressive_out(progressive, as_json=args.json))
        return 0
    paytables.update(parse_paytable_options(args.paytable))
    request = build_request(game, banking or "house", paytables)
    cache_dir = None if args.no_cache else (args.cache_dir or default_cache_dir())
    progress = None if args.quiet else ProgressPrinter(f"math {game}", sys.stderr)
    found = cached_par_sheet(request, cache_dir, progress)
    if found.note is not None:
        print(f"flushtable math: note: {found.note}", file=sys.stderr)
    sheet = found.sheet
    if not args.quiet:
        if found.from_cache:
            print(f"math {game}: from the cache {found.path}", file=sys.stderr)
        elif found.path is not None:
            print(f"math {game}: kept in the cache {found.path}", file=sys.stderr)
    if args.json:
        if progressive is not None:
            sheet = {**sheet, "progressive": progressive_par_sheet(*progressive)}
        print(json.dumps(sheet, indent=2))
    elif args.strategy:
        print(render_strategy(sheet))
    else:
        report = render_report(sheet)
        if found.from_cache:
            report += f" (when first asked; read now from the cache {found.path})"
        print(report)
        if progressive is not None:
            print()
            print(_progressive_out(progressive, as_json=False))
    return 0


def _progressive_request(
    args: argparse.Namespace, game: str, configured: ProgressiveSettings | None
) -> tuple[ProgressiveSettings, int | None] | None:
    """The progressive to print, from --progressive (else the configuration's), with --meter."""
    settings = parse_progressive_option(args.progressive) if args.progressive is not None else configured
    if settings is not None and game not in PROGRESSIVE_GAMES:
        raise UserError(f"--progressive: {NOT_OFFERED}")
    if args.meter is not None:
        if settings is None:
            raise UserError("--meter: the meter of which progressive? (--progressive JSON, or --config FILE)")
        return (settings, parse_meter_option(args.meter, settings))
    return None if settings is None else (settings, None)


def _progressive_out(progressive: tuple[ProgressiveSettings, int | None], *, as_json: bool) -> str:
    sheet = progressive_par_sheet(*progressive)
    return json.dumps(sheet, indent=2) if as_json else render_progressive(sheet)
