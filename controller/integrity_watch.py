"""The daemon's integrity watch: every so many closed rounds, the integrity check (controller/integrity.py)
over the journal's last rounds, and an ``integrity`` alert on the panel when the verdict turns to alarm.

Split so the daemon's event loop never waits on it: :func:`check_journal` reads the journal through its
own read-only connection and runs the statistics (the daemon runs it in a child process:
:func:`check_journal_in_process`, awaited on the loop);
:func:`alert_for_verdict` is the pure decision (alert once when the verdict becomes an alarm, not again
while it stays one). docs/math.md "The live watch".

The statistics (scipy) load in the child process, never in the daemon.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.journal import entries as e
from controller.journal.kinds import CLOSING_KINDS, STATUS_BY_CLOSING_KIND
from controller.journal.store import Journal
from controller.logs import configure_logging

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from controller.integrity import IntegrityVerdict

DEFAULT_EVERY_ROUNDS = 200  # a check after every 200 closed rounds (RunOptions.integrity_every_rounds)
# The check reads the last 1000 closed rounds: bounded time and memory however long the journal grows
# (about 0.1 s of statistics), and enough rounds for every test (the per-position tests need 260). A fair
# table alarms on at most alpha (1%) of checks. Measured (docs/math.md): a shoe that turns biased after
# 1000 fair rounds is flagged 400 rounds later (spades 1.5x as likely) or 400-600 (1.3x).
WINDOW_ROUNDS = 1000
CHILD_TIMEOUT_S = 600.0  # a check takes seconds; a hung child must not hold the watch forever
ALARM = "alarm"  # IntegrityVerdict.status values: "pass", "alarm", "insufficient data"


def alert_for_verdict(verdict: IntegrityVerdict, previous_status: str | None) -> str | None:
    """The alert's detail when this verdict must raise one: an alarm after a check that was not (or
    after no check yet this run). None otherwise: a pass, too few rounds, or an alarm that stands
    (the supervisor was told once; the panel keeps the alert until it is cleared)."""
    if verdict.status != ALARM or previous_status == ALARM:
        return None
    return f"{verdict.summary} (last {verdict.rounds_checked} settled rounds)"


def integrity_alert_for(
    records: Iterable[Mapping[str, Any]], previous_status: str | None, *, alpha: float | None = None
) -> str | None:
    """The integrity check over recall records, then :func:`alert_for_verdict`."""
    from controller.integrity import DEFAULT_ALPHA, check_records  # noqa: PLC0415 - scipy loads lazily

    verdict = check_records(records, alpha=DEFAULT_ALPHA if alpha is None else alpha)
    return alert_for_verdict(verdict, previous_status)


def window_records(journal: Journal, window_rounds: int) -> list[dict[str, Any]]:
    """The last ``window_rounds`` closed rounds as recall records, with only the fields the integrity
    check reads (round_id, status, round, settlement): the closing entry carries them all, so no
    round's other events are read."""
    records: list[dict[str, Any]] = []
    for stored in journal.last_entries(window_rounds, sorted(CLOSING_KINDS)):
        entry = stored.entry  # typed: the settle input of a settled round is its private part
        if isinstance(entry, e.RoundSettled):
            round_json = entry.private.round if entry.private is not None else {}
        elif isinstance(entry, e.RoundDead | e.RoundVoided):
            round_json = entry.round
        else:
            continue
        status = STATUS_BY_CLOSING_KIND[entry.kind]
        # The public settlement: the check reads each seat's status and wagers, never its hand.
        records.append(
            {
                "round_id": stored.round_id,
                "status": status,
                "round": round_json,
                "settlement": entry.settlement,
            }
        )
    return records


def check_journal(
    path: Path, window_rounds: int = WINDOW_ROUNDS, *, alpha: float | None = None
) -> IntegrityVerdict:
    """The integrity verdict over the journal's last ``window_rounds`` closed rounds, read through a
    separate read-only connection (blocking: the daemon runs it in a child process,
    :func:`check_journal_in_process`)."""
    from controller.integrity import DEFAULT_ALPHA, check_records  # noqa: PLC0415 - scipy loads lazily

    with Journal.open_existing(path, readonly=True) as journal:
        records = window_records(journal, window_rounds)
    return check_records(records, alpha=DEFAULT_ALPHA if alpha is None else alpha)


async def check_journal_in_process(path: Path, window_rounds: int = WINDOW_ROUNDS) -> IntegrityVerdict:
    """:func:`check_journal` in a child Python process, awaited without blocking the event loop.

    The statistics (and scipy's import) hold the GIL for about a second; run in a thread of the daemon
    they stalled its event loop for as long (a device event's commit waited 60-100 ms,
    bench/bench_table.py). A process of its own runs them on another core and leaves the table's loop
    alone. A plain child (``python -P -m controller.integrity_watch``: -P, so no ``controller`` folder
    in the working directory can stand in for the installed one), not multiprocessing: no fork of a
    process with threads and an event loop, no resource-tracker process left behind. The verdict, or
    the error the child met (an unreadable journal), comes back pickled on its standard output and is
    returned or raised here as it was there. Cancelled (the daemon stopping) or over CHILD_TIMEOUT_S,
    the child is killed and reaped."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",
        "-m",
        "controller.integrity_watch",
        str(path),
        str(window_rounds),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(CHILD_TIMEOUT_S):
            out, err = await process.communicate()
    except BaseException:
        if process.returncode is None:
            process.kill()
            await asyncio.shield(process.wait())
        raise
    if process.returncode != 0 or not out:
        last_line = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the integrity check's process exited {process.returncode}: {last_line}")
    outcome = pickle.loads(out)  # trusted: written by our own child process
    if isinstance(outcome, BaseException):
        raise outcome
    verdict: IntegrityVerdict = outcome
    return verdict


def _child_main(arguments: list[str]) -> int:
    """The child of :func:`check_journal_in_process`: the verdict or the error, pickled to stdout."""
    # Standard output carries the pickle: any log line goes to standard error (warnings and worse).
    configure_logging(level="warning", json_lines=True, stream=sys.stderr)
    # The pickle goes to a copy of the original standard output; file descriptor 1 itself now points
    # at standard error, so nothing else written to "stdout" (a stray print) can corrupt it.
    verdict_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    path_text, window_text = arguments
    outcome: object
    try:
        outcome = check_journal(Path(path_text), int(window_text))
    except Exception as error:  # the parent raises it (and logs it; the table goes on)
        outcome = error
    with verdict_out:
        verdict_out.write(pickle.dumps(outcome))
    return 0


__all__ = [
    "DEFAULT_EVERY_ROUNDS",
    "WINDOW_ROUNDS",
    "alert_for_verdict",
    "check_journal",
    "check_journal_in_process",
    "integrity_alert_for",
    "window_records",
]


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
