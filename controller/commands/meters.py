"""`flushtable meters`: handle, win by wager, rounds, dead hands and faults, derived from the journal."""

from __future__ import annotations

import argparse
import json
import sys

from controller.commands.journal_args import add_journal_arguments, journal_path
from controller.errors import UserError
from controller.journal.meters import compute_meters
from controller.journal.render import render_meters
from controller.journal.render_csv import write_meters_csv
from controller.journal.store import Journal

NAME = "meters"
HELP = "the table's meters, computed from the journal"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_journal_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the meters as JSON")
    parser.add_argument(
        "--csv", action="store_true", help="print the meters as CSV rows (meter, key, value, amount)"
    )


def run(args: argparse.Namespace) -> int:
    if args.json and args.csv:
        raise UserError("--json and --csv: give one or the other")
    with Journal.open_existing(journal_path(args)) as journal:
        meters = compute_meters(journal).to_json()
    if args.csv:
        write_meters_csv(meters, sys.stdout)
    else:
        print(json.dumps(meters, indent=2) if args.json else render_meters(meters))
    return 0 if meters["balanced"] else 1
