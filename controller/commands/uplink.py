"""`flushtable uplink`: a table's journal to the floor (docs/floor.md "The uplink").

flushtable uplink status [--journal PATH]      what the floor has acknowledged, and how far behind
flushtable uplink run --config table.toml      publish (the daemon runs this itself with [uplink])
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal

from controller.commands.journal_args import add_journal_arguments, journal_path
from controller.config import load_config
from controller.errors import UserError
from controller.journal.store import Journal
from controller.uplink.uplink import Uplink, read_high_water_mark

NAME = "uplink"
HELP = "the table's journal streamed to the floor: status, run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="uplink_command", metavar="ACTION", required=True)
    status = sub.add_parser("status", help="what the floor has acknowledged of this table's journal")
    add_journal_arguments(status)
    status.add_argument("--json", action="store_true")
    run_parser = sub.add_parser("run", help="publish the journal to the floor until stopped")
    add_journal_arguments(run_parser)
    run_parser.add_argument("--table", default=None, help="the table id (default: the journal's)")


def run(args: argparse.Namespace) -> int:
    if args.uplink_command == "status":
        return _status(args)
    return _run(args)


def _status(args: argparse.Namespace) -> int:
    path = journal_path(args)
    with Journal.open_existing(path) as journal:
        last = journal.last_entry()
        table_id = journal.table_id
    journal_seq = 0 if last is None else last.seq
    mark = read_high_water_mark(path)
    # The configuration given (or the embedded one) says whether this table streams at all: a table
    # without [uplink] has nothing to wait for, and "nothing acknowledged yet" would send people looking.
    configured = load_config(args.config).uplink is not None
    acked = 0 if mark is None else mark.position.entry_seq
    report = {
        "table_id": table_id,
        "journal_seq": journal_seq,
        "acked_seq": acked,
        "behind": journal_seq - acked,
        "stream_seq": None if mark is None else mark.stream_seq,
        "acked_utc": None if mark is None else mark.acked_utc,
        "uplink_configured": configured,
    }
    if args.json:
        print(json.dumps(report))
    elif mark is None and not configured:
        where = args.config or "the embedded configuration"
        print(
            f"table {table_id}: no uplink configured (no [uplink] in {where}): this table sends nothing "
            f"to the floor; journal at entry {journal_seq}"
        )
    elif mark is None:
        print(f"table {table_id}: nothing acknowledged by the floor yet; journal at entry {journal_seq}")
    else:
        print(
            f"table {table_id}: floor acknowledged through entry {acked} (stream seq {mark.stream_seq}) "
            f"at {mark.acked_utc}; journal at entry {journal_seq}; {journal_seq - acked} behind"
        )
    return 0


def _run(args: argparse.Namespace) -> int:
    if not args.config:
        raise UserError("--config: the table's TOML file with an [uplink] table")
    config = load_config(args.config).uplink  # the whole file checked, as `flushtable run` checks it
    if config is None:
        raise UserError(f"{args.config}: no [uplink] table")
    path = journal_path(args)
    with Journal.open_existing(path) as journal:
        table_id = args.table or journal.table_id
    uplink = Uplink(config, path, table_id)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, stop.set)
        await uplink.run(stop)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0
