"""`flushtable meters`: handle, win by wager, rounds, dead hands and faults, derived from the journal."""

from __future__ import annotations

import argparse
import json

from controller.commands.journal_args import add_journal_arguments, journal_path
from controller.journal.meters import compute_meters
from controller.journal.render import render_meters
from controller.journal.store import Journal

NAME = "meters"
HELP = "the table's meters, computed from the journal"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_journal_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the meters as JSON")


def run(args: argparse.Namespace) -> int:
    with Journal.open_existing(journal_path(args)) as journal:
        meters = compute_meters(journal).to_json()
    print(json.dumps(meters, indent=2) if args.json else render_meters(meters))
    return 0 if meters["balanced"] else 1
