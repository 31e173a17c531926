"""`flushtable integrity`: do the table's cards and results still look random? (exact expectations)"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from controller.errors import UserError
from controller.files import check_database_file
from controller.integrity import DEFAULT_ALPHA, IntegrityVerdict, check_records, load_records
from controller.journal.recall import recall_records
from controller.money import money

NAME = "integrity"
HELP = "test recalled rounds' cards and wager returns against the exact mathematics (chi-square)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--journal", type=Path, help="the table's journal (SQLite)")
    source.add_argument("--records", type=Path, help="a JSON array or JSON lines file of recall records")
    parser.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help=f"false-alarm rate per check (default {DEFAULT_ALPHA})",
    )
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")


def journal_records(path: Path) -> list[dict[str, Any]]:
    """Every recalled round in a journal, through the journal's own recall."""
    check_database_file(path, "--journal", must_exist=True)
    return recall_records(path)


def render(verdict: IntegrityVerdict) -> str:
    lines = [f"Integrity: {verdict.status.upper()} — {verdict.summary}", ""]
    lines.append(
        f"Rounds checked: {verdict.rounds_checked} settled ({verdict.rounds_skipped} dead or void skipped)"
    )
    if verdict.tests:
        lines.append(f"{'test':<44} {'samples':>8} {'statistic':>10} {'df':>4} {'p-value':>10}  flag")
        for test in verdict.tests:
            lines.append(
                f"{test.name:<44} {test.samples:>8} {test.statistic:>10.3f} {test.degrees_of_freedom:>4} "
                f"{test.p_value:>10.2e}  {'ALARM' if test.flagged else 'ok'}"
            )
            if test.detail and test.flagged:
                lines.append(f"    {test.detail}")
        lines.append(f"(each test at level {verdict.tests[0].level:.2e}, family-wise {verdict.alpha:g})")
    for item in verdict.waiting:
        lines.append(f"waiting for data: {item}")
    if verdict.wagers:
        lines.append("")
        lines.append(f"{'wager':<46} {'bets':>7} {'staked':>12} {'net':>12} {'return':>9} {'exact':>9}")
        for wager in verdict.wagers:
            exact = f"{wager.expected_return:+.4f}" if wager.expected_return is not None else "(play)"
            lines.append(
                f"{wager.wager:<46} {wager.bets:>7} {money(wager.staked_cents):>12} "
                f"{money(wager.net_cents, signed=True):>12} "
                f"{wager.observed_return:>+9.4f} {exact:>9}"
            )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha: must be between 0 and 1, not {args.alpha}")
    records = journal_records(args.journal) if args.journal is not None else load_records(args.records)
    verdict = check_records(records, alpha=args.alpha)
    print(json.dumps(verdict.to_json(), indent=2) if args.json else render(verdict))
    return 1 if verdict.alarm else 0
