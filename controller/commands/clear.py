"""`flushtable clear --reason TEXT --by NAME`: a supervisor clears the faults that hold the table.

Journals ``fault_cleared`` for every latched fault (or only ``--fault ID``), with the supervisor's name
as the source. The panel offers the same behind a supervisor's login. A running daemon reads the
journal for clearings written by other processes every 0.25 s and adopts them (TableDaemon's journal
watch); a stopped one reads them when it starts.
"""

from __future__ import annotations

import argparse
import re

from controller.commands.journal_args import add_journal_arguments, journal_path
from controller.errors import UserError
from controller.journal.entries import FaultCleared
from controller.journal.kinds import FAULT_CLEARED
from controller.journal.recovery import rebuild_state
from controller.journal.store import Journal, PendingEntry

NAME = "clear"
HELP = "clear the latched faults that hold the table (journaled with your name and reason)"
# \Z, not $: `$` also matches before a final line break, which would be journaled and logged with the name.
_OPERATOR_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}\Z")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_journal_arguments(parser)
    parser.add_argument("--reason", required=True, help="why the table may play again")
    parser.add_argument("--by", required=True, metavar="NAME", help="the supervisor clearing it")
    parser.add_argument("--fault", metavar="ID", action="append", help="only this fault (repeatable)")


def run(args: argparse.Namespace) -> int:
    reason = args.reason.strip()
    if not reason:
        raise UserError("--reason: empty; say why the table may play again")
    if not _OPERATOR_NAME.match(args.by):
        raise UserError(f"--by: {args.by!r} is not a name (letters, digits, . _ @ -)")
    with Journal.open_existing(journal_path(args), readonly=False) as journal:
        latched = rebuild_state(journal).latched_faults
        wanted = list(latched) if not args.fault else args.fault
        for fault_id in wanted:
            if fault_id not in latched:
                raise UserError(
                    f"--fault: {fault_id!r} is not a latched fault (latched: {', '.join(latched) or 'none'})"
                )
        if not wanted:
            print("No latched faults: the table is not held.")
            return 0
        journal.append_many(
            PendingEntry(
                FAULT_CLEARED,
                FaultCleared(fault_id=fault_id, by=args.by, reason=reason),
                None,
                f"operator:{args.by}",
            )
            for fault_id in wanted
        )
    for fault_id in wanted:
        fault = latched[fault_id]
        print(f"Cleared {fault_id}: {fault.kind} {fault.detail}".rstrip())
    remaining = len(latched) - len(wanted)
    print("The table is no longer held." if remaining == 0 else f"{remaining} latched fault(s) remain.")
    return 0
