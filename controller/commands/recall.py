"""`flushtable recall`: the last rounds (10 by default), or one round, readable or as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, date, datetime, timedelta

from controller.commands.journal_args import add_journal_arguments, journal_path, property_of
from controller.errors import UserError
from controller.journal.chain import format_time_utc
from controller.journal.recall import DEFAULT_LAST, recall_records
from controller.journal.render import render_records

NAME = "recall"
HELP = "recall the last rounds played (cards, hands, every wager's result, faults)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_journal_arguments(parser)
    parser.add_argument(
        "--last", type=int, default=None, metavar="N", help=f"the last N rounds (default {DEFAULT_LAST})"
    )
    parser.add_argument("--round", metavar="ID", help="one round, by its id")
    parser.add_argument(
        "--from",
        dest="start",
        metavar="WHEN",
        help="rounds closed from this UTC time or date on (2026-12-01 or 2026-12-01T14:00)",
    )
    parser.add_argument(
        "--to", dest="end", metavar="WHEN", help="rounds closed before this UTC time (a date: up to its end)"
    )
    parser.add_argument("--seat", type=int, metavar="N", help="rounds in which seat N had a wager")
    parser.add_argument(
        "--json", action="store_true", help="a JSON array of recall records (docs/journal.md)"
    )
    parser.add_argument(
        "--jsonl",
        action="store_true",
        help="one recall record per line: pipes into `flushtable settle --jsonl` (docs/settle.md)",
    )
    parser.add_argument(
        "--csv",
        action="store_true",
        help='one row per wager (docs/journal.md "CSV"); cards only where the text shows them',
    )
    parser.add_argument(
        "--private",
        action="store_true",
        help="also the private parts a viewer never sees (a dead hand's cards, a fault's card): audits",
    )


def utc_bound(text: str, option: str, *, end: bool) -> str:
    """A UTC time or date given on the command line as a journal time: a date alone is its midnight
    (for ``--to``, the next midnight: the whole day is in)."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1 if end else 0)
        else:
            moment = datetime.fromisoformat(text.removesuffix("Z"))
            moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except ValueError:
        raise UserError(
            f"{option}: {text!r} is not a UTC date or time like 2026-12-01 or 2026-12-01T14:00"
        ) from None
    return format_time_utc(moment)


def run(args: argparse.Namespace) -> int:  # noqa: PLR0912 - one check per option, each its own one-line error
    if args.round is not None and args.last is not None:
        raise UserError("--round and --last: give one or the other")
    selecting = args.start is not None or args.end is not None or args.seat is not None
    if args.round is not None and selecting:
        raise UserError("--round with --from, --to or --seat: one round is already one round")
    start_utc = utc_bound(args.start, "--from", end=False) if args.start is not None else None
    end_utc = utc_bound(args.end, "--to", end=True) if args.end is not None else None
    if start_utc is not None and end_utc is not None and end_utc <= start_utc:
        raise UserError(f"--to: {args.end} is not after --from: {args.start}")
    if args.seat is not None and args.seat < 0:
        raise UserError(f"--seat: {args.seat} is not a seat")
    # A range or a seat lists all its rounds unless --last says otherwise; alone, the last 10.
    default_last = None if (args.round or selecting) else DEFAULT_LAST
    last = args.last if args.last is not None else default_last
    if last is not None and last < 1:
        raise UserError(f"--last: must be at least 1, not {last}")
    if sum((args.json, args.jsonl, args.csv)) > 1:
        raise UserError("--json, --jsonl and --csv: give one of them")
    prop = property_of(args)
    records = recall_records(
        journal_path(args),
        last=last,
        round_id=args.round,
        with_private=args.private,
        start_utc=start_utc,
        end_utc=end_utc,
        seat=args.seat,
    )
    if args.json:
        print(json.dumps(records, ensure_ascii=False, indent=2))
    elif args.csv:
        # The CSV writer (with the standard library's csv) only for --csv: not on every recall's start.
        from controller.journal.render_csv import write_recall_csv  # noqa: PLC0415

        write_recall_csv(records, sys.stdout, prop)
    elif args.jsonl:
        for record in records:
            print(json.dumps(record, ensure_ascii=False))
    else:
        print(render_records(records, prop.money, prop))
    for record in records:
        stored = record.get("stored")
        if stored is not None and stored["archived"]:
            # Said apart from the record: the operator learns where an archived round was read from.
            print(
                f"note: round {record['round_id']} is in archived segment {stored['segment']}, read from "
                f"{stored['file']}",
                file=sys.stderr,
            )
    return 0
