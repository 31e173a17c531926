"""`flushtable report --day YYYY-MM-DD`: one table's gaming-day report from its own journal, the same
fold and CSV as the floor's (controller/floor/gaming_day.py; docs/operations.md "Gaming-day reports")."""

from __future__ import annotations

import argparse

from controller.commands.journal_args import add_journal_arguments, journal_path, property_of
from controller.errors import UserError

NAME = "report"
HELP = "the table's gaming-day report (rounds, handle, win, hold, dead hands, voids...), from its journal"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_journal_arguments(parser)
    parser.add_argument("--day", required=True, metavar="YYYY-MM-DD", help="the gaming day")
    parser.add_argument(
        "--start-hour",
        type=int,
        default=None,
        metavar="H",
        help="the gaming day's start hour, UTC (default: --config's [property] gaming_day_start and zone)",
    )
    parser.add_argument("--csv", action="store_true", help="the CSV with its digest line")


def run(args: argparse.Namespace) -> int:
    from controller.floor.gaming_day import (  # noqa: PLC0415 - the floor's pure fold only, no psycopg use
        REPORT_KINDS,
        DayEntry,
        build_report,
        render_report,
    )
    from controller.journal.store import Journal  # noqa: PLC0415
    from controller.locale import legacy_property  # noqa: PLC0415

    prop = property_of(args)
    if args.start_hour is not None:  # the option from before [property]: that hour, UTC, shifts of 8 hours
        if not 0 <= args.start_hour <= 23:
            raise UserError(f"--start-hour: {args.start_hour} is not an hour from 0 to 23")
        prop = legacy_property(args.start_hour)
    with Journal.open_existing(journal_path(args), readonly=True) as journal:
        table_id = journal.table_id
        entries = [
            DayEntry(table_id, e.kind, e.time_utc, e.payload)
            for e in journal.entries()
            if e.kind in REPORT_KINDS or e.kind.startswith("progressive_")
        ]
    report = build_report(args.day, prop, entries, {table_id: ""}, totals=False)
    print(report.csv_text() if args.csv else render_report(report), end="")
    return 0
