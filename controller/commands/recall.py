"""`flushtable recall`: the last rounds (10 by default), or one round, readable or as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from controller.commands.journal_args import add_journal_arguments, journal_path
from controller.errors import UserError
from controller.journal.recall import DEFAULT_LAST, recall_records
from controller.journal.render import render_records
from controller.journal.render_csv import write_recall_csv

NAME = "recall"
HELP = "recall the last rounds played (cards, hands, every wager's result, faults)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_journal_arguments(parser)
    parser.add_argument(
        "--last", type=int, default=None, metavar="N", help=f"the last N rounds (default {DEFAULT_LAST})"
    )
    parser.add_argument("--round", metavar="ID", help="one round, by its id")
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


def run(args: argparse.Namespace) -> int:
    if args.round is not None and args.last is not None:
        raise UserError("--round and --last: give one or the other")
    last = args.last if args.last is not None else (None if args.round else DEFAULT_LAST)
    if last is not None and last < 1:
        raise UserError(f"--last: must be at least 1, not {last}")
    if sum((args.json, args.jsonl, args.csv)) > 1:
        raise UserError("--json, --jsonl and --csv: give one of them")
    records = recall_records(journal_path(args), last=last, round_id=args.round, with_private=args.private)
    if args.json:
        print(json.dumps(records, ensure_ascii=False, indent=2))
    elif args.csv:
        write_recall_csv(records, sys.stdout)
    elif args.jsonl:
        for record in records:
            print(json.dumps(record, ensure_ascii=False))
    else:
        print(render_records(records))
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
