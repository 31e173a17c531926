"""`flushtable meters`: handle, win by wager, rounds, dead hands and faults, derived from the journal."""

from __future__ import annotations

import argparse
import json
import sys

from controller.commands.journal_args import add_journal_arguments, journal_path, property_of
from controller.errors import UserError
from controller.journal.meters import compute_meters
from controller.journal.render import render_meters
from controller.journal.render_csv import write_meters_csv
from controller.journal.store import Journal
from controller.locale import iso_time, time_text

NAME = "meters"
HELP = "the table's meters, computed from the journal"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_journal_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the meters as JSON")
    parser.add_argument(
        "--date",
        metavar="DAY",
        help="one day (2026-12-01) in the property's zone; with --shift, that gaming day's",
    )
    parser.add_argument(
        "--shift",
        metavar="NAME",
        help="a shift of --date, as --config's [property] names them (default: day 06-14, swing 14-22, "
        "grave 22-06, UTC)",
    )
    parser.add_argument(
        "--from", dest="first", metavar="DAY", help="whole days (the property's zone) from..."
    )
    parser.add_argument("--to", dest="last", metavar="DAY", help="...to this one, inclusive")
    parser.add_argument(
        "--csv", action="store_true", help="print the meters as CSV rows (meter, key, value, amount)"
    )


def _range(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The UTC range asked for: a shift of a day, a day, whole days; (None, None): the whole journal."""
    if args.shift is None and args.date is None and args.first is None and args.last is None:
        return None, None  # the whole journal: nothing of the shifts' module loaded (a reader's start-up)
    from controller.panel.shift_meters import day_range, shift_range  # noqa: PLC0415

    prop = property_of(args)
    if args.shift is not None:
        if args.date is None:
            raise UserError("--shift: give the day too, with --date")
        if args.first is not None or args.last is not None:
            raise UserError("--shift with --from/--to: give a shift of one --date, or whole days")
        return shift_range(args.date, args.shift, prop)
    if args.date is not None:
        if args.first is not None or args.last is not None:
            raise UserError("--date with --from/--to: give one or the other")
        return day_range(args.date, args.date, prop)
    if args.first is not None or args.last is not None:
        return day_range(args.first or args.last, args.last or args.first, prop)
    return None, None


def run(args: argparse.Namespace) -> int:
    if args.json and args.csv:
        raise UserError("--json and --csv: give one or the other")
    start_utc, end_utc = _range(args)
    prop = property_of(args)
    with Journal.open_existing(journal_path(args)) as journal:
        if start_utc is None or end_utc is None:
            meters = compute_meters(journal).to_json()
        else:
            # The shift's, the day's or the days' totals (a few stored rows: controller/journal/totals.py).
            from controller.panel.shift_meters import range_meters  # noqa: PLC0415

            meters = {
                **range_meters(journal, start_utc, end_utc).meters.to_json(),
                "range": {
                    "start_utc": start_utc,
                    "end_utc": end_utc,
                    "start": iso_time(start_utc, prop),  # the property's zone, with its offset
                    "end": iso_time(end_utc, prop),
                },
            }
    if args.csv:
        write_meters_csv(meters, sys.stdout, prop.money)
    elif args.json:
        print(json.dumps(meters, indent=2))
    else:
        if start_utc is not None and end_utc is not None:
            print(f"From {time_text(start_utc, prop)} to {time_text(end_utc, prop)}")
        print(render_meters(meters, prop.money))
    return 0 if meters["balanced"] else 1
